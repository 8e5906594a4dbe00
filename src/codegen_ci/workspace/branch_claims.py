"""Which branches of a repository live codegen-ci runs work on, across processes: so that two
`codegen-ci run` processes on one checkout (two tasks at once, a batch beside a run) never
take each other's new branch for a ref a command moved (workspace/git_guard.py).

    <the repository's git common dir>/codegen-ci/claims/     0700, ours, no symlink
      <hash of the branch name>.lock    flock'ed (exclusive) for the life of the process that
                                        runs on the branch; holds the branch's name

A run claims its branch before it makes it (`claim`) and keeps the lock until its process
ends: the kernel drops it when the process dies, however it dies. `live` lists the branches
whose lock some process holds now (this one's included); a claim file nobody holds is a dead
run's, stale, and ignored (and taken over by the next run of that branch).

Why confined commands cannot claim a branch to hide a ref they move: the claims live in the
repository's git directory, which every confined command sees read-only (docs/sandbox.md),
the same place the refs are, and refs are what the guard protects: a command that could write
a claim could write the refs themselves. Without a sandbox (`CODEGEN_SANDBOX=off`) commands
are trusted anyway. Only files of this user's in a folder of this user's, no link, are read.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import threading
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.workspace.private_dir import refusal

FOLDER = ("codegen-ci", "claims")
MAX_NAME_BYTES = 4096

_HELD: dict[tuple[str, str], int] = {}  # (claims folder, branch) -> the locked descriptor
_LOCK = threading.Lock()


class Claimed(InputError):
    """Another live codegen-ci process works on the branch."""


def folder(common: Path) -> Path:
    return common.joinpath(*FOLDER)


def claim(common: Path, branch: str) -> bool:
    """Claim `branch` of the repository whose git common dir is `common`, for the life of
    this process (idempotent). False when no claim can be recorded (the git directory is not
    writable, or the folder is not ours): the run goes on, guarded as before within its own
    process only. Raises `Claimed` when another live process holds the branch."""
    place = folder(common)
    key = (str(place), branch)
    with _LOCK:
        if key in _HELD:
            return True
        try:
            _private(place)
        except OSError:
            return False
        if _refused(place):
            return False
        path = place / _file_name(branch)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(path, flags, 0o600)
        except OSError:
            return False
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            os.close(fd)
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise Claimed(
                    f"branch {branch} is in use by another codegen-ci run on this repository"
                ) from None
            return False
        os.pwrite(fd, branch.encode(), 0)  # a stale file of this name already holds it
        _HELD[key] = fd
        return True


def live(common: Path) -> frozenset[str]:
    """The branches some live process (this one too) has claimed in the repository."""
    place = folder(common)
    try:
        if _refused(place):
            return frozenset()
        entries = list(os.scandir(place))
    except OSError:
        return frozenset()
    names = set()
    for entry in entries:
        if entry.name.endswith(".lock") and (name := _held_name(Path(entry.path))):
            names.add(name)
    return frozenset(names)


def others(common: Path) -> frozenset[str]:
    """The branches other live processes have claimed in the repository (`live` less this
    process's own)."""
    place = str(folder(common))
    with _LOCK:
        own = {branch for where, branch in _HELD if where == place}
    return live(common) - own


def _held_name(path: Path) -> str | None:
    """The branch a claim file names, if a process holds its lock; None if it is stale."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            name = os.pread(fd, MAX_NAME_BYTES, 0).decode("utf-8", "replace")
            return name or None  # held (by us or another run); empty: still being written
        return None  # nobody holds it: a dead run's (closing `fd` drops our shared lock)
    finally:
        os.close(fd)


def _file_name(branch: str) -> str:
    return hashlib.sha256(branch.encode()).hexdigest()[:32] + ".lock"


def _refused(place: Path) -> bool:
    """Whether the claims folder (or the `codegen-ci` folder above it) is not ours: a link,
    not a folder, another user's, writable by others."""
    return any(refusal(p.lstat()) for p in (place.parent, place))


def _private(path: Path) -> None:
    for place in (path.parent, path):
        with contextlib.suppress(FileExistsError):
            place.mkdir(mode=0o700)
