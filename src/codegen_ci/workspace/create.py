"""Making worktrees: the agent's, on a new branch, and the baseline's, detached at the base.

Both live outside the repository's `.git` directory (see `worktrees_root`): jest, vitest and
every tool built on watchman or haste maps ignore each path containing `/.git/`, so a
worktree under `.git/` has no tests for them. They live in a fresh private folder of the run's
own (workspace/private_dir.py), never at a path another user could guess and make first.
Dependencies installed in the checkout are linked in (workspace/dependency_links.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.workspace import git
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.git_env import trust_directory
from codegen_ci.workspace.git_refs import claim_branch
from codegen_ci.workspace.private_dir import check_private, private_folder
from codegen_ci.workspace.worktree import Worktree


def worktrees_root(repo: Path, environ: Mapping[str, str] | None = None) -> Path:
    """A new private folder (mkdtemp: 0700, ours, an unpredictable name) for one run's
    worktrees: under `$RUNNER_TEMP` in GitHub Actions, else under the temporary directory;
    never under `.git` and never inside the checkout (nothing of ours may show up in its
    `git status`). Its path is recorded in run.json (`resume` finds the worktree there)."""
    env = os.environ if environ is None else environ
    runner_temp = env.get("RUNNER_TEMP")
    base = Path(runner_temp) if env.get("GITHUB_ACTIONS") == "true" and runner_temp else None
    return private_folder(base, name=repo.resolve().name)


def create_worktree(
    repo: Path,
    path: Path,
    *,
    branch: str,
    base: str,
    protected: Sequence[str],
    reset_branch: bool = False,
    keep_branch: bool = False,
) -> Worktree:
    """A new worktree at `path` on a new `branch` from `base` (a commit-ish); `reset_branch`:
    an existing `branch` moved to `base`; `keep_branch`: an existing one checked out as it is
    (`resume`: it holds the run's commit), `base` still the run's base commit."""
    base_commit = git.rev_parse(repo, base)
    git.check_branch_name(repo, branch)
    claim_branch(branch)  # before it exists: a concurrent run's ref guard must leave it be
    check_private(path.parent)
    trust_directory(path)
    if keep_branch:
        git.git(["worktree", "add", "-q", str(path), branch], repo)
    else:
        flag = "-B" if reset_branch else "-b"
        git.git(["worktree", "add", "-q", flag, branch, str(path), base_commit], repo)
    links = link_dependencies(repo, path)
    return Worktree(repo, path, branch, base_commit, tuple(protected), links=links)


def attach_worktree(repo: Path, path: Path, *, commit: str) -> tuple[Path, tuple[str, ...]]:
    """A detached worktree at `commit` (used for baseline runs) and its dependency links."""
    check_private(path.parent)
    trust_directory(path)
    git.git(["worktree", "add", "-q", "--detach", str(path), commit], repo)
    return path, link_dependencies(repo, path)


def unique_branch(repo: Path, wanted: str) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`... when a local branch of that name exists."""
    name, n = wanted, 1
    while git.branch_exists(repo, name):
        n += 1
        name = f"{wanted}-{n}"
    return name
