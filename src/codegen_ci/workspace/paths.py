"""Paths in the worktree: the globs that name tests and tool artifacts, the guard every path the
model gives goes through, and the symlinks the agent may not leave behind.

Globs follow gitignore-like rules (`matches`): `**/` spans zero or more directories, `*` stays
within one, and a pattern without a slash matches the file name at any depth.

The path guard (`resolve_path`): every path the model gives is resolved inside the worktree, or
refused. Absolute paths, `~`, NUL bytes, symlink loops, anything resolving outside the
repository and git internals are refused; with `for_write`, so are the run's protected paths.

Symlinks: the path guard already refuses reads and writes through a link that leads out of the
repository; the link itself must not be committed either: checked out elsewhere it would point
at the reader's `/etc`, home directory or git internals. A link is refused when its target is
absolute, or when it resolves (following every link on the way) outside the repository or into
`.git`. A relative link that stays inside the repository is an ordinary file to git and stays.
Links whose own target text leaves go first (`leaves`); a link that only led out through one of
them is judged after they are restored (`escapes`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from codegen_ci import runners

# Caches and reports tools write without being asked; never part of a change (a test runner's
# own are in its module: runners/, `ARTIFACT_GLOBS`).
ARTIFACT_GLOBS = (
    *runners.artifact_globs(),
    "**/__pycache__/**",
    "*.pyc",
    ".mypy_cache/**",
    ".ruff_cache/**",
    ".coverage",
    ".coverage.*",
    "coverage.xml",
    "htmlcov/**",
    ".tox/**",
    ".nox/**",
    "*.egg-info/**",
    "node_modules/**",
    ".hypothesis/**",
    "junit*.xml",
    ".cache/**",
    # Go, Node, Rust, JVM toolchains: coverage profiles, caches, build output, dependencies.
    "lcov.info",
    "**/node_modules/**",
    ".nyc_output/**",
    ".parcel-cache/**",
    ".turbo/**",
    ".eslintcache",
    "*.tsbuildinfo",
    ".gradle/**",
    ".next/**",
    ".nuxt/**",
    ".vite/**",
    "test-results/**",
)
# Build output: generated when the base commit has no such file (a rebuilt `dist/` that the
# repository commits, as JavaScript actions do, is the change).
GENERATED_GLOBS = ("dist/**", "build/**", "out/**", "target/**", "coverage/**", "lib-cov/**")


def matches(path: str, globs: Iterable[str]) -> bool:
    """Glob match with gitignore-like rules: `**/` spans zero or more directories, `*` stays
    within one, and a pattern without a slash matches the file name at any depth."""
    name = path.rsplit("/", 1)[-1]
    for pattern in globs:
        regex = _glob_regex(pattern)
        if regex.match(path) or ("/" not in pattern and regex.match(name)):
            return True
    return False


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


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


LINK_REFUSED = "symlink pointing outside the repository; restored"


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
