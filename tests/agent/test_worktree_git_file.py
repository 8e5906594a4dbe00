"""A linked worktree's `.git` is a file naming the host's git directory (a path on the runner):
the model's listing and search never show it; the repository's own files still are."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codegen_ci.agent.tools import list_tree, search


def linked_worktree(tmp_path: Path) -> Path:
    repo, tree = tmp_path / "repo", tmp_path / "tree"
    repo.mkdir()

    def git(*args: str, cwd: Path = repo) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    (repo / "notes.txt").write_text("the gitdir word in a tracked file\n")
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "notes.txt")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one")
    git("worktree", "add", "-q", str(tree), "-b", "work")
    return tree


def test_listing_and_search_leave_out_a_worktrees_git_file(tmp_path: Path) -> None:
    tree = linked_worktree(tmp_path)
    # the file is there, and names a path on the host
    assert (tree / ".git").is_file()
    assert (tree / ".git").read_text().startswith(f"gitdir: {tmp_path}")

    assert list_tree(tree, tree, 100) == ["notes.txt"]
    hits = search(tree, tree, "gitdir")
    assert hits == "notes.txt:1: the gitdir word in a tracked file"
    assert str(tmp_path) not in search(tree, tree, r"\w+$")
