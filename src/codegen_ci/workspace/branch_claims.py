"""Which branches of a repository live codegen-ci runs work on, across processes: so that two
`codegen-ci run` processes on one checkout (two tasks at once, a batch beside a run) never
take each other's new branch for a ref a command moved (workspace/git_guard.py).

    <the repository's git common dir>/codegen-ci/claims/     0700, ours, no symlink
      <hash of the branch name>.lock    flock'ed (exclusive) for the life of the process that
                                        runs on the branch; holds the branch's name

A run claims its branch before it makes it (`claim`) and keeps the lock until its process
ends: the kernel drops it when the process dies, however it dies. `live` lists the branches
whose lock some process holds now (this one's included); a claim file nobody holds is a dead
run's, stale, and ignored (taken over by the next run of that branch, or removed when a run
next claims a branch: each file is removed under its own lock, and a claimer checks that the
file it locked is still the one at its path).

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
import time
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.workspace.private_dir import refusal

FOLDER = ("codegen-ci", "claims")
MAX_NAME_BYTES = 4096
TRIES = 5

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
        fd = _locked(path, branch)
        if fd is None:
            return False
        os.pwrite(fd, branch.encode(), 0)  # a stale file of this name already holds it
        _HELD[key] = fd
    _sweep(place)
    return True


def _locked(path: Path, branch: str) -> int | None:
    """`path` opened (made if need be) and locked, still at `path`; None where it cannot be.
    A lock refused may be a sweeper's, for a moment (`_sweep`): tried again before it counts
    as another run's."""
    for attempt in range(TRIES):
        fd = _open(path, os.O_RDWR | os.O_CREAT)
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            if attempt == TRIES - 1:
                raise Claimed(
                    f"branch {branch} is in use by another codegen-ci run on this repository"
                ) from None
            time.sleep(0.02)
            continue
        if _same_file(fd, path):
            return fd
        os.close(fd)  # swept away meanwhile: take the new one
    return None


def _sweep(place: Path) -> None:
    """Remove the claim files no process holds (dead runs'), each under its lock so that no
    run can be taking it meanwhile: the folder keeps only live claims."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(place):
            path = Path(entry.path)
            if not entry.name.endswith(".lock") or (fd := _open(path, os.O_RDONLY)) is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # held: a live run's
            try:
                if _same_file(fd, path):
                    path.unlink()
            finally:
                os.close(fd)


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
    fd = _open(path, os.O_RDONLY)
    if fd is None:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            name = os.pread(fd, MAX_NAME_BYTES, 0).decode("utf-8", "replace")
            return name or None  # held (by us or another run); empty: still being written
        return None  # nobody holds it: a dead run's (closing `fd` drops our shared lock)
    finally:
        os.close(fd)


def _open(path: Path, flags: int) -> int | None:
    """A claim file: this user's regular file, no link followed; None for anything else."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        return None
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        there = path.lstat()
    except OSError:
        return False
    here = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


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
