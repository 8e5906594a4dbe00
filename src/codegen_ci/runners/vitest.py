"""vitest: JUnit through its built-in `junit` reporter."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import EnvironmentAdvice, FailedAt, InitJUnit, Read, Signature, Totals

NAME = "vitest"
COMMAND = re.compile(r"\bvitest\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = "vitest"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-vitest.xml",
    options="--reporter=default --reporter=junit --outputFile.junit={report}",
)

JUNIT_HINT: str | None = (
    "vitest: add `--reporter=default --reporter=junit "
    "--outputFile.junit=junit.xml` and set `validation.junit: [junit.xml]`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--reporter[= ]junit")
JUNIT_FILE: re.Pattern[str] | None = re.compile(r"--outputFile(?:\.junit)?[= ]([^\s'\"]+\.xml)")


def junit_command(command: str) -> str | None:
    return None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    return {}


def junit_arg(command: str) -> str | None:
    return None


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    return []


SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"Cannot find module 'vitest'"), "runner missing"),
    Signature(re.compile(r"Failed to load custom Reporter", re.I), "reporter missing"),
    Signature(re.compile(r"No test files found"), "no tests"),
)
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
FAILED_TEST: str | None = r"\s*(?:✕|×) "

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""


def failed_at(output: str) -> list[FailedAt]:
    return []


CONFIG_GLOBS: tuple[str, ...] = ("vitest.config.*",)
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()


def user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    return []


def is_checkout_cache(folder: Path) -> bool:
    return False


ARTIFACT_GLOBS: tuple[str, ...] = (".vitest/**",)

RAN_COUNT: re.Pattern[str] | None = None


def named_tests(text: str) -> list[tuple[str, bool]]:
    return []


def totals(text: str) -> Totals | None:
    return None


COVERAGE = (
    "vitest's V8 or istanbul provider (`--coverage.include=<the change's sources>`; the "
    "repository needs `@vitest/coverage-v8`) written as LCov: gate/coverage_node.py"
)
