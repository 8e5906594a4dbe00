"""jest: JUnit through the jest-junit reporter (a package of its own)."""

from __future__ import annotations

import re
from collections.abc import Sequence
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

NAME = "jest"
COMMAND = re.compile(r"\bjest\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = "jest"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-jest.xml",
    options="--ci --reporters=default --reporters=jest-junit",
    env="JEST_JUNIT_OUTPUT_FILE={report} ",
    package="jest-junit",
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^(?:npx\s+)?jest\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = base.junit_hint(
    NAME,
    "`npm install --save-dev jest-junit`, run `jest --ci --reporters=default "
    "--reporters=jest-junit`",
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(
    r"--reporters?[= ](?:default,)?(?:junit|jest-junit)\b"
)
JUNIT_FILE: re.Pattern[str] | None = base.report_after("JEST_JUNIT_OUTPUT_FILE=")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id
from_output = base.no_from_output
refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at

SIGNATURES: tuple[Signature, ...] = (
    base.cannot_find("jest", "ts-jest"),
    Signature(
        re.compile(r"Could not resolve a module for a custom reporter", re.I), "reporter missing"
    ),
    Signature(re.compile(r"No tests found, exiting with code"), "no tests"),
)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = base.FAILED_MARK

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.JS_FRAME,)
LIBRARY_PATHS: tuple[str, ...] = base.NODE_LIBRARIES
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ("jest.config.*",)
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache
# jest's default cacheDirectory: `<realpath of os.tmpdir()>/jest_<uid in base 36>` (jest-config's
# getCacheDirectory; no variable moves it). Its haste map, transform and perf caches are named by
# the config's id, a hash of rootDir: warm only for a checkout at the same path
# (security/warm_caches.py, `TMPDIR_CACHES`).
TMPDIR_CACHES: tuple[str, ...] = ("jest_*",)


ARTIFACT_GLOBS: tuple[str, ...] = (".jest-cache/**",)

# Its summary, where jest-junit is not set up: `Tests:       1 failed, 2 skipped, 5 passed, 8
# total`.
SUMMARY = re.compile(r"^Tests:[ \t]+(.*?)(\d+) total[ \t]*$", re.M)
RAN_COUNT: re.Pattern[str] | None = SUMMARY
named_tests = base.no_named_tests
doctest_examples = base.no_doctest_examples


def totals(text: str) -> Totals | None:
    """The `Tests: ... N total` summary lines: N, and their `K skipped` and `K todo`."""
    return _node.summary_totals(SUMMARY, text)


def coverage_flags(sources: Sequence[str], io_dir: Path) -> tuple[list[str], str]:
    """The flags that make jest write LCov of `sources` under `io_dir`, and the report's path
    there (the repository's `coverageProvider` stays as it is)."""
    flags = [
        "--coverage",
        "--coverageReporters=lcovonly",
        f"--coverageDirectory={io_dir / 'jest'}",
        *(f"--collectCoverageFrom={s}" for s in sources),
    ]
    return flags, "jest/lcov.info"


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """jest run itself or by a package.json script, with `coverage_flags` (runners/_node.py)."""
    return _node.coverage_plan(command, ask, "jest", coverage_flags)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = (
    "jest's own coverage (`--coverage --collectCoverageFrom=<the change's sources>`) "
    "written as LCov (`coverage_flags`)"
)
