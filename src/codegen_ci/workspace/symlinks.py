"""Symlinks the agent may not leave behind.

The path guard already refuses reads and writes through a link that leads out of the
repository; the link itself must not be committed either: checked out elsewhere it would point
at the reader's `/etc`, home directory or git internals. A link is refused when its target is
absolute, or when it resolves (following every link on the way) outside the repository or into
`.git`. A relative link that stays inside the repository is an ordinary file to git and stays.
Links whose own target text leaves go first (`leaves`); a link that only led out through one of
them is judged after they are restored (`escapes`).
"""

from __future__ import annotations

import os
from pathlib import Path

REASON = "symlink pointing outside the repository; restored"


def leaves(root: Path, rel: str) -> bool:
    """Whether the symlink `rel` names, by its own target text, a place out of the repository."""
    target = (root / rel).readlink()
    if target.is_absolute():
        return True
    lexical = os.path.normpath(Path(rel).parent / target)  # by text: no link is followed
    return lexical in ("..", ".git") or lexical.startswith(("../", ".git/"))


def escapes(root: Path, rel: str) -> bool:
    """Whether `rel` (relative to `root`) is a symlink the commit may not carry."""
    link = root / rel
    if not link.is_symlink():
        return False
    if link.readlink().is_absolute():
        return True
    try:
        top, real = root.resolve(), link.resolve()  # follows every link on the way
    except (OSError, RuntimeError):  # a loop of links: nothing worth keeping
        return True
    if real != top and top not in real.parents:
        return True
    inside = real.relative_to(top).as_posix()
    return inside == ".git" or inside.startswith(".git/")


def link_digest(path: Path) -> str:
    """What a snapshot records for a symlink: its target text, never the file it leads to."""
    return "symlink:" + str(path.readlink())
