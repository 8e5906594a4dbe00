"""Folders of the run's own outside the repository (worktrees, the base-commit worktree): a
fresh one per run, made by `tempfile.mkdtemp` (a new unpredictable name, created by us, 0700),
never a fixed path under the shared temporary directory. Another user cannot have made it
first, nor swap what is inside. A folder we reuse (a resumed run's) is checked first: ours,
and no write bit for group or others; anything else is refused with a clear message.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from codegen_ci.errors import InputError

PREFIX = "codegen-ci-"


def private_folder(base: Path | None = None, *, name: str = "") -> Path:
    """A new private folder (0700, ours) under `base` (default: the temporary directory)."""
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    prefix = f"{PREFIX}{_safe(name)}-" if name else PREFIX
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    check_private(folder)
    return folder


def check_private(folder: Path) -> None:
    """Refuse `folder` unless it is a real directory (no symlink), owned by us, that neither
    group nor others may write. (A search bit for others is fine: user mode's sandbox user
    enters the folder to reach its worktree, never lists or writes it.)"""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        raise InputError(f"{folder} does not exist") from None
    except OSError as exc:
        raise InputError(f"{folder} cannot be checked: {exc.strerror}") from None
    why = refusal(info)
    if why:
        raise InputError(
            f"{folder} {why}; codegen-ci works only in folders of its own that no one else may "
            "write (another user may have made or swapped it). Remove it, or start a new run."
        )


def refusal(info: os.stat_result) -> str:
    """Why a folder with this `lstat` is not private to us ("" if it is)."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.geteuid():
        return f"belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by its group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:40]
