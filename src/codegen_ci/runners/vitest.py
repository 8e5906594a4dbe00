"""vitest: JUnit through its built-in `junit` reporter."""

from __future__ import annotations

import os
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

NAME = "vitest"
COMMAND = re.compile(r"\bvitest\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = "vitest"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-vitest.xml",
    options="--reporter=default --reporter=junit --outputFile.junit={report}",
    start="vitest run",
    drop=re.compile(r"^run"),
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^(?:npx\s+)?vitest\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = base.junit_hint(
    NAME, "add `--reporter=default --reporter=junit --outputFile.junit=junit.xml`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--reporter[= ]junit")
JUNIT_FILE: re.Pattern[str] | None = base.report_after(r"--outputFile(?:\.junit)?[= ]")
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
    base.cannot_find("vitest"),
    Signature(re.compile(r"Failed to load custom Reporter", re.I), "reporter missing"),
    Signature(re.compile(r"No test files found"), "no tests"),
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

CONFIG_GLOBS: tuple[str, ...] = ("vitest.config.*",)
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

ARTIFACT_GLOBS: tuple[str, ...] = (".vitest/**",)

# Its summary, where no JUnit was asked for (`npm test` through a wrapper script):
# `      Tests  31 failed | 444 passed | 2 skipped (477)`, one per run. Without it a change that
# skipped every test (`describe.skip`) left nothing to compare and passed as a success.
SUMMARY = re.compile(r"^[ \t]*Tests {2}(.*?)[ \t]*\((\d+)\)[ \t]*$", re.M)
RAN_COUNT: re.Pattern[str] | None = SUMMARY
named_tests = base.no_named_tests
doctest_examples = base.no_doctest_examples


def totals(text: str) -> Totals | None:
    """The `Tests  ... (N)` summary lines: N, and their `K skipped` and `K todo`."""
    return _node.summary_totals(SUMMARY, text)


# the coverage providers vitest can use, by the package that brings each (in this order)
COVERAGE_PROVIDERS = (("v8", "@vitest/coverage-v8"), ("istanbul", "@vitest/coverage-istanbul"))


def coverage_flags(provider: str, sources: Sequence[str], io_dir: Path) -> tuple[list[str], str]:
    """The flags that make vitest write LCov of `sources` under `io_dir` with `provider`, and
    the report's path there."""
    flags = [
        "--coverage.enabled",
        f"--coverage.provider={provider}",
        "--coverage.reporter=lcovonly",
        f"--coverage.reportsDirectory={io_dir / 'vitest'}",
        *(f"--coverage.include={s}" for s in sources),
    ]
    return flags, "vitest/lcov.info"


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """vitest run itself or by a package.json script, with `coverage_flags` (runners/_node.py)
    and the first provider the repository's node_modules has."""

    def flags(sources: Sequence[str], io_dir: Path) -> tuple[list[str], str] | str:
        for provider, package in COVERAGE_PROVIDERS:
            # lexists: a pnpm layout links the package from node_modules/.pnpm
            if os.path.lexists(ask.tree / "node_modules" / package):
                return coverage_flags(provider, sources, io_dir)
        return (
            "vitest coverage needs @vitest/coverage-v8 in the repository's node_modules "
            "(`npm install --save-dev @vitest/coverage-v8` at vitest's version); "
            "codegen-ci installs nothing into the repository"
        )

    return _node.coverage_plan(command, ask, "vitest", flags)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = (
    "vitest's V8 or istanbul provider (`--coverage.include=<the change's sources>`; the "
    "repository needs `@vitest/coverage-v8`) written as LCov (`coverage_flags`)"
)
