"""codegen-ci's unittest runner: `python -m codegen_unittest ARGS` runs exactly what
`python -m unittest ARGS` runs (unittest's own `main`, argument parsing and discovery), and
also writes a JUnit report, so a unittest suite's round has per-test results and totals.

Standalone on purpose, like the pytest plugin beside it: codegen-ci copies this file into its
own read-only folder and puts that on PYTHONPATH, in whatever interpreter the repository's
command names, so it imports nothing but the standard library and keeps to syntax old Pythons
read. CODEGEN_UNITTEST_JUNIT names the report's path (in the command's own writable folder).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import unittest
from typing import Any
from xml.sax.saxutils import escape, quoteattr

JUNIT_ENV = "CODEGEN_UNITTEST_JUNIT"
MAX_TEXT = 20000  # characters of a failure's traceback kept in the report
SUBTEST: Any = getattr(unittest.case, "_SubTest", ())  # what `subTest` runs, private to unittest


class Case:
    def __init__(self, test_id: str, seconds: float) -> None:
        classname, _, name = test_id.rpartition(".")
        if "(" in test_id or " " in test_id or not classname:  # setUpClass (pkg.mod.Class)
            classname, name = "", test_id
        self.classname, self.name, self.seconds = classname, name, seconds
        self.kind = ""  # "" passed, failure, error, skipped
        self.message = ""
        self.text = ""


class JUnitTextResult(unittest.TextTestResult):
    """The usual text result, which also keeps one `Case` per test. A test whose subtests
    fail is one failed test, as unittest counts it ("Ran N tests") and as pytest reports it
    (`pkg.mod.Class::test_x`): its failed subtests are the details of its failure."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cases: list[Case] = []
        self._started = time.monotonic()
        self._own: Any = None  # the case the running test wrote itself
        self._subtests: list[tuple[str, str, str, str]] = []  # kind, params, message, text
        self._skipped = ""  # why a subtest was skipped

    def startTest(self, test: unittest.TestCase) -> None:
        self._started = time.monotonic()
        self._own, self._subtests, self._skipped = None, [], ""
        super().startTest(test)

    def stopTest(self, test: unittest.TestCase) -> None:
        if self._subtests:
            self._fold(test)
        elif self._own is None and self._skipped:  # unittest counts it skipped
            self._case(test, "skipped", self._skipped)
        super().stopTest(test)

    def _fold(self, test: Any) -> None:
        """The test's failed subtests, as its one case (with its own failure, if any)."""
        case = self._own
        if case is None or case.kind not in ("failure", "error"):
            if case is None:
                case = Case(test.id(), time.monotonic() - self._started)
                self.cases.append(case)
            kinds = [kind for kind, _, _, _ in self._subtests]
            case.kind = "failure" if "failure" in kinds else "error"
            case.message, case.text = "", ""
        _, params, message, _ = self._subtests[0]
        more = len(self._subtests) - 1
        first = f"subtest {params}: {message}" + (f"; {more} more failed" if more else "")
        case.message = case.message or first
        parts = [case.text] if case.text else []
        parts += [f"subtest {params}\n{text}" for _, params, _, text in self._subtests]
        case.text = "\n".join(parts)[:MAX_TEXT]

    def _case(self, test: Any, kind: str = "", message: str = "", text: str = "") -> None:
        case = Case(test.id(), time.monotonic() - self._started)
        case.kind, case.message, case.text = kind, message, text[:MAX_TEXT]
        self.cases.append(case)
        self._own = case

    def _failed(self, test: Any, kind: str, err: Any) -> None:
        self._case(test, kind, _message(kind, err), "".join(traceback.format_exception(*err)))

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._case(test)

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._failed(test, "failure", err)

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._failed(test, "error", err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        if isinstance(test, SUBTEST):  # the test's, unless it writes a case of its own
            self._skipped = self._skipped or reason
        else:
            self._case(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._case(test, "skipped", "expected failure")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._case(test, "failure", "unexpected success (marked expectedFailure)")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "failure" if issubclass(err[0], test.failureException) else "error"
            params = subtest._subDescription() if isinstance(subtest, SUBTEST) else ""
            text = "".join(traceback.format_exception(*err))
            self._subtests.append((kind, params, _message(kind, err), text))


def _message(kind: str, err: Any) -> str:
    return "".join(str(err[1]).splitlines()[:1]) if err[1] is not None else kind


class JUnitRunner(unittest.TextTestRunner):
    resultclass = JUnitTextResult

    def run(self, test: Any) -> Any:  # TextTestResult, generic in typeshed only
        result = super().run(test)
        path = os.environ.get(JUNIT_ENV)
        if path and isinstance(result, JUnitTextResult):
            write_report(result.cases, path)
        return result


def write_report(cases: list[Case], path: str) -> None:
    failures = sum(1 for c in cases if c.kind == "failure")
    errors = sum(1 for c in cases if c.kind == "error")
    skipped = sum(1 for c in cases if c.kind == "skipped")
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        "<testsuites>",
        f'<testsuite name="unittest" tests="{len(cases)}" failures="{failures}" '
        f'errors="{errors}" skipped="{skipped}">',
    ]
    for case in cases:
        name, classname = quoteattr(case.name), quoteattr(case.classname)
        head = f'<testcase classname={classname} name={name} time="{case.seconds:.3f}"'
        if not case.kind:
            lines.append(head + "/>")
            continue
        body = escape(case.text) if case.kind != "skipped" else ""
        message = quoteattr(case.message)
        lines += [head + ">", f"<{case.kind} message={message}>{body}</{case.kind}>", "</testcase>"]
    lines += ["</testsuite>", "</testsuites>", ""]
    with open(path, "w", encoding="utf-8") as report:
        report.write("\n".join(lines))


if __name__ == "__main__":
    sys.argv[0] = "python -m unittest"  # what unittest's own __main__ shows in its usage
    unittest.main(module=None, testRunner=JUnitRunner)
