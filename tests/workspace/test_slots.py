"""A stable, private worktree place per repository (workspace/slots.py): the same path from
one run to the next, a different one for runs at the same time, refused (and the run falls
back to a fresh temporary folder) where someone else could have made or swapped it, and an
interrupted run's worktree left for `resume`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sample_repo import SampleRepo

from codegen_ci.errors import InputError
from codegen_ci.workspace import slots
from codegen_ci.workspace.worktree import attach_worktree


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home)}


def test_a_run_after_another_gets_the_same_path(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    assert first is not None
    tree = first.tree
    first.release()
    second = slots.take(sample_repo.path, environ)
    assert second is not None
    assert second.tree == tree
    key = slots.repo_key(sample_repo.path)
    assert tree == Path(environ["HOME"], ".cache/codegen-ci", key, "slot-0", "repo")
    for folder in (tree.parent, tree.parent.parent, tree.parent.parent.parent):
        assert folder.stat().st_mode & 0o777 == 0o700
    second.release()


def test_runs_at_the_same_time_get_different_slots(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    second = slots.take(sample_repo.path, environ)
    assert first is not None and second is not None
    assert (first.index, second.index) == (0, 1)
    assert first.tree != second.tree
    first.release()
    second.release()


def test_xdg_cache_home_and_the_variable_choose_the_folder(
    sample_repo: SampleRepo, environ: dict[str, str], tmp_path: Path
) -> None:
    xdg = {**environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert slots.cache_folder(xdg) == tmp_path / "xdg" / "codegen-ci"
    chosen = {**xdg, slots.CACHE_ENV: str(tmp_path / "mine")}
    assert slots.cache_folder(chosen) == tmp_path / "mine"
    assert slots.take(sample_repo.path, {**environ, slots.CACHE_ENV: "off"}) is None


def test_a_planted_symlink_is_refused(
    sample_repo: SampleRepo,
    environ: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = Path(environ["HOME"], ".cache/codegen-ci", slots.repo_key(sample_repo.path))
    folder.mkdir(parents=True, mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "slot-0").symlink_to(elsewhere)

    assert slots.take(sample_repo.path, environ) is None

    assert "is a symlink" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user owns needs root")
def test_a_folder_another_user_owns_is_refused(
    sample_repo: SampleRepo, environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = Path(environ["HOME"], ".cache/codegen-ci")
    base.mkdir(parents=True, mode=0o700)
    os.chown(base, 65534, 65534)

    assert slots.take(sample_repo.path, environ) is None

    assert "belongs to uid 65534" in capsys.readouterr().err


def test_an_interrupted_runs_worktree_is_left_for_resume(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    assert first is not None
    attach_worktree(sample_repo.path, first.tree, commit="HEAD")  # its run stopped here
    left = first.tree
    first.release()

    second = slots.take(sample_repo.path, environ)

    assert second is not None and second.index == 1  # the next one
    assert (left / "README.md").is_file()
    second.release()
    held = slots.hold(sample_repo.path, left, environ)  # its resume
    assert held is not None
    with pytest.raises(InputError, match="another codegen-ci process"):
        slots.hold(sample_repo.path, left, environ)
    held.release()


def test_what_a_killed_run_left_besides_is_removed_before_reuse(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    assert first is not None
    base_tree = first.tree.with_name(first.tree.name + "-base")
    attach_worktree(sample_repo.path, base_tree, commit="HEAD")  # registered in git
    (first.path / "debris").write_text("x")
    first.release()

    second = slots.take(sample_repo.path, environ)

    assert second is not None and second.index == 0
    assert list(second.path.iterdir()) == []
    listing = sample_repo.git("worktree", "list", "--porcelain")
    assert str(base_tree) not in listing
    second.release()


def test_resume_holds_its_slot_and_clears_the_rest(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    assert first is not None
    attach_worktree(sample_repo.path, first.tree, commit="HEAD")
    proof = first.tree.with_name(first.tree.name + "-proof")
    attach_worktree(sample_repo.path, proof, commit="HEAD")
    first.release()

    held = slots.hold(sample_repo.path, first.tree, environ)

    assert held is not None and held.tree == first.tree
    assert sorted(p.name for p in held.path.iterdir()) == [first.tree.name]
    held.release()
    assert slots.hold(sample_repo.path, Path("/tmp/codegen-ci-x/run"), environ) is None


def test_resume_refuses_a_slot_others_may_write(
    sample_repo: SampleRepo, environ: dict[str, str]
) -> None:
    first = slots.take(sample_repo.path, environ)
    assert first is not None
    attach_worktree(sample_repo.path, first.tree, commit="HEAD")
    first.release()
    first.folder.chmod(0o777)  # someone else could swap the slot (and the worktree) in it

    with pytest.raises(InputError, match="can be written by its group or others"):
        slots.hold(sample_repo.path, first.tree, environ)
    assert slots.take(sample_repo.path, environ) is None  # a new run: the fallback


def test_the_folder_of_a_checkout_that_is_gone_goes_with_its_kept_caches(
    sample_repo: SampleRepo, environ: dict[str, str], tmp_path: Path
) -> None:
    """A temporary clone run on, then deleted: its folder (its kept jest cache, up to 1 GiB,
    and its slots) was never removed. The next run, on any repository, removes it, as a
    slot's worktree whose repository is gone is; a checkout still there, or one a run holds
    a slot of, keeps its folder."""
    clones = {}
    for name in ("gone", "held", "kept"):
        clones[name] = tmp_path / name
        subprocess.run(["git", "init", "-q", str(clones[name])], check=True)
        slot = slots.take(clones[name], environ)
        assert slot is not None
        (slot.caches / "jest_0").mkdir(parents=True)
        (slot.caches / "jest_0" / "haste-map-1").write_text("x")
        if name == "held":
            held = slot
        else:
            slot.release()
    folders = {name: held.folder.with_name(slots.repo_key(path)) for name, path in clones.items()}
    shutil.rmtree(clones["gone"])
    shutil.rmtree(clones["held"])

    slot = slots.take(sample_repo.path, environ)

    assert slot is not None
    assert not folders["gone"].exists()
    assert (folders["held"] / "caches" / "jest_0" / "haste-map-1").is_file()
    assert (folders["kept"] / "caches" / "jest_0" / "haste-map-1").is_file()
    assert sorted(p.name for p in slot.folder.parent.iterdir()) == sorted(
        [slot.folder.name, folders["held"].name, folders["kept"].name]
    )
    slot.release()
    held.release()
