"""`search_files`, bounded: it reads regular files only and stops at a time limit.

The pattern runs on the `regex` package (PyPI, by the author of the standard library's `re`
engine revisions; `re`-compatible syntax by default) because its searches take a `timeout`:
a pattern that backtracks catastrophically (`(a|aa)+$` over a long line) ends with an error
the model can read instead of holding the run forever; `re` cannot be interrupted at all.
(`regex` counts that timeout in CPU time: on a crowded machine the wall time is longer, but
bounded all the same.)
Special files (FIFOs, sockets, devices) are never opened: a named pipe would block the open,
a device could stream without end. The walk itself has the same deadline.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import regex

from codegen_ci.agent.file_tools import SKIP_DIRS

SEARCH_TIME_LIMIT_S = 5.0
MAX_FILE_BYTES = 2_000_000
MAX_SEARCH_HITS = 80


class SearchError(Exception):
    """The search could not run or finish; the message is for the model."""


def search(root: Path, pattern: str, relative: Callable[[Path], str],
           time_limit: float = SEARCH_TIME_LIMIT_S) -> str:  # fmt: skip
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise SearchError(f"invalid regular expression: {exc}") from None
    deadline = time.monotonic() + time_limit
    hits: list[str] = []
    for file in _files(root, deadline):
        try:
            rel = relative(file)
        except ValueError:
            continue  # a symlink out of the repository
        text = _read_regular(file)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                found = compiled.search(line, timeout=left)
            except TimeoutError:
                raise SearchError("\n".join([
                    f"search stopped after {time_limit:g}s (at {rel}:{number}); "
                    f"{len(hits)} matches so far. The pattern may backtrack catastrophically "
                    "(nested repetition such as (a+)+); simplify it or search a smaller path",
                    *hits,
                ])) from None  # fmt: skip
            if found:
                hits.append(f"{rel}:{number}: {line[:200]}")
                if len(hits) >= MAX_SEARCH_HITS:
                    return "\n".join([*hits, f"[stopped after {MAX_SEARCH_HITS} matches]"])
    return "\n".join(hits) or "No matches."


def _files(root: Path, deadline: float) -> Iterator[Path]:
    if not root.is_dir():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        if time.monotonic() > deadline:
            return  # the line loop reports the timeout
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        yield from (Path(dirpath) / n for n in sorted(filenames))


def _read_regular(path: Path) -> str | None:
    """The text of a regular file of sane size; None for anything else (never opened)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        # O_NONBLOCK: were it swapped for a FIFO after the check, the open still returns.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        data = f.read(MAX_FILE_BYTES + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
