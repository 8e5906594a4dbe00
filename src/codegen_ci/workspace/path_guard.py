"""The path guard: every path the model gives is resolved inside the worktree, or refused.

Absolute paths, `~`, NUL bytes, symlink loops, anything resolving outside the repository and
git internals are refused; with `for_write`, so are the run's protected paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from codegen_ci.workspace.globs import matches


class PathRefused(Exception):
    """A path the model may not use; the message says why."""


def resolve_path(
    tree: Path, user_path: str, protected: Sequence[str], *, for_write: bool = False
) -> Path:
    """Resolve a path the model gave, inside `tree`, or raise `PathRefused`."""
    raw = user_path.strip() or "."
    if "\x00" in raw:
        raise PathRefused("path contains a NUL byte")
    if PurePosixPath(raw).is_absolute() or raw.startswith("~"):
        raise PathRefused("absolute paths are not allowed; use a path relative to the repo")
    root = tree.resolve()
    try:
        candidate = (root / raw).resolve()
    except RuntimeError:  # a loop of symlinks
        raise PathRefused("path is a loop of symlinks") from None
    if candidate != root and root not in candidate.parents:
        raise PathRefused("path resolves outside the repository")
    rel = candidate.relative_to(root).as_posix() if candidate != root else "."
    if rel == ".git" or rel.startswith(".git/"):
        raise PathRefused("git internals are off limits")
    if for_write and matches(rel, protected):
        raise PathRefused("protected path: changes here are not allowed")
    return candidate
