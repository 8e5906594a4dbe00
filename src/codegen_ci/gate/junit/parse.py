"""JUnit XML reports -> test cases and failures, for the reflection step and `codegen-ci junit`,
and their rendering for people (`render_text`) and for `codegen-ci junit --json` (`summary_json`).

Reports come from the repository under test, so they are untrusted input: they are streamed
through defusedxml (no DTDs, no entities, no external references; an entity bomb or an XXE
file is refused at its `<!DOCTYPE>`), capped in size, and every way a file can be broken
becomes a `problem` string ("path: message"), never an exception.

How a `<testcase>` is judged, and where its failure happened, is in gate/junit/cases.py.

junitparser supplies the element model (tags, attribute parsing). Its own loaders are not
used: they read the file with an unhardened parser and build the whole tree, while a report
can be tens of megabytes, so the file is streamed here and each finished `<testcase>` is
handed to junitparser and then dropped from memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_etree
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from junitparser import TestCase, TestSuite

from codegen_ci.gate.junit.cases import (
    AnonymousCases,
    JUnitCase,
    case_of,
    local_tag,
    suite_cases,
)
from codegen_ci.gate.junit.refine import refined
from codegen_ci.report import Failure as ReportFailure
from codegen_ci.report import TestTotals
from codegen_ci.security.inert_text import for_terminal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "JUnitCase",
    "JUnitResult",
    "parse_file",
    "parse_files",
    "render_text",
    "summary_json",
]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_ROOT_TAGS = frozenset({"testsuites", "testsuite"})


@dataclass
class JUnitResult:
    cases: list[JUnitCase] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def totals(self) -> TestTotals:
        counts = {"passed": 0, "failure": 0, "error": 0, "skipped": 0}
        for case in self.cases:
            counts[case.outcome] += 1
        return TestTotals(
            total=len(self.cases),
            passed=counts["passed"],
            failed=counts["failure"],
            errors=counts["error"],
            skipped=counts["skipped"],
        )

    def failing(self) -> list[JUnitCase]:
        """Cases that failed or errored, in document order."""
        return [case for case in self.cases if case.outcome in ("failure", "error")]

    def failures(self) -> list[ReportFailure]:
        return [
            ReportFailure(
                id=case.id,  # the repository's tests named it
                message=case.message.raw_for("record"),  # read back as an `Untrusted`
                file=case.file,
                line=case.line,
                kind="error" if case.outcome == "error" else "failure",
            )
            for case in self.failing()
        ]

    def merge(self, other: JUnitResult) -> JUnitResult:
        return JUnitResult(
            cases=self.cases + other.cases,
            problems=self.problems + other.problems,
            files=self.files + other.files,
        )


class _TooLarge(Exception):
    pass


class _NotJUnit(Exception):
    pass


class _CappedReader:
    """A binary reader that refuses to deliver more than `limit` bytes (files can grow, and
    special files have no meaningful size, so checking `stat()` alone is not enough)."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._left = limit
        self.blank = True  # nothing but whitespace so far: an "empty" report

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.blank = self.blank and not data.strip()
        self._left -= len(data)
        if self._left < 0:
            raise _TooLarge
        return data


def parse_file(
    path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, root: Path | None = None
) -> JUnitResult:
    """Parse one report. A file that cannot be read or parsed yields no cases and a problem.
    With `root` (the repository the tests ran in), locations are made relative to it; the
    runner that wrote the cases makes them precise (gate/junit/refine.py: Go's, against its
    sources)."""
    name = str(path)
    try:
        with path.open("rb") as raw:
            reader = _CappedReader(raw, max_bytes)
            try:
                cases = list(_iter_cases(reader, root))
            except Exception as exc:  # every parser failure becomes a value, not a traceback
                blank = reader.blank and not isinstance(exc, _TooLarge)
                problem = "file is empty" if blank else _describe(exc, max_bytes)
                return JUnitResult(problems=[f"{name}: {problem}"], files=[name])
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return JUnitResult(problems=[f"{name}: cannot read file: {reason}"], files=[name])
    return JUnitResult(cases=refined(cases, root), files=[name])


def parse_files(
    paths: Iterable[Path], *, max_bytes: int = DEFAULT_MAX_BYTES, root: Path | None = None
) -> JUnitResult:
    result = JUnitResult()
    for path in paths:
        one = parse_file(path, max_bytes=max_bytes, root=root)
        result.cases.extend(one.cases)
        result.problems.extend(one.problems)
        result.files.extend(one.files)
    return result


