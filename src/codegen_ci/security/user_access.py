"""Who user mode's sandbox user is, and what it may touch (security/user_mode.py sets it up).

The sandbox user writes only what it owns: `hand_over` makes the worktree and the scratch
directory its own before each command (links themselves, never their targets), so files the
tool wrote meanwhile stay editable. `PermissionHold` takes the "other" permission bits (and
the group's, when the group is the sandbox user's) off the places bubblewrap would hide, for
the run, and gives them back at its end; a directory a worktree lies in keeps only its search
bit (entered, never listed). Owners never change, so the runner's user keeps its access even if
a run is killed before the bits come back. Holds are counted per path across the process
(`codegen-ci batch` runs several at once): the bits come back when the last run ends.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

JAIL = Path(__file__).with_name("user_jail.py")
OTHER = stat.S_IRWXO
GROUP = stat.S_IRWXG
_HELD: dict[Path, list[int]] = {}  # path -> [its mode before the first hold, holds]
_HELD_LOCK = threading.Lock()


class UserModeError(Exception):
    """User mode cannot be set up here; the message says why."""


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int
    name: str

    def jail(self, *, network: bool) -> list[str]:
        """The argv prefix that runs a command as this user (user_jail.py)."""
        return [sys.executable, "-I", "-S", str(JAIL), str(self.uid), str(self.gid),
                "net" if network else "nonet", "--"]  # fmt: skip


@dataclass
class PermissionHold:
    """Permission bits taken away for one run, and given back by `restore`."""

    user: SandboxUser
    taken: list[Path] = field(default_factory=list)

    def hide(self, path: Path, *, keep_search: bool = False) -> None:
        try:
            info = path.lstat()
        except OSError:
            return
        if stat.S_ISLNK(info.st_mode):
            return  # the paths given are resolved; a link here is not ours to follow
        if info.st_uid == self.user.uid:
            raise UserModeError(f"the sandbox user ({self.user.name}) owns {path}")
        mask = OTHER | (GROUP if info.st_gid == self.user.gid else 0)
        if keep_search and stat.S_ISDIR(info.st_mode):
            mask &= ~(stat.S_IXOTH | (stat.S_IXGRP if mask & GROUP else 0))
        mode = stat.S_IMODE(info.st_mode)
        with _HELD_LOCK:
            held = _HELD.setdefault(path, [mode, 0])
            if mode & mask:
                path.chmod(mode & ~mask)
            held[1] += 1
            self.taken.append(path)

    def restore(self) -> None:
        with _HELD_LOCK:
            while self.taken:
                path = self.taken.pop()
                held = _HELD[path]
                held[1] -= 1
                if held[1] == 0:
                    del _HELD[path]
                    with contextlib.suppress(OSError):
                        path.chmod(held[0])


def check_not_owned(user: SandboxUser, paths: Iterable[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            if path.lstat().st_uid == user.uid:
                raise UserModeError(f"the sandbox user ({user.name}) owns {path}")


def hand_over(user: SandboxUser, top: Path, *, keep: Sequence[Path] = ()) -> None:
    """Make everything under `top` the sandbox user's (links themselves, never their targets),
    except the paths in `keep` (the worktree's `.git` file stays the tool's). No command of
    the user runs meanwhile, so nothing can be swapped under the walk."""
    kept, ids = {str(p) for p in keep}, (user.uid, user.gid)
    _own(str(top), ids)
    folders = [str(top)]
    while folders:  # os.scandir: a third of the time a walk with Path objects takes
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.path not in kept:
                    _own(entry.path, ids)
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)


def _own(path: str, ids: tuple[int, int]) -> None:
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if (info.st_uid, info.st_gid) != ids:
            os.lchown(path, *ids)


def git_config(home: Path, original: str | None) -> str:
    """The global git config of commands in user mode: `safe.directory` (the repository
    belongs to another uid), and the one the environment named if the user may read it."""
    text = "[safe]\n\tdirectory = *\n"
    if original and _others_can_read(Path(original)):
        text = f"[include]\n\tpath = {original}\n{text}"
    path = home / ".gitconfig"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _others_can_read(path: Path) -> bool:
    try:
        if not path.stat().st_mode & stat.S_IROTH:
            return False
        return all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents)
    except OSError:
        return False


def make_reachable(folder: Path) -> None:
    """Let the sandbox user enter (not list) a directory of the tool's own."""
    mode = stat.S_IMODE(folder.stat().st_mode)
    folder.chmod(mode | stat.S_IXOTH)
