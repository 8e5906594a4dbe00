"""mocha: JUnit through the mocha-junit-reporter package (mocha takes one reporter)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import EnvironmentAdvice, FailedAt, InitJUnit, Read, Signature, Totals

NAME = "mocha"
COMMAND = re.compile(r"\bmocha\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = "mocha"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-mocha.xml",
    options="--reporter mocha-junit-reporter --reporter-options mochaFile={report}",
    package="mocha-junit-reporter",
)

JUNIT_HINT: str | None = (
    "mocha: `npm install --save-dev mocha-junit-reporter`, run "
    "`mocha --reporter mocha-junit-reporter --reporter-options mochaFile=junit.xml` and set "
    "`validation.junit: [junit.xml]`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"mocha-junit-reporter")
JUNIT_FILE: re.Pattern[str] | None = re.compile(r"mochaFile=([^\s'\"]+\.xml)")


def junit_command(command: str) -> str | None:
    return None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    return {}


def junit_arg(command: str) -> str | None:
    return None


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    return []


SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"Cannot find module 'mocha'"), "runner missing"),
    Signature(  # mocha 8+; mocha 6
        re.compile(
            r"ERR_MOCHA_INVALID_REPORTER|Error: invalid reporter|Unknown \"reporter\": ", re.I
        ),
        "reporter missing",
    ),
    Signature(re.compile(r"^Error: No test files found", re.M), "no tests"),
)
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
FAILED_TEST: str | None = None

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""


def failed_at(output: str) -> list[FailedAt]:
    return []


CONFIG_GLOBS: tuple[str, ...] = ()
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()


def user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    return []


def is_checkout_cache(folder: Path) -> bool:
    return False


ARTIFACT_GLOBS: tuple[str, ...] = ()

RAN_COUNT: re.Pattern[str] | None = None


def named_tests(text: str) -> list[tuple[str, bool]]:
    return []


def totals(text: str) -> Totals | None:
    return None


COVERAGE = "not measured: mocha has no coverage of its own (nyc or c8 wrap it; neither is read yet)"
