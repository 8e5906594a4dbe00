"""JUnit XML reports -> test cases and failures, for the reflection step and `codegen-ci junit`.

Reports come from the repository under test, so they are untrusted input: they are streamed
through defusedxml (no DTDs, no entities, no external references; an entity bomb or an XXE
file is refused at its `<!DOCTYPE>`), capped in size, and every way a file can be broken
becomes a `problem` string ("path: message"), never an exception.

Counting rule (CONTRACT.md): each `<testcase>` element is one case, judged by its worst child
(error > failure > skipped > passed). Surefire/nextest rerun records (`flakyFailure`,
`rerunFailure`, `flakyError`, `rerunError`) only mark a case as flaky; a case whose only
failure records are those passed in the end. One addition: an `<error>`/`<failure>` placed
directly in a `<testsuite>` (Ant/Jenkins: a class that failed to set up) is a case of its
own, named after the suite, so a suite that never ran its tests cannot look green.

junitparser supplies the element model (tags, attribute parsing). Its own loaders are not
used: they read the file with an unhardened parser and build the whole tree, while a report
can be tens of megabytes, so the file is streamed here and each finished `<testcase>` is
handed to junitparser and then dropped from memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_etree
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from junitparser import Error, Failure, Skipped, TestCase, TestSuite
from junitparser.xunit2 import FlakyError, FlakyFailure, RerunError, RerunFailure

from codegen_ci.report import Failure as ReportFailure
from codegen_ci.report import TestTotals

Outcome = Literal["passed", "failure", "error", "skipped"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_ROOT_TAGS = frozenset({"testsuites", "testsuite"})
_RANK: dict[str, int] = {Skipped._tag: 1, Failure._tag: 2, Error._tag: 3}
_OUTCOMES: tuple[Outcome, ...] = ("passed", "skipped", "failure", "error")  # index: rank
_SUITE_RESULTS = frozenset({Failure._tag, Error._tag})
_RERUN_TAGS = frozenset(t._tag for t in (FlakyFailure, FlakyError, RerunFailure, RerunError))


@dataclass(frozen=True, slots=True)
class JUnitCase:
    id: str
    name: str
    classname: str
    file: str | None
    line: int | None
    outcome: Outcome
    message: str
    details: str
    time: float | None
    flaky: bool


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
                id=case.id,
                message=case.message,
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


def parse_file(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> JUnitResult:
    """Parse one report. A file that cannot be read or parsed yields no cases and a problem."""
    name = str(path)
    try:
        with path.open("rb") as raw:
            reader = _CappedReader(raw, max_bytes)
            try:
                cases = list(_iter_cases(reader))
            except Exception as exc:  # every parser failure becomes a value, not a traceback
                blank = reader.blank and not isinstance(exc, _TooLarge)
                problem = "file is empty" if blank else _describe(exc, max_bytes)
                return JUnitResult(problems=[f"{name}: {problem}"], files=[name])
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return JUnitResult(problems=[f"{name}: cannot read file: {reason}"], files=[name])
    return JUnitResult(cases=cases, files=[name])


def parse_files(paths: Iterable[Path], *, max_bytes: int = DEFAULT_MAX_BYTES) -> JUnitResult:
    result = JUnitResult()
    for path in paths:
        one = parse_file(path, max_bytes=max_bytes)
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


def _iter_cases(source: _CappedReader) -> Iterator[JUnitCase]:
    """Cases in document order. Only "end" events are asked for: each one costs a Python
    round trip, and on a 50 MB report that is most of the parsing time."""
    events: Any = safe_etree.iterparse(
        source, events=("end",), forbid_dtd=True, forbid_entities=True
    )
    root: Element | None = None
    for _, root in events:
        tag = _local(root.tag)
        if tag == TestCase._tag:
            yield _case(root)
            root.clear()  # keeps memory flat on large reports
        elif tag == TestSuite._tag:
            yield from _suite_cases(root)
    # The root closes last; a non-JUnit file is rejected as a whole, so rejecting it only
    # here costs nothing but time on a file that was wrong anyway.
    if root is None or _local(root.tag) not in _ROOT_TAGS:
        found = "nothing" if root is None else f"<{_local(root.tag)}>"
        raise _NotJUnit(
            f"not a JUnit report: the root element is {found}, expected <testsuites> or <testsuite>"
        )


def _local(tag: str) -> str:
    """Tag without an XML namespace (a few generators put JUnit in one)."""
    return tag.rpartition("}")[2] if "}" in tag else tag


def _case(elem: Element) -> JUnitCase:
    model = TestCase.fromelem(elem)  # type: ignore[no-untyped-call]  # junitparser: untyped
    name: str = model.name or ""
    classname: str = model.classname or ""
    worst: Element | None = None
    rank, flaky = 0, False
    for child in elem:
        tag = _local(child.tag)
        child_rank = _RANK.get(tag, 0)
        if child_rank > rank:
            worst, rank = child, child_rank
        elif tag in _RERUN_TAGS:
            flaky = True
    message, details = _texts(worst)
    file, line = elem.get("file") or None, _to_int(elem.get("line"))
    if rank >= _RANK[Failure._tag]:
        file, line = _locate(file, line, details or message)
    return JUnitCase(
        id=_case_id(name, classname),
        name=name,
        classname=classname,
        file=file,
        line=line,
        outcome=_OUTCOMES[rank],
        message=message,
        details=details,
        time=_time(model),
        flaky=flaky,
    )


def _suite_cases(suite: Element) -> Iterator[JUnitCase]:
    """Ant/Jenkins style: a class that failed to set up reports its error on the suite
    itself, outside any testcase. Counting it keeps a broken suite from looking green."""
    for child in suite:
        if _local(child.tag) in _SUITE_RESULTS:
            yield _suite_case(suite, child)


def _suite_case(suite: Element, result: Element) -> JUnitCase:
    name = suite.get("name") or ""
    message, details = _texts(result)
    file, line = _locate(suite.get("file"), None, details or message)
    outcome: Outcome = "error" if _local(result.tag) == Error._tag else "failure"
    return JUnitCase(
        id=name,
        name=name,
        classname="",
        file=file,
        line=line,
        outcome=outcome,
        message=message,
        details=details,
        time=None,
        flaky=False,
    )


def _case_id(name: str, classname: str) -> str:
    """`classname::name`; just one of them when the other is missing or repeats it."""
    if classname and name and classname != name:
        return f"{classname}::{name}"
    return name or classname


def _texts(result: Element | None) -> tuple[str, str]:
    if result is None:
        return "", ""
    details = "".join(result.itertext())  # CDATA and text alike; nested markup flattened
    message = result.get("message") or ""
    if not message:
        message = next((ln.strip() for ln in details.splitlines() if ln.strip()), "")
    return message, details


def _time(model: TestCase) -> float | None:
    try:
        value = model.time
    except ValueError:  # e.g. time="1.2s" or a locale-formatted number
        return None
    return float(value) if value is not None else None


def _to_int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# Where a failure happened, as runners print it: pytest/go "path.py:12: ...", Python
# 'File "path.py", line 12', jest "(path/x.test.js:12:5)" or "at path/x.ts:12:5". Java
# frames name only a file's basename, which would mislead more than help: not matched.
_LOCATION = re.compile(
    r'^[ \t]*([^\s:()"\']+\.[A-Za-z]\w*):(\d+):'
    r'|File "([^"]+)", line (\d+)'
    r"|(?:\(|at )([^()\s]+\.[cm]?[jt]sx?):(\d+):\d+",
    re.MULTILINE,
)
_SCAN_CHARS = 8192
_LIBRARY_PARTS = ("site-packages", "node_modules", "dist-packages", "<")


def _locate(file: str | None, line: int | None, text: str) -> tuple[str | None, int | None]:
    """The innermost traceback location in the case's own file (or, without a `file`
    attribute, in project code); the attributes when the text names none."""
    found: list[tuple[str, int]] = []
    # The innermost frames are at the end; a megabyte of captured output need not be scanned.
    for match in _LOCATION.finditer(text, max(0, len(text) - _SCAN_CHARS)):
        last = match.lastindex or 2  # each alternative ends with (path)(line)
        found.append((match[last - 1], int(match[last])))
    if file is not None:
        same = [ln for path, ln in found if path.endswith(file) or file.endswith(path)]
        return file, same[-1] if same else line
    ours = [loc for loc in found if not any(part in loc[0] for part in _LIBRARY_PARTS)]
    if ours or found:
        return (ours or found)[-1]
    return None, line


def summary_json(result: JUnitResult) -> dict[str, Any]:
    """The CONTRACT shape of `codegen-ci junit --json`, plus the list of parse problems."""
    totals = result.totals()
    return {
        **totals.model_dump(),
        "failures": [
            {"id": c.id, "message": c.message, "file": c.file, "line": c.line}
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
    for case in failing[:max_failures]:
        where = f" ({case.file}:{case.line})" if case.file and case.line else ""
        lines.append(f"{case.outcome.upper()} {case.id}{where}: {case.message}".rstrip())
        lines.extend(f"    {ln}" for ln in _tail(case.details))
    if len(failing) > max_failures:
        lines.append(f"... and {len(failing) - max_failures} more failing tests")
    if result.problems:
        lines.append("Problems:")
        lines.extend(f"  {problem}" for problem in result.problems)
    return "\n".join(lines)


def _tail(details: str, max_lines: int = 25, max_width: int = 300) -> list[str]:
    """The end of a traceback is where the failure is; long lines are cut."""
    lines = details.strip("\n").splitlines()
    cut = lines[-max_lines:]
    if len(lines) > max_lines:
        cut.insert(0, f"[... {len(lines) - max_lines} lines omitted]")
    return [ln if len(ln) <= max_width else ln[:max_width] + " [...]" for ln in cut]
