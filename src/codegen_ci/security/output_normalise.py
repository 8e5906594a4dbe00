"""Normalising command output so it reads (and compares) the same on every run: `strip_ansi`
drops terminal escapes, `strip_nondeterminism` replaces paths, times, durations and other
per-run detail with placeholders.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


_TMP = re.compile(
    r"(?:/private)?(?:/var/folders/[^/\s]+/[^/\s]+/T|/var/tmp|/tmp)"
    r"(?:/pytest-of-[^/\s]+/pytest-(?:\d+|current)|/[^/\s'\":]+)"
)
_VOLATILE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(rootdir|cachedir): .*$", re.MULTILINE), r"\1: <dir>"),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        "<timestamp>",
    ),
    (re.compile(r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\d:])"), "<time>"),
    (
        re.compile(
            r"(?<![\w.])\d+(?:\.\d+)?\s?"
            r"(?:ns|us|µs|ms|s|secs?|seconds?|milliseconds?|mins?|minutes?)(?!\w)"
        ),
        "<duration>",
    ),
    # pytest adds the clock form to a session of a minute or more: "in 61.2s (0:01:01)"
    (re.compile(r"<duration> \(<time>\)"), "<duration>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<addr>"),
    (re.compile(r"(randomly-seed=)\d+"), r"\1<seed>"),
    # pytest centres its section titles: a shorter duration widens the padding.
    (re.compile(r"^([=_-])\1{2,}( .+ )\1{2,}$", re.MULTILINE), r"\1\1\1\2\1\1\1"),
]


def strip_nondeterminism(text: str, *, roots: Sequence[str] = ()) -> str:
    """Make identical failures render identically across rounds and machines.

    `roots[0]` becomes `<repo>`, further roots `<root1>`, `<root2>`...; temporary paths
    become `<tmp>`; timestamps, clock times, durations, hex addresses and pytest's
    `rootdir:` line are replaced by placeholders, and the padding of pytest's centred
    `=== title ===` lines is cut to three characters.
    """
    names: dict[str, str] = {}
    for i, root in enumerate(roots):
        for variant in (root, os.path.realpath(root)):
            names.setdefault(variant.rstrip("/"), "<repo>" if i == 0 else f"<root{i}>")
    for root in sorted((r for r in names if r), key=len, reverse=True):
        text = re.sub(re.escape(root) + r"(?![\w.-])", names[root], text)
    text = _TMP.sub("<tmp>", text)
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text
