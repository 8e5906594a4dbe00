"""Only the change is judged: before each validation round, what the commit will not hold
and `setup` did not make is removed from the worktree.

A file the model left that git ignores (a `.pyc` of other code with a forged header, a
compiled extension module, a `conftest.py` or `.pth` under an ignored folder), or an
untracked file the commit leaves out (a command's artifact), is read by the repository's
commands as if it were code: it could make broken source pass a round, and the commit would
hold the broken source without it. So each round starts from the commit-to-be plus what
`setup` made:

- `setup_state` records, right after `setup` passed (the pre-flight's, on the untouched
  code), every untracked and ignored file with its identity (type, size, times, inode; the
  change time cannot be set back). The dependency folders copied from the checkout and what
  `setup` installed are in it.
- `clear` removes every untracked or ignored entry that the commit will not hold and that is
  not in that record as it was (new since, or rewritten), and puts back tracked files the
  commit will not hold (a command's edit or deletion of a tracked file) as the base commit
  has them; each file of the change gets the time now, so no cache keyed on a file's time
  and size (a `.pyc`, cargo's fingerprints) takes it for other code. Caches the rounds' own
  commands write (`__pycache__`, `.pytest_cache`, `target/`)
  are made again from the change in every round. Without a record (a resumed run, which
  has no pre-flight) everything but the dependency copies goes, and `setup` runs again.

Removal opens each parent without following a symlink (security/guarded_read.py), so a link
planted in the path cannot point it elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from codegen_ci.security import guarded_read
from codegen_ci.workspace.dependency_links import is_linked
from codegen_ci.workspace.worktree import Worktree

Identity = tuple[int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode
SECOND_NS = 1_000_000_000


@dataclass(frozen=True)
class SetupState:
    files: dict[str, Identity]  # untracked and ignored entries as `setup` left them
    taken_ns: int  # when (wall clock)


def setup_state(worktree: Worktree) -> SetupState:
    """The untracked and ignored entries as `setup` left them."""
    files: dict[str, Identity] = {}
    for rel in worktree.untracked_entries():
        if (ident := _identity(worktree, rel)) is not None:
            files[rel] = ident
    return SetupState(files, time.time_ns())


@dataclass
class Cleared:
    removed: list[str] = field(default_factory=list)  # removed, or put back as in the base
    stuck: list[str] = field(default_factory=list)  # could not be removed: the round is void


def clear(worktree: Worktree, kept: SetupState | None) -> Cleared:
    """Remove what the commit will not hold and `kept` does not list as it is now (None:
    keep only the dependency copies)."""
    committed = set(worktree.agent_changes())
    folders = _folders(kept.files if kept else {})
    cleared = Cleared()
    for rel in worktree.changed_paths():
        if rel not in committed and worktree.in_base(rel):
            worktree.restore(rel)  # a command's edit or deletion of a tracked file
            cleared.removed.append(rel)
    for rel in worktree.untracked_entries():
        # the change's own (a nested repository is listed as `dir/` by both): finalize refuses
        # what the commit may not hold, and says so
        if rel in committed or rel.rstrip("/") in committed:
            continue
        if kept is None:
            if is_linked(rel.rstrip("/"), worktree.links):
                continue
        elif kept.files.get(rel) is not None and kept.files.get(rel) == _identity(worktree, rel):
            continue
        (cleared.removed if _remove(worktree, rel, folders) else cleared.stuck).append(rel)
    # a whole second after setup ended: newer than any source a kept cache was built from
    stamp = max(time.time_ns(), (kept.taken_ns // SECOND_NS + 1) * SECOND_NS if kept else 0)
    for rel in committed:
        _touch(worktree, rel, stamp)
    return cleared


def _touch(worktree: Worktree, rel: str, stamp_ns: int) -> None:
    """A file of the change gets the time `stamp_ns`: a cache that trusts a file's time and
    size (a `.pyc`'s header, cargo's fingerprints, make) cannot take it for the code it was
    built from, whatever time the model gave it."""
    parts = PurePosixPath(rel).parts
    if not parts:
        return
    root = guarded_read.open_root(worktree.path)
    try:
        parent = guarded_read.open_beneath(root, "/".join(parts[:-1]), directory=True)
    except guarded_read.Refused:
        return
    finally:
        os.close(root)
    try:
        with contextlib.suppress(OSError):  # deleted by the change
            os.utime(parts[-1], ns=(stamp_ns, stamp_ns), dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)


def _identity(worktree: Worktree, rel: str) -> Identity | None:
    try:
        info = os.lstat(worktree.path / rel.rstrip("/"))
    except OSError:
        return None
    return (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _remove(worktree: Worktree, rel: str, folders: set[str]) -> bool:
    """Remove `rel` (a file, a link, or a nested repository's folder) without following a
    symlink on the way, giving back the owner's write permission on the folders a command
    took it from; then its parent folders that are left empty, but not `folders` (those that
    held what setup made). False when it could not be removed."""
    parts = PurePosixPath(rel.rstrip("/")).parts
    if not parts:
        return False
    root = guarded_read.open_root(worktree.path)
    try:
        for attempt in (1, 2):
            try:
                _remove_at(root, parts)
                break
            except FileNotFoundError:
                break
            except (OSError, guarded_read.Refused):
                if attempt == 2:
                    return False
                _writable(root, parts)
        _remove_empty_parents(root, parts[:-1], folders)
    finally:
        os.close(root)
    return True


def _remove_at(root: int, parts: tuple[str, ...]) -> None:
    parent = guarded_read.open_beneath(root, "/".join(parts[:-1]), directory=True)
    try:
        info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(parts[-1], dir_fd=parent)
        else:
            os.unlink(parts[-1], dir_fd=parent)
    finally:
        os.close(parent)


def _writable(root: int, parts: tuple[str, ...]) -> None:
    """Owner read, write and search on every folder from the worktree down to `parts` and,
    when it is a folder, every folder below it; never through a symlink (a folder is opened
    with O_NOFOLLOW, and only what `lstat` calls a folder is changed)."""
    pending = []
    for depth in range(len(parts)):
        with contextlib.suppress(OSError, guarded_read.Refused):
            above = guarded_read.open_beneath(root, "/".join(parts[:depth]), directory=True)
            try:
                info = os.stat(parts[depth], dir_fd=above, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    os.chmod(parts[depth], 0o700 | stat.S_IMODE(info.st_mode), dir_fd=above)
            finally:
                os.close(above)
    pending.append("/".join(parts))
    while pending:
        current = pending.pop()
        try:
            fd = guarded_read.open_beneath(root, current, directory=True)
        except guarded_read.Refused:
            continue
        try:
            for entry in os.scandir(fd):
                if entry.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.chmod(entry.name, 0o700, dir_fd=fd)
                    pending.append(f"{current}/{entry.name}")
        finally:
            os.close(fd)


def _remove_empty_parents(root: int, parents: tuple[str, ...], keep: set[str]) -> None:
    """An emptied folder goes too (an empty folder is a namespace package to Python)."""
    for depth in range(len(parents), 0, -1):
        folder = "/".join(parents[:depth])
        if folder in keep:
            return
        with contextlib.suppress(OSError, guarded_read.Refused):
            above = guarded_read.open_beneath(root, "/".join(parents[: depth - 1]), directory=True)
            try:
                os.rmdir(parents[depth - 1], dir_fd=above)
            except OSError:
                return  # not empty: neither is any folder above it
            finally:
                os.close(above)


def _folders(kept: dict[str, Identity]) -> set[str]:
    folders: set[str] = set()
    for rel in kept:
        parts = PurePosixPath(rel.rstrip("/")).parts
        folders.update("/".join(parts[:n]) for n in range(1, len(parts)))
    return folders
