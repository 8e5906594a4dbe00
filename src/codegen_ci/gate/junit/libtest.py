"""`cargo test` without nextest: the test cases libtest's own output names
(runners/cargo.py's `libtest_cases`), as a JUnit result.

libtest writes no JUnit, but its human output names every test and how it ended, and each
failing test's panic (`thread 'tests::adds' panicked at src/lib.rs:12:5:` and the message).
Read as cases, a plain `cargo test` has counts, failures named by test and located at their
panic, a baseline per test and a proof, as a JUnit runner does. The cases' source is the
command's log: it stands as the result's one file.
"""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase, locate
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.runners import cargo
from codegen_ci.security.untrusted import Untrusted, strip_ansi


def libtest_result(output: str, log: Path, root: Path | None) -> JUnitResult:
    """The tests `output` (a command's, printed by libtest) names; a result with no file when
    libtest ended no test binary there (the counts are unknown), with none of its own when
    every binary ran 0 tests (a crate without tests: 0 tests, never success).
    `root`: the tree it ran in (a panic's path is made relative to it)."""
    text = strip_ansi(output)
    cases: list[JUnitCase] = []
    for found in cargo.libtest_cases(text):
        file, line = None, None
        if found.outcome == "failure":
            file, line = locate(None, None, found.details, root)
        cases.append(
            JUnitCase(
                id=Untrusted(f"{found.target}::{found.name}"),  # the repository's test names
                name=found.name,
                classname=found.target,
                file=file,
                line=line,
                outcome=found.outcome,
                message=Untrusted(found.message),
                details=Untrusted(found.details),
                time=None,
                flaky=False,
            )
        )
    known = cases or cargo.libtest_ran(text)
    return JUnitResult(cases=cases, files=[str(log)]) if known else JUnitResult()
