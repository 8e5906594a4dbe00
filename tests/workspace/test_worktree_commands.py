"""Worktrees of one repository added and removed at once (a batch's runs, an eval's check, a
run's baseline and proof trees): git deletes the repository's empty `worktrees/` folder when the
last worktree goes, and an `add` in that moment fails ("could not create directory of
'.git/worktrees/...'"). So no two `git worktree` commands of this process overlap.

git is the real one behind a wrapper (`CODEGEN_GIT`) that logs when each `git worktree`
command starts and ends and holds it open a moment: the window git leaves is a few
microseconds, the wrapper's is long enough that overlapping commands always show."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sample_repo import SampleRepo

from codegen_ci.workspace import git
from codegen_ci.workspace.worktree import Worktree, attach_worktree, create_worktree

WRAPPER = """#!/bin/sh
case " $* " in
  *" worktree "*)
    echo "start $$" >> {log}
    sleep 0.3
    {git} "$@"; rc=$?
    echo "end $$" >> {log}
    exit $rc;;
esac
exec {git} "$@"
"""


@pytest.fixture
def logged_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "worktree-commands.log"
    wrapper = tmp_path / "git"
    wrapper.write_text(WRAPPER.format(log=log, git=real))
    wrapper.chmod(0o755)
    monkeypatch.setenv(git.GIT_ENV, str(wrapper))
    git.git_binary.cache_clear()
    yield log
    git.git_binary.cache_clear()


def test_a_worktree_added_while_the_last_one_is_removed_waits_for_it(
    sample_repo: SampleRepo, tmp_path: Path, logged_git: Path
) -> None:
    parent = tmp_path / "worktrees"
    parent.mkdir(mode=0o700)
    leaving = create_worktree(
        sample_repo.path, parent / "leaving", branch="codegen/leaving", base="HEAD", protected=()
    )
    logged_git.unlink()
    together = threading.Barrier(2)
    errors: list[BaseException] = []
    added: list[Path] = []

    def remove(tree: Worktree) -> None:
        together.wait()
        tree.remove()

    def add() -> None:
        together.wait()
        added.append(attach_worktree(sample_repo.path, parent / "arriving", commit="HEAD")[0])

    threads = [
        threading.Thread(target=_catching(errors, remove, leaving)),
        threading.Thread(target=_catching(errors, add)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert added == [parent / "arriving"] and (parent / "arriving" / ".git").is_file()
    assert not (parent / "leaving").exists()
    # one `git worktree` command at a time: each ends before the next starts
    marks = [line.split()[0] for line in logged_git.read_text().splitlines()]
    assert marks == ["start", "end"] * (len(marks) // 2) and len(marks) >= 4


def _catching(
    errors: list[BaseException], func: Callable[..., object], *args: object
) -> Callable[[], None]:
    def run() -> None:
        try:
            func(*args)
        except Exception as exc:  # the test reports it
            errors.append(exc)

    return run
