"""mocha: JUnit through the mocha-junit-reporter package (mocha takes one reporter)."""

from __future__ import annotations

import re

from codegen_ci.runners import base
from codegen_ci.runners.base import EnvironmentAdvice, InitJUnit, Location, Signature

NAME = "mocha"
COMMAND = re.compile(r"\bmocha\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = "mocha"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-mocha.xml",
    options="--reporter mocha-junit-reporter --reporter-options mochaFile={report}",
    package="mocha-junit-reporter",
    drop=re.compile(r"(?:^|\s)(?:--reporter|-R)(?:=|\s+)\S+"),  # mocha takes one reporter
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^(?:npx\s+)?mocha\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = base.junit_hint(
    NAME,
    "`npm install --save-dev mocha-junit-reporter`, run "
    "`mocha --reporter mocha-junit-reporter --reporter-options mochaFile=junit.xml`",
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"mocha-junit-reporter")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("mochaFile=")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports


def case_id(name: str, classname: str) -> str | None:
    """mocha-junit-reporter's case: name "suite title", classname "title": the name alone."""
    return name if classname and name.endswith(" " + classname) else None


NESTED_CASES: base.NestedCases | None = None
from_output = base.no_from_output
refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at

SIGNATURES: tuple[Signature, ...] = (
    base.cannot_find("mocha"),
    Signature(  # mocha 8+; mocha 6
        re.compile(
            r"ERR_MOCHA_INVALID_REPORTER|Error: invalid reporter|Unknown \"reporter\": ", re.I
        ),
        "reporter missing",
    ),
    Signature(re.compile(r"^Error: No test files found", re.M), "no tests"),
)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = None

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

RAN_COUNT: re.Pattern[str] | None = None
named_tests = base.no_named_tests
totals = base.no_totals
doctest_examples = base.no_doctest_examples

coverage_plan = base.no_coverage_plan
# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = "not measured: mocha has no coverage of its own (nyc or c8 wrap it; neither is read yet)"
