"""`search_files`, bounded: it reads regular files only and stops at a time limit.

The pattern runs on the `regex` package (PyPI, by the author of the standard library's `re`
engine revisions; `re`-compatible syntax by default) because its searches take a `timeout`:
a pattern that backtracks catastrophically (`(a|aa)+$` over a long line) ends with an error
the model can read instead of holding the run forever; `re` cannot be interrupted at all.
(`regex` counts that timeout in CPU time: on a crowded machine the wall time is longer, but
bounded all the same.)
Files are found and read through the guarded reader (security/guarded_read.py): no symlink
is followed at any level, and special files (FIFOs, sockets, devices) are never read: a named
pipe would block, a device could stream without end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import regex

from codegen_ci.agent.file_tools import SKIP_DIRS
from codegen_ci.security import guarded_read

SEARCH_TIME_LIMIT_S = 5.0
MAX_FILE_BYTES = 2_000_000
MAX_SEARCH_HITS = 80


class SearchError(Exception):
    """The search could not run or finish; the message is for the model."""


def search(repo: Path, start: Path, pattern: str,
           time_limit: float = SEARCH_TIME_LIMIT_S) -> str:  # fmt: skip
    """Lines matching `pattern` in the files under `start` (a path inside the worktree
    `repo`), read through the guarded reader: no symlink followed, regular files only."""
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise SearchError(f"invalid regular expression: {exc}") from None
    deadline = time.monotonic() + time_limit
    hits: list[str] = []
    for rel, text in _texts(repo.resolve(), start, deadline):
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


def _texts(root: Path, start: Path, deadline: float) -> Iterator[tuple[str, str]]:
    """(path, text) of each UTF-8 regular file of sane size under `start`, in name order."""
    try:
        rel = start.relative_to(root).as_posix()
    except ValueError:
        return  # outside the repository
    rel = "" if rel == "." else rel
    if rel == "" or guarded_read.is_dir(root, rel):
        infos = guarded_read.walk(root, rel, skip=frozenset(SKIP_DIRS))
        files = sorted(i.rel for i in infos if i.size <= MAX_FILE_BYTES)
    else:
        files = [rel]
    for name in files:
        if time.monotonic() > deadline:
            return  # the line loop reports the timeout
        try:
            data = guarded_read.read_bytes(root, name, max_bytes=MAX_FILE_BYTES)
        except guarded_read.Refused:
            continue  # a link, a FIFO, too large: never followed nor opened
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue
