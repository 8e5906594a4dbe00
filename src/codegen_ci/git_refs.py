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

import threading
from dataclasses import dataclass
from pathlib import Path

from codegen_ci import git

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
    head_files: tuple[Path, ...]  # the user's checkout's HEAD and the worktree's own

    @classmethod
    def for_worktree(cls, worktree: Path, branch: str) -> RefGuard:
        common = git.common_dir(worktree)
        private = Path(git.git(["rev-parse", "--absolute-git-dir"], worktree).strip())
        return cls(worktree, branch, (common / "HEAD", private / "HEAD"))

    def state(self) -> RefState:
        out = git.git(
            ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)"], self.worktree
        )
        refs: RefState = {}
        for line in out.splitlines():
            name, commit, symref = line.split("\0")
            own = name == f"refs/heads/{self.branch}"
            if own:
                refs[name] = f"ref: {symref}" if symref else OWN + commit
            elif not _ours(name):
                refs[name] = f"ref: {symref}" if symref else commit
        for head in self.head_files:
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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _head_name(path: str) -> str:
    return "HEAD (the worktree's)" if "/worktrees/" in path else "HEAD (your checkout's)"
