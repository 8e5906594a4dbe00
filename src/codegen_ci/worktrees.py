"""Making worktrees: the agent's, on a new branch, and the baseline's, detached at the base."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codegen_ci import git
from codegen_ci.git_refs import claim_branch
from codegen_ci.workspace import Worktree


def create_worktree(
    repo: Path,
    path: Path,
    *,
    branch: str,
    base: str,
    protected: Sequence[str],
    reset_branch: bool = False,
) -> Worktree:
    """A new worktree at `path` on a new `branch` from `base` (a commit-ish)."""
    base_commit = git.rev_parse(repo, base)
    git.check_branch_name(repo, branch)
    claim_branch(branch)  # before it exists: a concurrent run's ref guard must leave it be
    path.parent.mkdir(parents=True, exist_ok=True)
    flag = "-B" if reset_branch else "-b"
    git.git(["worktree", "add", "-q", flag, branch, str(path), base_commit], repo)
    return Worktree(repo, path, branch, base_commit, tuple(protected))


def attach_worktree(repo: Path, path: Path, *, commit: str) -> Path:
    """A detached worktree at `commit` (used for baseline runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    git.git(["worktree", "add", "-q", "--detach", str(path), commit], repo)
    return path


def unique_branch(repo: Path, wanted: str) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`... when a local branch of that name exists."""
    name, n = wanted, 1
    while git.branch_exists(repo, name):
        n += 1
        name = f"{wanted}-{n}"
    return name
