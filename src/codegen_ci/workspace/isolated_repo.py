"""Repositories of a run's own, so that what one run's commands can see is its own business:

* `sharing` (each attempt of a multi-candidate run): a new, empty repository that reads the
  user's objects through `objects/info/alternates` (never writes them: git puts new objects
  in the repository's own store) and has no ref at all. The attempt's branch, worktree and
  commits live there, so `git worktree list`, `git branch -a`, `git for-each-ref`, `git log
  --all` or `git fsck` from inside one attempt show nothing of another's: the siblings'
  branches and commits are in the siblings' own repositories, which its sandbox hides.
* `base_only` (each eval task): a new repository holding one commit, the task's base, fetched
  shallow (`--depth 1`) from the user's repository: no ref, object or reflog of it reaches
  the historical change the task is made from, and it shares nothing with the user's
  repository, which the task's sandbox hides.

Both remember where the user's installed dependencies are (`codegen.dependencies` in their
config, written by us; confined commands see the config read-only and the git guard puts it
back), so a worktree made from them still gets the checkout's `node_modules` or `.venv`
(workspace/dependency_links.py). Neither has hooks (`--template=`), nor any remote.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.workspace import git

DEPENDENCIES_KEY = "codegen.dependencies"
_SHOWN_KEY = "codegen.shows"


def sharing(source: Path, target: Path) -> Path:
    """A new repository at `target` reading `source`'s objects (alternates), with no ref."""
    common = git.common_dir(source)
    _init(target)
    objects = git.common_dir(target) / "objects"
    (objects / "info").mkdir(parents=True, exist_ok=True)
    (objects / "info" / "alternates").write_text(f"{common / 'objects'}\n", encoding="utf-8")
    if (common / "shallow").is_file():  # a shallow source's edge: its commits lack parents
        (git.common_dir(target) / "shallow").write_bytes((common / "shallow").read_bytes())
    _remember(target, dependencies_of(source), shows=(common / "objects", *shown_by(source)))
    return target


def base_only(source: Path, commit: str, target: Path) -> Path:
    """A new repository at `target` holding `commit` (a commit id of `source`, at no ref's
    tip: eval bases are bare objects) and nothing before or after it."""
    _init(target)
    any_commit = "-c uploadpack.allowAnySHA1InWant=true"
    upload_pack = f"{shlex.quote(git.git_binary())} {any_commit} upload-pack"
    git.git(
        [
            "fetch",
            "-q",
            "--depth=1",
            "--no-tags",
            "--no-write-fetch-head",
            f"--upload-pack={upload_pack}",
            f"file://{git.common_dir(source)}",
            commit,
        ],
        target,
    )
    _remember(target, dependencies_of(source), shows=())
    return target


def _init(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    # no template: no sample hooks, no `info/exclude` of the user's template directory
    git.git(["init", "-q", "--template=", str(target)], target)
    git.trust_directory(target)


def _remember(target: Path, dependencies: Path, *, shows: tuple[Path, ...]) -> None:
    config = git.common_dir(target) / "config"
    git.git(["config", "--file", str(config), DEPENDENCIES_KEY, str(dependencies)], target)
    for place in shows:
        git.git(["config", "--file", str(config), "--add", _SHOWN_KEY, str(place)], target)


# What `_config` last read, by file and key, and the file's state then: a run asks for its
# repository's dependencies before each of its commands, and the file rarely changes.
_READ: dict[tuple[Path, str], tuple[object, list[str]]] = {}


def _config(repo: Path, key: str) -> list[str]:
    try:
        config = git.common_dir(repo) / "config"
    except GitError:
        return []
    state = git.file_state((config,))
    if (seen := _READ.get((config, key))) and seen[0] == state:
        return list(seen[1])
    out = git.git(["config", "--file", str(config), "--get-all", key], repo, check=False)
    values = [line for line in out.splitlines() if line]
    _READ[(config, key)] = (state, values)
    return list(values)


def dependencies_of(repo: Path) -> Path:
    """Where the dependencies of `repo`'s worktrees come from: the user's checkout for a
    repository of ours, else `repo` itself."""
    found = _config(repo, DEPENDENCIES_KEY)
    return Path(found[-1]) if found else repo


def shown_by(repo: Path) -> tuple[Path, ...]:
    """What commands working on `repo` must read besides it (the object store it borrows)."""
    return tuple(Path(p) for p in _config(repo, _SHOWN_KEY))
