"""node's own test runner (`node --test`): JUnit through its built-in `junit` reporter; where
it wrote none, its summary's `tests N` and `skipped K`."""

from __future__ import annotations

import re
from pathlib import Path

from codegen_ci.runners import _node, base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    InitJUnit,
    Location,
    Signature,
    Totals,
)

NAME = "node --test"
COMMAND = re.compile(r"\bnode\b.*--test\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = r"node\s+--test"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-node.xml",
    options="--test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={report}",
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^node\s+--test\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = base.junit_hint(
    "node's test runner",
    "add `--test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit "
    "--test-reporter-destination=junit.xml`",
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--test-reporter=junit")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--test-reporter-destination=")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports
# every case's classname is `test`: its `describe` suites (which its reporter marks with
# `disabled=`) name it instead
NESTED_CASES: base.NestedCases | None = base.NestedCases(
    classname="test", suite_attribute="disabled"
)
case_id = base.no_case_id
from_output = base.no_from_output
refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at

# its summary, TAP (`# tests 0`) or spec (`ℹ tests 0`)
SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"^(?:# |ℹ )tests 0$", re.M), "no tests"),
)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = r"not ok \d+ "  # TAP

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.JS_FRAME,)
LIBRARY_PATHS: tuple[str, ...] = base.NODE_LIBRARIES
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ()
ARTIFACT_GLOBS: tuple[str, ...] = ()
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

TESTS = re.compile(r"^(?:# |ℹ )tests (\d+)$", re.M)
SKIPPED = re.compile(r"^(?:# |ℹ )(?:skip|skipped|todo) (\d+)$", re.M)
RAN_COUNT: re.Pattern[str] | None = re.compile(r"^(?:# |ℹ )tests \d+$", re.M)
named_tests = base.no_named_tests
doctest_examples = base.no_doctest_examples


def totals(text: str) -> Totals | None:
    """`tests N` and `skipped K`/`todo K` (`{skip}`, `t.skip`, `todo`)."""
    return base.summed_totals(text, TESTS, SKIPPED)


def coverage_flags(io_dir: Path) -> tuple[list[str], str]:
    """The flags (before its test files) that make `node --test` write LCov under `io_dir`,
    and the report's path there: every file it loads (Node 20 cannot limit coverage)."""
    flags = [
        "--experimental-test-coverage",
        "--test-reporter=spec",
        "--test-reporter-destination=stdout",
        "--test-reporter=lcov",
        f"--test-reporter-destination={io_dir / 'lcov.info'}",
    ]
    return flags, "lcov.info"


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """`node --test` run itself or by a package.json script, with `coverage_flags` right
    after `node` (runners/_node.py)."""
    return _node.coverage_plan(command, ask, "node", lambda _, io_dir: coverage_flags(io_dir))


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = (
    "`node --experimental-test-coverage` with the lcov reporter (every file it loads; "
    "`coverage_flags`)"
)
