"""A new worktree's files that are byte for byte the checkout's get the checkout's times (so a
copied `target/` stays fresh for cargo); every other file keeps the fresh time, and no link is
followed or touched (workspace/file_times.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from codegen_ci.workspace.file_times import copy_times
from codegen_ci.workspace.worktree import attach_worktree

OLD = 1_000_000_000  # 2001: long before the worktree is made
OLD_NS = OLD * 1_000_000_000


def sh(args: list[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    for name in ("src/lib.rs", "src/edited.rs", "src/trusted.rs", "Cargo.toml"):
        (repo / name).write_text(f"// {name}\n")
    (repo / "target.txt").write_text("the link's target\n")
    (repo / "link").symlink_to("target.txt")
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], repo)
    return repo


def attach(repo: Path, tmp_path: Path) -> Path:
    private = tmp_path / "trees"
    private.mkdir(mode=0o700, exist_ok=True)
    tree, _ = attach_worktree(repo, private / "t", commit="HEAD")
    return tree


def age(repo: Path) -> None:
    for path in [*repo.glob("**/*"), *(repo / "src").iterdir()]:
        if ".git" not in path.parts:
            os.utime(path, (OLD, OLD), follow_symlinks=False)


def test_identical_files_get_the_checkouts_times_and_changed_ones_stay_fresh(
    tmp_path: Path,
) -> None:
    repo = checkout(tmp_path)
    (repo / "src/edited.rs").write_text("// the user's uncommitted edit\n")
    age(repo)

    tree = attach(repo, tmp_path)

    assert (tree / "src/lib.rs").stat().st_mtime_ns == OLD_NS
    assert (tree / "Cargo.toml").stat().st_mtime_ns == OLD_NS
    assert (tree / "src/edited.rs").read_text() == "// src/edited.rs\n"
    assert (tree / "src/edited.rs").stat().st_mtime > OLD + 1000  # differs: git's fresh time


def test_no_link_is_touched_or_followed(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    age(repo)
    os.utime(repo / "target.txt", (OLD + 5, OLD + 5))  # the link's target, not the link's own

    tree = attach(repo, tmp_path)

    assert (tree / "link").is_symlink()
    assert (tree / "link").lstat().st_mtime > OLD + 1000  # the link itself: left as git made it
    assert (tree / "target.txt").stat().st_mtime_ns == (OLD + 5) * 1_000_000_000


def test_a_file_git_takes_on_trust_is_compared_by_its_bytes(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    sh(["git", "update-index", "--assume-unchanged", "src/trusted.rs"], repo)
    (repo / "src/trusted.rs").write_text("// src/TRUSTED.rs\n")  # same size, git never looks
    age(repo)

    tree = attach(repo, tmp_path)

    assert (tree / "src/trusted.rs").stat().st_mtime > OLD + 1000
    assert (tree / "src/lib.rs").stat().st_mtime_ns == OLD_NS


def test_nothing_happens_when_the_checkout_does_not_know_the_commit(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    (tmp_path / "other").mkdir()
    other = checkout(tmp_path / "other")
    sh(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "2", "--allow-empty"],
        other,
    )
    age(repo)
    tree = attach(other, tmp_path)

    assert copy_times(repo, tree) == 0
    assert (tree / "src/lib.rs").stat().st_mtime > OLD + 1000
