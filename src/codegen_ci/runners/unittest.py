"""unittest (`python -m unittest`): JUnit by running the command through codegen-ci's own
`codegen_unittest` (the harness's side: gate/unittest_commands.py), which runs unittest's
`main` and writes a report; its verbose lines and totals, where no JUnit was written."""

from __future__ import annotations

import re
import shlex

from codegen_ci.runners import _python, base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    InitJUnit,
    Location,
    Signature,
    Totals,
    in_folder,
    plain_tokens,
)

NAME = "unittest"
COMMAND = re.compile(r"-m\s+unittest\b")
RUNNER = "codegen_unittest"  # the module that runs unittest's `main` and writes JUnit
# a file that holds unittest tests (what init looks for)
TEST_FILE_IMPORT = re.compile(r"^\s*(?:import unittest|from unittest import)", re.M)
PYTHON = _python.PYTHON

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = (
    None  # init runs a unittest suite through pytest where it can (commands/init_detect.py)
)
CI_TEST: re.Pattern[str] | None = re.compile(r"^python3?\s+-m\s+unittest\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = None  # a plain `python -m unittest` gets JUnit without being asked
ASKS_FOR_JUNIT: re.Pattern[str] | None = None
JUNIT_FILE: re.Pattern[str] | None = None


def junit_command(command: str) -> str | None:
    """`command` run through the JUnit-writing runner; None when it is not a plain
    `<python> -m unittest ...` (no interpreter options, no shell operators; one run from a
    folder, `cd DIR && …`, is: run in DIR again)."""
    folder, inner = in_folder(command)
    if folder.path:
        found = junit_command(inner)
        return None if found is None else folder.wrap(found)
    tokens = plain_tokens(command)
    if not tokens or len(tokens) < 3 or tokens[1:3] != ["-m", "unittest"]:
        return None
    if not PYTHON.fullmatch(tokens[0]):
        return None
    return shlex.join([tokens[0], "-m", RUNNER, *tokens[3:]])


# the runner's report path is set with its PYTHONPATH (gate/unittest_commands.py)
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

SIGNATURES: tuple[Signature, ...] = (Signature(re.compile(r"^Ran 0 tests in ", re.M), "no tests"),)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = None

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.PYTHON_FRAME,)
LIBRARY_PATHS: tuple[str, ...] = base.PYTHON_LIBRARIES
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ()
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

ARTIFACT_GLOBS: tuple[str, ...] = ()

# verbose: `test_x (module.Class.test_x) ... ok` (Python 3.11+ names the method twice)
VERBOSE = re.compile(
    r"^(\w+) \(([\w.]+)\)(?:\n[^\n]*)? \.\.\. (ok|FAIL|ERROR|skipped|expected failure|"
    r"unexpected success)\b",
    re.M,
)
RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
SKIPPED = re.compile(r"^(?:OK|FAILED) \(.*?\bskipped=(\d+)", re.M)
RAN_COUNT: re.Pattern[str] | None = re.compile(r"^Ran \d+ tests? in ", re.M)


def named_tests(text: str) -> list[tuple[str, bool]]:
    """`name (module.Class.name) ... ok`: skipped, and an expected failure, ran nothing."""
    found = []
    for name, where, state in VERBOSE.findall(text):
        test_id = where if where.endswith("." + name) else f"{where}.{name}"
        found.append((test_id, state in ("skipped", "expected failure")))
    return found


def totals(text: str) -> Totals | None:
    """`Ran N tests in ...` and `OK (skipped=K)`."""
    return base.summed_totals(text, RAN, SKIPPED)


doctest_examples = base.no_doctest_examples


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """`python -m unittest` under coverage.py, as `-m codegen_cov_select` (runners/_python.py)."""
    if _python.shape(command) != "unittest":
        return None
    return _python.coverage_plan(command, ask)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = (
    f"{RUNNER}.py",  # unittest's main writing JUnit (gate/unittest_commands.py runs it)
    *_python.PLUGINS,  # the coverage run's
)
COVERAGE = (
    "coverage.py: `python -m unittest` runs under `coverage run --include=<the change's "
    "sources>` (runners/_python.py)"
)
