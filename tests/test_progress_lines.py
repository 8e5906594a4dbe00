"""The plain progress lines a run prints (CI logs, pipes): one short line per command."""

from __future__ import annotations

import io

from codegen_ci.gate.kept_tests import refuse
from codegen_ci.gate.validation import RoundOutcome
from codegen_ci.progress import Progress, round_verdict
from codegen_ci.report import CommandResult, Failure, RemovedTest, Round, TestTotals
from codegen_ci.security.untrusted import Untrusted


def test_a_command_rewritten_to_many_test_ids_prints_a_bounded_line() -> None:
    """A round that re-runs only the failing tests names each id on the command line (48 for
    python-humanize, 4 kB); the progress line keeps the start and says how much it left out.
    The report and the logs keep the whole command."""
    ids = " ".join(f"'tests/test_number.py::test_intcomma[test_args{i}-1,000]'" for i in range(48))
    command = f"PYTHONPATH=src python -m pytest -q {ids}"
    out = io.StringIO()
    progress = Progress(out)

    progress.command_finished(
        CommandResult(command=command, kind="test", exit_code=1, duration_s=7.7, targeted=True)
    )
    progress.command_finished(
        CommandResult(command="ruff check .", kind="lint", exit_code=0, duration_s=0.1)
    )

    first, second = out.getvalue().splitlines()
    assert len(first) < 300, first
    assert "PYTHONPATH=src python -m pytest -q 'tests/test_number.py::" in first
    assert first.endswith("-> exit 1 (7.7s)") and "more characters" in first
    assert second.endswith("  lint: ruff check . -> exit 0 (0.1s)")


def test_the_preflights_collection_does_not_read_as_a_passing_base() -> None:
    """The pre-flight only collects the tests (cachetools with a bug on the base: `exit 0`
    there read as if the base passed): the line says the tests were collected, not run."""
    out = io.StringIO()

    Progress(out).command_finished(
        CommandResult(
            command="python -m pytest", kind="test", exit_code=0, duration_s=1.7, collect_only=True
        )
    )

    assert (
        out.getvalue().rstrip().endswith("test: python -m pytest -> exit 0, collected only (1.7s)")
    )


def test_a_round_line_names_a_few_failing_tests_and_counts_the_rest() -> None:
    """Five failing tests: three named, the rest counted, the totals beside them."""
    failures = [
        Failure(id=Untrusted(f"tests/test_x.py::test_{i}"), message="boom") for i in range(5)
    ]
    rnd = Round(iteration=2, failures=failures, tests=TestTotals(total=9, passed=4, failed=5))

    line = round_verdict(rnd)

    assert line == (
        "round 2: not passed: 5 failing (tests/test_x.py::test_0, tests/test_x.py::test_1, "
        "tests/test_x.py::test_2 +2 more); tests 4/9 passed"
    )


def test_a_refused_round_counts_the_tests_it_did_not_keep() -> None:
    """vitest prints only totals: its three skipped tests are one group, `(the tests of ...)`,
    counted 3; a weakened test file is a file. The line counts tests, not entries, and lists
    the group without a second pair of parentheses."""
    outcome = RoundOutcome(round=Round(iteration=1, passed=True))
    refuse(
        outcome,
        [
            RemovedTest(id=Untrusted("(the tests of `npm test`)"), how="skipped", count=3),
            RemovedTest(id=Untrusted("m::gone"), how="removed"),
            RemovedTest(id=Untrusted("tests/test_a.py"), how="weakened", count=2),
        ],
    )

    line = round_verdict(outcome.round)

    assert line == (
        "round 1: refused: the change removed 1 and skipped 3 existing tests, weakened 1 "
        "existing test file (the tests of `npm test`, m::gone, tests/test_a.py); tests not run"
    )


def test_a_model_command_that_fails_does_not_read_as_ok() -> None:
    """go-humanize: the model's `git rm` failed inside the sandbox (exit 128) and the line said
    `-> ok`; the line now says how the command ended (and `ok` for exit 0)."""
    out = io.StringIO()
    progress = Progress(out)

    progress.tool_call("run_command", '{"command": "git rm x_test.go"}', "[exit code 128]\nfatal")
    progress.tool_call("run_command", '{"command": "go test ./..."}', "[exit code 0]\nok")
    progress.tool_call("read_file", '{"path": "x.go"}', "[exit code 3] is this file's text")

    failed, passed, read = out.getvalue().splitlines()
    assert failed.endswith("-> exit code 128"), failed
    assert passed.endswith("-> ok") and read.endswith("-> ok")
