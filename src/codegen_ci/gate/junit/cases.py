"""One JUnit element -> one `JUnitCase`, with the place its failure happened (`locate`).

Counting rule (docs/contract.md): each `<testcase>` element is one case, judged by its worst child
(error > failure > skipped > passed). Surefire/nextest rerun records (`flakyFailure`,
`rerunFailure`, `flakyError`, `rerunError`) only mark a case as flaky; a case whose only
failure records are those passed in the end. One addition: an `<error>`/`<failure>` placed
directly in a `<testsuite>` (Ant/Jenkins: a class that failed to set up) is a case of its
own, named after the suite, so a suite that never ran its tests cannot look green.

A failure's location is read from the traceback text the runner printed: the innermost frame in
the case's own file, or in the repository's code, made relative to the repository.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from xml.etree.ElementTree import Element

from junitparser import Error, Failure, Skipped, TestCase
from junitparser.xunit2 import FlakyError, FlakyFailure, RerunError, RerunFailure

from codegen_ci import runners
from codegen_ci.runners import NestedCases
from codegen_ci.security.untrusted import Untrusted

Outcome = Literal["passed", "failure", "error", "skipped"]

_RANK: dict[str, int] = {Skipped._tag: 1, Failure._tag: 2, Error._tag: 3}
_OUTCOMES: tuple[Outcome, ...] = ("passed", "skipped", "failure", "error")  # index: rank
_SUITE_RESULTS = frozenset({Failure._tag, Error._tag})
_RERUN_TAGS = frozenset(t._tag for t in (FlakyFailure, FlakyError, RerunFailure, RerunError))


@dataclass(frozen=True, slots=True)
class JUnitCase:
    id: Untrusted  # the repository's tests named it: data, compared through `key` only
    name: str
    classname: str
    file: str | None
    line: int | None
    outcome: Outcome
    message: Untrusted  # the repository's test output: data (a failure's text)
    details: Untrusted  # its traceback or output: data
    time: float | None
    flaky: bool

    @property
    def key(self) -> str:
        """The id, to compare and look up (never to show: shown, it goes through a fence or
        a neutralising function)."""
        return self.id.raw_for("matching")

    def shown_to_runners(self) -> runners.ReportedCase:
        """The case as a runner's `from_output` and `refine` read it (its texts matched there,
        never shown)."""
        return runners.ReportedCase(
            self.classname,
            self.name,
            self.message.raw_for("matching"),
            self.details.raw_for("matching"),
            self.outcome,
            self.file,
            self.line,
        )


class AnonymousCases:
    """Cases whose classname says nothing (a runner's `NESTED_CASES`: node's reporter), held
    until the report ends, then named `describe > inner describe > test` by the suites the
    runner's reporter marked (node: `disabled=`); a case inside any other suite (pytest names
    a root-level `test.py` module "test") keeps its `classname::name` id. Held cases are
    small values: their elements are cleared as usual."""

    def __init__(self) -> None:
        self._held: list[tuple[JUnitCase, NestedCases]] = []
        self._paths: list[list[str]] = []
        self._foreign: set[int] = set()  # indexes of cases inside a suite the runner did not write
        self._members: dict[int, list[int]] = {}  # element id -> indexes into _held

    def hold(self, elem: Element, case: JUnitCase) -> bool:
        """Held when some runner names `case` by its suites (False: it is named already)."""
        nesting = runners.nested_cases(case.classname)
        if nesting is None:
            return False
        self._members[id(elem)] = [len(self._held)]
        self._held.append((case, nesting))
        self._paths.append([])
        return True

    def close_suite(self, suite: Element) -> None:
        if not self._members:  # nothing held (most reports): nothing to name
            return
        inside = [n for child in suite for n in self._members.pop(id(child), [])]
        name = suite.get("name") or ""
        for n in inside:
            if suite.get(self._held[n][1].suite_attribute) is None:
                self._foreign.add(n)
            if name:
                self._paths[n].insert(0, name)
        if inside:
            self._members[id(suite)] = inside

    def release(self) -> Iterator[JUnitCase]:
        """The held cases, named; at the end of the report (a mixed report lists them last)."""
        for n, ((case, nesting), path) in enumerate(zip(self._held, self._paths, strict=True)):
            named = Untrusted(nesting.separator.join([*path, case.name]))
            yield case if n in self._foreign else replace(case, id=named)


def local_tag(tag: str) -> str:
    """Tag without an XML namespace (a few generators put JUnit in one)."""
    return tag.rpartition("}")[2] if "}" in tag else tag


def case_of(elem: Element, root: Path | None = None) -> JUnitCase:
    model = TestCase.fromelem(elem)  # type: ignore[no-untyped-call]  # junitparser: untyped
    name: str = model.name or ""
    classname: str = model.classname or ""
    worst: Element | None = None
    rank, flaky = 0, False
    todo = False
    for child in elem:
        tag = local_tag(child.tag)
        child_rank = _RANK.get(tag, 0)
        if child_rank > rank:
            worst, rank = child, child_rank
        elif tag in _RERUN_TAGS:
            flaky = True
        todo = todo or (tag == Skipped._tag and child.get("type") == "todo")
    if todo:  # node's `test.todo`: its failure does not count (nor fail the run): not run
        rank = _RANK[Skipped._tag]
    message, details = _texts(worst)
    file, line = elem.get("file") or None, _to_int(elem.get("line"))
    if rank >= _RANK[Failure._tag]:
        file, line = locate(file, line, details or message, root)
    return JUnitCase(
        id=Untrusted(_case_id(name, classname)),
        name=name,
        classname=classname,
        file=file,
        line=line,
        outcome=_OUTCOMES[rank],
        message=Untrusted(message),
        details=Untrusted(details),
        time=_time(model),
        flaky=flaky,
    )


def suite_cases(suite: Element, root: Path | None = None) -> Iterator[JUnitCase]:
    """Ant/Jenkins style: a class that failed to set up reports its error on the suite
    itself, outside any testcase. Counting it keeps a broken suite from looking green."""
    for child in suite:
        if local_tag(child.tag) in _SUITE_RESULTS:
            yield _suite_case(suite, child, root)


def _suite_case(suite: Element, result: Element, root: Path | None) -> JUnitCase:
    name = suite.get("name") or ""
    message, details = _texts(result)
    file, line = locate(suite.get("file"), None, details or message, root)
    outcome: Outcome = "error" if local_tag(result.tag) == Error._tag else "failure"
    return JUnitCase(
        id=Untrusted(name),
        name=name,
        classname="",
        file=file,
        line=line,
        outcome=outcome,
        message=Untrusted(message),
        details=Untrusted(details),
        time=None,
        flaky=False,
    )


def _case_id(name: str, classname: str) -> str:
    """A runner's own id where its reporter names cases in a shape of its own (each runner's
    `case_id`: mocha's), else `classname::name`; just one of them when the other is missing
    or repeats it."""
    if own := runners.case_id(name, classname):
        return own
    if classname and name and classname != name:
        return f"{classname}::{name}"
    return name or classname


# Terminal colour codes (`--color=yes`, FORCE_COLOR): raw, or as pytest's JUnit writer escapes
# the ESC byte XML cannot hold (`#x1B[91m`). Noise for the model and the report alike.
_COLOUR = re.compile(r"(?:\x1b|#x1B)\[[0-?]*[ -/]*[@-~]")


def _texts(result: Element | None) -> tuple[str, str]:
    if result is None:
        return "", ""
    # CDATA and text alike; nested markup flattened
    details = _COLOUR.sub("", "".join(result.itertext()))
    message = _COLOUR.sub("", result.get("message") or "")
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


# Where a failure happened, read from the traceback text a runner printed.

# Where a failure happened, as the runners print it (each runner's `LOCATIONS`, runners/:
# pytest/go "path.py:12: ...", Python 'File "path.py", line 12', jest "(path/x.test.js:12:5)"
# or "at path/x.ts:12:5", a Go goroutine frame "\t/abs/path/file.go:304 +0x356", a Rust panic
# "panicked at src/lib.rs:12:5" (nextest)), one alternative each, two groups each (path, line).
# Java frames name only a file's basename, which would mislead more than help: not matched.
_LOCATIONS = runners.locations()
_LOCATION = re.compile("|".join(loc.pattern for loc in _LOCATIONS), re.MULTILINE)
_SCAN_CHARS = 8192
# A frame in a runner's libraries or runtime (its `LIBRARY_PATHS`: site-packages, node_modules,
# Go's module cache and GOROOT's runtime and testing frames around a panic) is not project code.
_LIBRARY_PARTS = runners.library_paths()
_JS_INTERNAL = ("internal/",)  # node's own frames: internal/process/task_queues.js
# the last group of each alternative whose stacks print the innermost frame first
_INNERMOST_FIRST = frozenset(2 * n + 2 for n, loc in enumerate(_LOCATIONS) if loc.innermost_first)


def locate(
    file: str | None, line: int | None, text: str, root: Path | None = None
) -> tuple[str | None, int | None]:
    """The innermost traceback location in the case's own file (or, without a `file`
    attribute, in project code); the attributes when the text names none. With `root`
    (the repository), a frame under it is project code and its path is made relative."""
    found: list[tuple[str, int]] = []
    stack_found: list[tuple[str, int]] = []
    # The innermost frames are at the end; a megabyte of captured output need not be scanned.
    for match in _LOCATION.finditer(text, max(0, len(text) - _SCAN_CHARS)):
        last = match.lastindex or 2  # each alternative ends with (path)(line)
        target = stack_found if last in _INNERMOST_FIRST else found
        target.append((relative(match[last - 1], root), int(match[last])))
    if file is not None:
        same = [ln for path, ln in found + stack_found if _same_file(path, file)]
        return relative(file, root), same[-1] if same else line
    ours = [loc for loc in found if not _library(loc[0], root)]
    if ours or found:
        return (ours or found)[-1]
    stack_ours = [loc for loc in stack_found if not _library(loc[0], root)]
    if stack_ours or stack_found:
        return (stack_ours or stack_found)[0]
    return None, line


def relative(path: str, root: Path | None) -> str:
    """`path` relative to `root` when it lies inside it (what the model can pass to
    `read_file`); unchanged otherwise."""
    if root is None or not Path(path).is_absolute():
        return path
    for base in {str(root), os.path.realpath(root)}:
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _same_file(path: str, file: str) -> bool:
    return path.endswith(file) or file.endswith(path)


def _library(path: str, root: Path | None) -> bool:
    # Given the repository, a path still absolute after `relative` lies outside it (GOROOT,
    # a global node install, the Python installation): never project code.
    outside = root is not None and Path(path).is_absolute()
    return outside or path.startswith(_JS_INTERNAL) or any(p in path for p in _LIBRARY_PARTS)
