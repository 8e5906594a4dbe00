"""pytest: JUnit through `--junitxml` in PYTEST_ADDOPTS (a command line `--junitxml` beats
it), coverage through coverage.py. Re-running failing tests first is the harness's side
(gate/pytest_commands.py and the `codegen_first` plugin)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from codegen_ci.runners import _python, base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    InitJUnit,
    Location,
    Signature,
    plain_tokens,
)

NAME = "pytest"
COMMAND = re.compile(r"\bpytest\b|\btox\b|\bnox\b")
# The word that starts pytest in a command (`pytest`, `py.test`, `python -m pytest`, a path).
TOKEN = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(report="reports/junit-pytest.xml")
CI_TEST: re.Pattern[str] | None = re.compile(r"^(?:pytest|py\.test|python3?\s+-m\s+pytest)\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = (
    "pytest: with `validation.junit` empty it gets "
    "`--junitxml` automatically; with globs set, pass `--junitxml=<file>` matching them"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junit(?:xml)?\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junitxml[= ]")
JUNIT_OPTIONS = ("--junitxml", "--junit-xml")


def mentions_pytest(command: str) -> bool:
    return bool(TOKEN.search(command))


junit_command = base.no_junit_command


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    """`--junitxml` through PYTEST_ADDOPTS: any pytest the command starts (through make, tox,
    a script) writes the report; other runners ignore the variable."""
    addopts = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={shlex.quote(report)}"
    return {"PYTEST_ADDOPTS": addopts.strip()}


every_test = base.as_written


def junit_arg(command: str) -> str | None:
    """The report path a command passes pytest itself (`--junitxml=PATH`), if any: a command
    line option beats PYTEST_ADDOPTS, so that is where the report lands."""
    tokens = plain_tokens(command) or []
    for n, token in enumerate(tokens):
        for option in JUNIT_OPTIONS:
            if token.startswith(option + "="):
                return token.split("=", 1)[1]
            if token == option and n + 1 < len(tokens):
                return tokens[n + 1]
    return None


configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id
from_output = base.no_from_output
refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at

# pytest's usage error (exit 4) for options it does not know: `--cov` without pytest-cov
# installed for the command's interpreter (hukkin/tomli-w's CI command).
SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"^\S.*: error: unrecognized arguments: .+$", re.M), "options refused"),
)
NO_TESTS_EXIT: int | None = 5
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = r"FAILED \S+::"

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.PATH_LINE, base.PYTHON_FRAME)
LIBRARY_PATHS: tuple[str, ...] = base.PYTHON_LIBRARIES
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg")
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

ARTIFACT_GLOBS: tuple[str, ...] = (".pytest_cache/**",)

RAN_COUNT: re.Pattern[str] | None = None


named_tests = base.no_named_tests  # pytest always writes JUnit (PYTEST_ADDOPTS)


totals = base.no_totals


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """`python -m pytest` and a bare `pytest` script under coverage.py (runners/_python.py)."""
    if _python.shape(command) not in ("pytest", "script"):
        return None
    return _python.coverage_plan(command, ask)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = (
    "codegen_first.py",  # re-runs the failing tests first (gate/pytest_commands.py loads it)
    *_python.PLUGINS,  # the coverage run's
)
COVERAGE = (
    "coverage.py: `python -m pytest` and a bare `pytest` script run under `coverage run "
    "--include=<the change's sources>`, then `coverage xml` (runners/_python.py)"
)
