"""pytest: JUnit through `--junitxml` in PYTEST_ADDOPTS (a command line `--junitxml` beats
it), coverage through coverage.py. Re-running failing tests first is the harness's side
(gate/pytest_commands.py and the `codegen_first` plugin)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import (
    EnvironmentAdvice,
    FailedAt,
    InitJUnit,
    Read,
    Signature,
    Totals,
    plain_tokens,
)

NAME = "pytest"
COMMAND = re.compile(r"\bpytest\b|\btox\b|\bnox\b")
# The word that starts pytest in a command (`pytest`, `py.test`, `python -m pytest`, a path).
TOKEN = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(report="reports/junit-pytest.xml")

JUNIT_HINT: str | None = (
    "pytest: with `validation.junit` empty it gets "
    "`--junitxml` automatically; with globs set, pass `--junitxml=<file>` matching them"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junit(?:xml)?\b")
JUNIT_FILE: re.Pattern[str] | None = re.compile(r"--junitxml[= ]([^\s'\"]+\.xml)")
JUNIT_OPTIONS = ("--junitxml", "--junit-xml")


def mentions_pytest(command: str) -> bool:
    return bool(TOKEN.search(command))


def junit_command(command: str) -> str | None:
    return None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    """`--junitxml` through PYTEST_ADDOPTS: any pytest the command starts (through make, tox,
    a script) writes the report; other runners ignore the variable."""
    addopts = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={shlex.quote(report)}"
    return {"PYTEST_ADDOPTS": addopts.strip()}


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


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    return []


SIGNATURES: tuple[Signature, ...] = ()
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
FAILED_TEST: str | None = r"FAILED \S+::"

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""


def failed_at(output: str) -> list[FailedAt]:
    return []


CONFIG_GLOBS: tuple[str, ...] = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg")
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()


def user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    return []


def is_checkout_cache(folder: Path) -> bool:
    return False


ARTIFACT_GLOBS: tuple[str, ...] = (".pytest_cache/**",)

RAN_COUNT: re.Pattern[str] | None = None


def named_tests(text: str) -> list[tuple[str, bool]]:
    return []  # pytest always writes JUnit (PYTEST_ADDOPTS)


def totals(text: str) -> Totals | None:
    return None


COVERAGE = (
    "coverage.py: `python -m pytest` and a bare `pytest` run under `coverage run "
    "--include=<the change's sources>`, then `coverage xml`: gate/coverage_python.py"
)
