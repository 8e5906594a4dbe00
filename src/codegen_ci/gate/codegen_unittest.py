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


class Case:
    def __init__(self, test_id: str, seconds: float) -> None:
        # A failed subtest's id is its test's and then its parameters (`pkg.mod.Class.test_x
        # (n=3)`): split at the test's own id, so it reads `pkg.mod.Class::test_x (n=3)`, its
        # parent's id (`pkg.mod.Class::test_x`, written when no subtest fails) with a suffix.
        test, space, params = test_id.partition(" ")
        classname, _, name = test.rpartition(".")
        name += space + params
        if "(" in test or not classname:  # setUpClass (pkg.mod.Class), a module's error
            classname, name = "", test_id
        self.classname, self.name, self.seconds = classname, name, seconds
        self.kind = ""  # "" passed, failure, error, skipped
        self.message = ""
        self.text = ""


class JUnitTextResult(unittest.TextTestResult):
    """The usual text result, which also keeps one `Case` per test (and per failed subtest)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cases: list[Case] = []
        self._started = time.monotonic()

    def startTest(self, test: unittest.TestCase) -> None:
        self._started = time.monotonic()
        super().startTest(test)

    def _case(self, test: Any, kind: str = "", message: str = "", text: str = "") -> None:
        case = Case(test.id(), time.monotonic() - self._started)
        case.kind, case.message, case.text = kind, message, text[:MAX_TEXT]
        self.cases.append(case)

    def _failed(self, test: Any, kind: str, err: Any) -> None:
        message = "".join(str(err[1]).splitlines()[:1]) if err[1] is not None else kind
        self._case(test, kind, message, "".join(traceback.format_exception(*err)))

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
            self._failed(subtest, kind, err)


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
