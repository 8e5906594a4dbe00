"""The refs a command must not move: every ref but the run's own branch, and the HEAD of both
the user's checkout and the run's worktree.

A command (the model's, or a test the model wrote) can run git itself: `git checkout -B
other`, `git symbolic-ref HEAD refs/heads/main`, `git update-ref refs/heads/main ...`. Our
own git calls that follow (the commit, the final fold onto the base) act on HEAD, so a moved
HEAD would make them move the user's branch. `Worktree` records the refs before each command
and, before its next git call, puts back whatever the command moved (`RefGuard.restore`),
and reports it. Branches this process runs on (`claim_branch`: concurrent runs of a batch)
and their remote-tracking refs are not the guard's business: those runs move them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.workspace import git

_OWN_BRANCHES: set[str] = set()
_LOCK = threading.Lock()

RefState = dict[str, str]  # "refs/..." -> commit id, or "ref: <target>" for a symbolic ref
OWN = "own "  # the run's own branch may move, but must stay a plain branch: "own <commit>"


def claim_branch(name: str) -> None:
    """`name` is a branch a run of this process works on (before it is created)."""
    with _LOCK:
        _OWN_BRANCHES.add(name)


def _ours(ref: str) -> bool:
    with _LOCK:
        owned = set(_OWN_BRANCHES)
    if ref.startswith("refs/heads/"):
        return ref.removeprefix("refs/heads/") in owned
    if ref.startswith("refs/remotes/"):
        remote_branch = ref.removeprefix("refs/remotes/").partition("/")[2]
        return remote_branch in owned
    return False


@dataclass(frozen=True)
class RefGuard:
    worktree: Path
    branch: str
    git_dirs: tuple[Path, ...]  # the common one, and the worktree's own (per-worktree refs)

    @classmethod
    def for_worktree(cls, worktree: Path, branch: str) -> RefGuard:
        common = git.common_dir(worktree)
        private = Path(git.git(["rev-parse", "--absolute-git-dir"], worktree).strip())
        return cls(worktree, branch, (common, private))

    def state(self) -> RefState:
        """Every ref but ours (and other runs'), and both HEADs (the user's checkout's and the
        worktree's). Read from the files when refs are stored as files: a `git for-each-ref`
        per check would double what the guard costs a command."""
        raw = _ref_files(*self.git_dirs)
        if raw is None:  # reftable: ask git
            out = git.git(["for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)"],
                          self.worktree)  # fmt: skip
            raw = {}
            for line in out.splitlines():
                name, commit, symref = line.split("\0")
                raw[name] = f"ref: {symref}" if symref else commit
        refs: RefState = {}
        for name, value in raw.items():
            if name == f"refs/heads/{self.branch}":
                refs[name] = value if value.startswith("ref: ") else OWN + value
            elif not _ours(name):
                refs[name] = value
        head_files = [d / "HEAD" for d in dict.fromkeys(self.git_dirs)]
        for head in head_files:
            refs[str(head)] = _read(head)
        return refs

    def restore(self, trusted: RefState) -> list[str]:
        """Put back every ref and HEAD that differs from `trusted`; returns their names."""
        now = self.state()
        moved = []
        for name in sorted({*trusted, *now}):
            want, have = trusted.get(name), now.get(name)
            if want == have or ((want or "").startswith(OWN) and (have or "").startswith(OWN)):
                continue  # the run's own branch moved: its commits are folded in at the end
            moved.append(name if name.startswith("refs/") else _head_name(name))
            if not name.startswith("refs/"):
                Path(name).write_text(want or "", encoding="utf-8")
            elif want and want.startswith(OWN):  # deleted or made symbolic: plain again
                git.git(["update-ref", "--no-deref", name, want.removeprefix(OWN)], self.worktree)
            elif want is None:
                git.git(["update-ref", "--no-deref", "-d", name], self.worktree)
            elif want.startswith("ref: "):
                git.git(["symbolic-ref", name, want.removeprefix("ref: ")], self.worktree)
            else:
                git.git(["update-ref", "--no-deref", name, want], self.worktree)
        return moved


def _ref_files(common: Path, private: Path) -> dict[str, str] | None:
    """Refs as git's files backend stores them: `packed-refs`, overridden by loose files under
    `refs/` (the worktree's own `refs/` holds its per-worktree refs). None for reftable."""
    if (common / "reftable").exists():
        return None
    refs: dict[str, str] = {}
    for line in _read(common / "packed-refs").splitlines():
        if line and line[0] not in "#^":
            commit, _, name = line.partition(" ")
            refs[name] = commit
    for base in dict.fromkeys((common, private)):
        for dirpath, _, files in os.walk(base / "refs"):
            for file in files:
                path = Path(dirpath) / file
                if not file.endswith(".lock"):
                    refs[path.relative_to(base).as_posix()] = _read(path).strip()
    return refs


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _head_name(path: str) -> str:
    return "HEAD (the worktree's)" if "/worktrees/" in path else "HEAD (your checkout's)"