def _describe(exc: Exception, max_bytes: int) -> str:
    if isinstance(exc, _TooLarge):
        return f"file is larger than the limit of {max_bytes} bytes"
    if isinstance(exc, _NotJUnit):
        return str(exc)
    if isinstance(exc, DTDForbidden | EntitiesForbidden):
        return "refused: the file declares a DTD or entities, which a JUnit report never needs"
    if isinstance(exc, ExternalReferenceForbidden):
        return "refused: the file references an external entity"
    if isinstance(exc, ParseError):
        line, column = exc.position
        if str(exc).startswith("no element found"):
            return f"XML ends early (truncated file?) at line {line}, column {column}"
        return f"not well-formed XML: {exc}"
    return f"cannot parse: {type(exc).__name__}: {exc}"


def _iter_cases(source: _CappedReader, repo: Path | None) -> Iterator[JUnitCase]:
    """Cases in document order. Only "end" events are asked for: each one costs a Python
    round trip, and on a 50 MB report that is most of the parsing time."""
    events: Any = safe_etree.iterparse(
        source, events=("end",), forbid_dtd=True, forbid_entities=True
    )
    root: Element | None = None
    anonymous = AnonymousCases()
    for _, root in events:
        tag = local_tag(root.tag)
        if tag == TestCase._tag:
            case = case_of(root, repo)
            if not anonymous.hold(root, case):
                yield case
            root.clear()  # keeps memory flat on large reports
        elif tag == TestSuite._tag:
            anonymous.close_suite(root)
            yield from suite_cases(root, repo)
    yield from anonymous.release()
    # The root closes last; a non-JUnit file is rejected as a whole, so rejecting it only
    # here costs nothing but time on a file that was wrong anyway.
    if root is None or local_tag(root.tag) not in _ROOT_TAGS:
        found = "nothing" if root is None else f"<{local_tag(root.tag)}>"
        raise _NotJUnit(
            f"not a JUnit report: the root element is {found}, expected <testsuites> or <testsuite>"
        )


# JUnit results for people and for `codegen-ci junit --json`.


def summary_json(result: JUnitResult) -> dict[str, Any]:
    """The CONTRACT shape of `codegen-ci junit --json`, plus the list of parse problems."""
    totals = result.totals()
    return {
        **totals.model_dump(),
        "failures": [
            {
                "id": c.id.raw_for("record"),
                "message": c.message.raw_for("record"),
                "file": c.file,
                "line": c.line,
            }
            for c in result.failing()
        ],
        "problems": list(result.problems),
    }


def render_text(result: JUnitResult, *, max_failures: int = 20) -> str:
    """What a person (or the reflection prompt) reads: totals, the first `max_failures`
    failing cases with the tail of their details, then the files that could not be parsed."""
    t = result.totals()
    lines = [
        f"{t.total} tests: {t.passed} passed, {t.failed} failed, {t.errors} errors, "
        f"{t.skipped} skipped ({len(result.files)} file{'s' if len(result.files) != 1 else ''})"
    ]
    failing = result.failing()
    for case in failing[:max_failures]:  # the repository's text: no control reaches the terminal
        where = f" ({case.file}:{case.line})" if case.file and case.line else ""
        name = for_terminal(case.id, one_line=True)
        said = for_terminal(case.message, one_line=True)
        head = f"{case.outcome.upper()} {name}{for_terminal(where)}: {said}".rstrip()
        lines.append(for_terminal(head, one_line=True))
        tail = _tail(case.details.raw_for("shown"))
        lines.extend(f"    {for_terminal(ln, one_line=True)}" for ln in tail)
    if len(failing) > max_failures:
        lines.append(f"... and {len(failing) - max_failures} more failing tests")
    if result.problems:
        lines.append("Problems:")
        lines.extend(f"  {for_terminal(problem, one_line=True)}" for problem in result.problems)
    return "\n".join(lines)


def _tail(details: str, max_lines: int = 25, max_width: int = 300) -> list[str]:
    """The end of a traceback is where the failure is; long lines are cut."""
    lines = details.strip("\n").splitlines()
    cut = lines[-max_lines:]
    if len(lines) > max_lines:
        cut.insert(0, f"[... {len(lines) - max_lines} lines omitted]")
    return [ln if len(ln) <= max_width else ln[:max_width] + " [...]" for ln in cut]
