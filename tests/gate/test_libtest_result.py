"""Plain `cargo test` as a JUnit result (runners/cargo.py's `from_output`, taken in by
gate/junit/capture.py): counts, failures located at their panic, for real cargo output
(tests/fixtures/generated/cargo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci import runners
from codegen_ci.gate.junit.capture import add_from_output
from codegen_ci.gate.junit.parse import JUnitResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "generated" / "cargo"


def libtest_result(output: str, log: Path, root: Path) -> JUnitResult:
    """The result of a failed command that wrote no JUnit and printed `output`."""
    junit = JUnitResult()
    add_from_output(runners.Ran(False, lambda chars: output, None), junit, log=log, root=root)
    return junit


@pytest.mark.parametrize("version", ["1.95", "1.65"])
def test_counts_and_failures_at_their_panic(version: str, tmp_path: Path) -> None:
    log = FIXTURES / f"cargo-test-{version}.out"
    result = libtest_result(log.read_text(encoding="utf-8"), log, tmp_path)
    totals = result.totals()
    assert (totals.total, totals.passed, totals.failed, totals.skipped) == (6, 2, 3, 1)
    located = {f.key: (f.file, f.line) for f in result.failures()}
    assert located["src/lib.rs::tests::adds"] == ("src/lib.rs", 16)
    assert located["tests/more.rs::more_adds"] == ("tests/more.rs", 3)
    assert result.files == [str(log)]


def test_output_that_is_not_libtests_is_no_result(tmp_path: Path) -> None:
    result = libtest_result("error[E0425]: cannot find value `x`\n", tmp_path / "log", tmp_path)
    assert (result.cases, result.files) == ([], [])


def test_a_crate_without_tests_ran_0_tests_not_an_unknown_count(tmp_path: Path) -> None:
    """Every binary says `running 0 tests`: the count is known (0), so the gate's "no test,
    no success" applies as for a JUnit report listing none."""
    log = FIXTURES / "cargo-test-no-tests-1.95.out"
    result = libtest_result(log.read_text(encoding="utf-8"), log, tmp_path)
    assert (result.cases, result.files) == ([], [str(log)])
    assert result.totals().total == 0


def test_a_test_that_catches_a_panic_first_fails_at_and_for_its_own(tmp_path: Path) -> None:
    """bluss/scopeguard's `test_defer_success_2` panics in a closure it catches (line 524),
    then fails its assertion (line 526): the failure is the assertion's, place and message."""
    log = FIXTURES / "cargo-test-scopeguard-1.95.out"
    result = libtest_result(log.read_text(encoding="utf-8"), log, tmp_path)
    two = next(f for f in result.failures() if f.key.endswith("::tests::test_defer_success_2"))
    assert (two.file, two.line) == ("src/lib.rs", 526)
    assert two.raw_message == "assertion `left == right` failed left: 1 right: 0"


def test_a_command_that_wrote_junit_keeps_it(tmp_path: Path) -> None:
    """libtest's lines beside a JUnit report (nextest's, which prints them too) add nothing:
    the report is the result."""
    log = FIXTURES / "cargo-test-1.95.out"
    junit = JUnitResult(files=["report.xml"])
    ran = runners.Ran(False, lambda chars: log.read_text(encoding="utf-8"), ())
    add_from_output(ran, junit, log=log, root=tmp_path)
    assert (junit.cases, junit.files) == ([], ["report.xml"])
