"""The test modules a Python test command could not import, read from its output.

pytest (collect-only, or a run its collection errors interrupted) prints one block per module
(`ERROR collecting tests/test_x.py`, or `ImportError while loading conftest '...'`) with the
traceback's frames (`path:line: in func`) and the exception (`E   Error: ...`); unittest prints
one `ERROR: test_x (unittest.loader._FailedTest.test_x)` per module with a Python traceback
(`File "path", line N, in func`) and the exception line. Each becomes an `ImportFailure`: the
test module, the frames from the outermost to where it was raised (a `SyntaxError`'s location
last), and the exception line. Which of them are the environment's and which the model's is
gate/project_imports.py's question; this module only reads.

`collected_modules` says how many test modules the same output shows collected without error
(pytest's listings: `path::test`, `path: N` or `<Module path>`; else an upper bound from the
summary's count of tests), so "every module failed" can be told from "one of many did".
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Frame:
    path: str  # as printed: relative to pytest's rootdir, or absolute
    line: int


@dataclass(frozen=True)
class ImportFailure:
    module: str  # the test module (a path for pytest, a dotted name for unittest) or conftest
    frames: tuple[Frame, ...]  # outermost first; a SyntaxError's location last
    error: str  # the exception line, e.g. "ModuleNotFoundError: No module named 'pkg._version'"
    conftest: bool = False  # pytest could not load a conftest: no module was collected at all


PYTEST_BLOCK = re.compile(
    r"^_+ ERROR collecting (?P<module>\S+) _+$|"
    r"^ImportError while loading conftest '(?P<conf>[^']+)'\.$",
    re.M,
)
PYTEST_END = re.compile(r"^(?:=+ short test summary info =+|_+ ERROR collecting \S+ _+)$", re.M)
PYTEST_FRAME = re.compile(r"^(?P<path>[^\s<][^:]*?\.py):(?P<line>\d+): in ", re.M)
EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Warning)\b.*$")
SYNTAX_AT = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)\s*$', re.M)
CHAINED = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:)$",
    re.M,
)
UNITTEST_BLOCK = re.compile(r"^ERROR: (?P<name>\S+) \(unittest\.loader\._FailedTest[.\w]*\)$", re.M)
UNITTEST_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in ', re.M)
UNITTEST_END = re.compile(r"^(?:={20,}|-{20,})$", re.M)


def import_failures(text: str) -> list[ImportFailure]:
    """Every test module (or conftest) the output says could not be imported, in order."""
    return _pytest(text) + _unittest(text)


def _pytest(text: str) -> list[ImportFailure]:
    found = []
    for match in PYTEST_BLOCK.finditer(text):
        start = match.end()
        end = PYTEST_END.search(text, start)
        block = text[start : end.start() if end else len(text)]
        block = CHAINED.split(block)[-1]  # the exception that ended it
        frames = [Frame(m["path"], int(m["line"])) for m in PYTEST_FRAME.finditer(block)]
        raised = [line[1:].strip() for line in block.splitlines() if line.startswith("E ")]
        frames += _syntax_location("\n".join(raised))
        error = next((line for line in reversed(raised) if EXCEPTION.match(line)), "")
        module = match["module"] or match["conf"]
        found.append(ImportFailure(module, tuple(frames), error, conftest=bool(match["conf"])))
    return found


def _unittest(text: str) -> list[ImportFailure]:
    found = []
    for match in UNITTEST_BLOCK.finditer(text):
        block = text[match.end() :]
        body = block.find("Traceback (most recent call last):")
        if body < 0:
            continue
        block = block[body:]
        if end := list(UNITTEST_END.finditer(block))[:1]:
            block = block[: end[0].start()]
        block = CHAINED.split(block)[-1]
        frames = [Frame(m["path"], int(m["line"])) for m in UNITTEST_FRAME.finditer(block)]
        frames += _syntax_location(block)
        lines = [line for line in block.splitlines() if line and not line[0].isspace()]
        error = next((line for line in reversed(lines) if EXCEPTION.match(line)), "")
        found.append(ImportFailure(match["name"], tuple(frames), error.strip()))
    return found


def _syntax_location(text: str) -> list[Frame]:
    """A SyntaxError's own location (`File "path", line N` with no function): the file that
    could not be compiled, deeper than any frame."""
    found = list(SYNTAX_AT.finditer(text))
    return [Frame(found[-1]["path"], int(found[-1]["line"]))] if found else []


# Test modules collected without error.

LISTED = (
    re.compile(r"^(?P<path>[^\s:]+\.py)::", re.M),  # -q: one id a line
    re.compile(r"^(?P<path>[^\s:]+\.py): \d+$", re.M),  # -qq: a count per module
    re.compile(r"^\s*<Module (?P<path>[^>]+)>$", re.M),  # the tree
)
COLLECTED = re.compile(r"\bcollected (\d+) items?\b|\b(\d+) tests? collected\b")
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)


def collected_modules(text: str, failures: list[ImportFailure]) -> int | None:
    """How many test modules the output shows collected without error: counted from pytest's
    listing of the collected tests, else at most the number of tests it (or unittest) says it
    collected or ran beside the failures; None when it says neither (pytest's quiet output of
    a run its collection errors interrupted, or of a collection that found nothing else)."""
    failed = {f.module for f in failures}
    for pattern in LISTED:
        listed = {m["path"] for m in pattern.finditer(text)} - failed
        if listed:
            return len(listed)
    counts = [int(a or b) for a, b in COLLECTED.findall(text)]
    if counts:
        return max(counts)
    if ran := UNITTEST_RAN.findall(text):
        return max(0, int(ran[-1]) - len(failures))  # each failed module is one "test"
    return None
