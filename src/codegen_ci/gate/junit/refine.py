"""A JUnit report's cases made precise by the runner that wrote them (`runners.refine`: Go's
failure messages and places, subtests folded into their parents, the tests a panic kept from
running), and the repository as a runner is shown it (`guarded_tree`).

The tree is the one the tests ran in, shaped by the model: a runner reads it only through the
guarded reader (security/guarded_read.py: no symlink followed, regular files only, size
checked first), so a `go.mod` that is a link to /dev/zero, or a FIFO, cannot hang the tool or
fill its memory.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from codegen_ci import runners
from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import Untrusted

MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a source file a runner reads


def guarded_tree(root: Path) -> runners.Tree:
    """`root` as a runner reads it: through the guarded reader."""

    def read(rel: str) -> str | None:
        try:
            return guarded_read.read_text(root, rel, max_bytes=MAX_SOURCE_BYTES)
        except guarded_read.Refused:
            return None

    def glob(pattern: str) -> list[str]:
        try:
            return guarded_read.glob(root, pattern)
        except guarded_read.Refused:  # a pattern that leaves the tree (`..`)
            return []

    return runners.Tree(root, read, glob)


def refined(cases: list[JUnitCase], root: Path | None) -> list[JUnitCase]:
    """`cases` (one report's) as the first runner with an answer makes them precise (a case
    it leaves out is gone; its message, file and line as it says); as they are otherwise.
    `root`: the repository the tests ran in, None when not known."""
    shown = tuple(case.shown_to_runners() for case in cases)
    answer = runners.refine(shown, guarded_tree(root) if root is not None else None)
    if answer is None:
        return cases
    out: list[JUnitCase] = []
    for case, before, after in zip(cases, shown, answer, strict=True):
        if after is None:
            continue
        if after != before:  # the repository's test output still: `Untrusted`
            message = case.message if after.message == before.message else Untrusted(after.message)
            case = replace(case, message=message, file=after.file, line=after.line)
        out.append(case)
    return out
