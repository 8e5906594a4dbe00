"""What a command must not change in git, and how it is put back: git's own files and the refs.

Commands (the agent's and the repository's tests, which run code the model wrote) can plant a
hook, a filter driver or a `gitdir:` redirect, or move refs. `Worktree` (worktree.py) puts
back, before each of our own git commands, what they changed.

The files (`GitGuard`): the repository's config and hooks, the linked worktree's `.git` file
and `config.worktree`, and the user's global config: through them a command could make git run
code or work elsewhere.

The refs (`RefGuard`): every ref but the run's own branch, and the HEAD of both the user's
checkout and the run's worktree. A command (the model's, or a test the model wrote) can run git
itself: `git checkout -B other`, `git symbolic-ref HEAD refs/heads/main`, `git update-ref
refs/heads/main ...`. Our own git calls that follow (the commit, the final fold onto the base)
act on HEAD, so a moved HEAD would make them move the user's branch. `Worktree` records the refs
before each command and, before its next git call, puts back whatever the command moved
(`RefGuard.restore`), and reports it. Branches other runs work on (`claim_branch`: concurrent
runs of a batch, and other codegen-ci processes on the same repository, through the claims
on disk of workspace/branch_claims.py) and their remote-tracking refs are not the guard's
business: those runs move them. Such a ref is recorded as `CLAIMED`, and a ref that is
claimed before or after a command is never put back (a run that started, or ended, meanwhile).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from codegen_ci.security import guarded_read
from codegen_ci.workspace import branch_claims, git


class Entry(NamedTuple):
    link: str | None  # symlink target, if the path is a symlink
    content: bytes | None  # a regular file's content (a link's: its target's); None: missing
    exact: bool = True  # False: `content` describes what is there (a FIFO, a huge file)


GitState = dict[Path, Entry]


MAX_GUARDED_BYTES = 4 << 20  # a config, hook or `.git` file; larger is recorded by size


def _entry(path: Path) -> Entry:
    """What `path` is now, read without blocking or reading without bound (a command may
    have swapped in a link, a FIFO or a huge sparse file): a link's target (and the bytes of
    the regular file it names), a regular file's bytes, or a description of anything else."""
    try:
        info = path.lstat()
    except OSError:
        return Entry(None, None)
    if stat.S_ISLNK(info.st_mode):  # a dotfiles link (`~/.gitconfig`): its target counts too
        return Entry(str(path.readlink()), _target_bytes(path))
    if not stat.S_ISREG(info.st_mode):
        return Entry(None, f"not a regular file ({stat.filemode(info.st_mode)})".encode(), False)
    try:
        return Entry(
            None, guarded_read.read_bytes(path.parent, path.name, max_bytes=MAX_GUARDED_BYTES)
        )
    except guarded_read.Refused as exc:
        what = f"unread: {exc.reason}; {info.st_size} bytes, {info.st_mtime_ns}"
        return Entry(None, what.encode(), False)


def _target_bytes(link: Path) -> bytes | None:
    """The bytes of the regular file a link points to, opened without blocking (a FIFO there)
    and read only up to the cap; None for anything else."""
    try:
        fd = os.open(link, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GUARDED_BYTES:
            return None
        return os.read(fd, MAX_GUARDED_BYTES + 1)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class GitGuard:
    """The files through which a command could make git run code or work elsewhere: the
    repository's config and hooks, the linked worktree's `.git` file and `config.worktree`, and
    the user's global config. The paths are fixed when the guard is made (a tampered `.git` file
    must not move them); `state` also lists every entry that is in the hooks directory now."""

    files: tuple[Path, ...]
    hooks: Path

    @classmethod
    def for_worktree(cls, worktree: Path) -> GitGuard:
        common = git.common_dir(worktree)
        private = Path(git.git(["rev-parse", "--absolute-git-dir"], worktree).strip())
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        files = (
            worktree / ".git",
            common / "config",
            common / "info" / "attributes",
            private / "config.worktree",
            Path.home() / ".gitconfig",
            xdg / "git" / "config",
        )
        return cls(files, common / "hooks")

    def state(self) -> GitState:
        hooks = sorted(self.hooks.iterdir()) if self.hooks.is_dir() else []
        return {path: _entry(path) for path in (*self.files, *hooks)}

    def restore(self, trusted: GitState) -> list[Path]:
        """Put every guarded entry back as in `trusted` (new ones removed); returns what changed."""
        now = self.state()
        missing = Entry(None, None)
        changed = []
        for path in sorted({*trusted, *now}):
            want, have = trusted.get(path, missing), now.get(path, missing)
            if want == have:
                continue
            changed.append(path)
            if not want.exact:
                continue  # reported, but there is nothing exact to put back
            # a link, folder, FIFO or device where a file was: removed first, never written through
            if want.link != have.link or want.content is None or not have.exact:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                if want.link is not None:
                    path.symlink_to(want.link)
            if want.content is not None:
                path.write_bytes(want.content)  # through a restored symlink: the user's file
        return changed


_OWN_BRANCHES: set[str] = set()
_LOCK = threading.Lock()

RefState = dict[str, str]  # "refs/..." -> commit id, or "ref: <target>" for a symbolic ref
OWN = "own "  # the run's own branch may move, but must stay a plain branch: "own <commit>"
CLAIMED = "claimed"  # another run's branch (or its remote-tracking ref): never put back


def claim_branch(name: str, common: Path | None = None) -> None:
    """`name` is a branch a run of this process works on (before it is created); `common`:
    the repository's git common dir, where the claim is recorded for other processes too
    (branch_claims.py). Raises `branch_claims.Claimed` when another live process holds it."""
    with _LOCK:
        _OWN_BRANCHES.add(name)
    if common is not None:
        branch_claims.claim(common, name)


def _claimed(ref: str, claimed: frozenset[str]) -> bool:
    if ref.startswith("refs/heads/"):
        return ref.removeprefix("refs/heads/") in claimed
    if ref.startswith("refs/remotes/"):
        remote_branch = ref.removeprefix("refs/remotes/").partition("/")[2]
        return remote_branch in claimed
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
        """Every ref (other runs' as `CLAIMED`), and both HEADs (the user's checkout's and the
        worktree's). Read from the files when refs are stored as files: a `git for-each-ref`
        per check would double what the guard costs a command."""
        raw = _ref_files(*self.git_dirs)
        if raw is None:  # reftable: ask git
            out = git.git(
                ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)"], self.worktree
            )
            raw = {}
            for line in out.splitlines():
                name, commit, symref = line.split("\0")
                raw[name] = f"ref: {symref}" if symref else commit
        with _LOCK:
            claimed = frozenset(_OWN_BRANCHES) | branch_claims.live(self.git_dirs[0])
        refs: RefState = {}
        for name, value in raw.items():
            if name == f"refs/heads/{self.branch}":
                refs[name] = value if value.startswith("ref: ") else OWN + value
            else:
                refs[name] = CLAIMED if _claimed(name, claimed) else value
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
            if CLAIMED in (want, have):
                continue  # another run's branch (it made, moved or let go of it meanwhile)
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
