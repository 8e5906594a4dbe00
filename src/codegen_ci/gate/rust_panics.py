"""Where Rust tests panicked, read from plain `cargo test` output (libtest writes no JUnit; with
cargo-nextest the JUnit cases carry the same lines, gate/junit/cases.py). Counts are not made
up from this text: without JUnit they stay unknown; only the locations are given to the model.

libtest prints, per failing test, `thread 'tests::adds' panicked at src/lib.rs:12:5:` (Rust
1.73 and later) or `thread 'tests::adds' panicked at 'message', src/lib.rs:12:5` (earlier,
the message possibly over several lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PANIC = re.compile(
    r"^thread '([^'\n]{1,300})' panicked at (?:'(?:[^']|'(?!, )){0,4000}', )?"
    r"([^\s:'\"]{1,300}\.rs):(\d+):(\d+)",
    re.MULTILINE,
)
MAX_PANICS = 20


@dataclass(frozen=True)
class Panic:
    test: str  # the thread's name: libtest names it after the test (`tests::adds`)
    file: str
    line: int


def panic_locations(output: str) -> list[Panic]:
    """The panics in `output`, in order, each test once (its first panic)."""
    seen: dict[str, Panic] = {}
    for match in _PANIC.finditer(output):
        test, file, line = match[1], match[2], int(match[3])
        if test not in seen and len(seen) < MAX_PANICS:
            seen[test] = Panic(test, file.removeprefix("./"), line)
    return list(seen.values())
