"""Symlinks the agent may not leave behind.

The path guard already refuses reads and writes through a link that leads out of the
repository; the link itself must not be committed either: checked out elsewhere it would point
at the reader's `/etc`, home directory or git internals. A link is refused when its target is
absolute, or when it resolves (following every link on the way) outside the repository or into
`.git`. A relative link that stays inside the repository is an ordinary file to git and stays.
"""

from __future__ import annotations

from pathlib import Path

REASON = "symlink pointing outside the repository; restored"


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
