"""node's own test runner (`node --test`): JUnit through its built-in `junit` reporter; where
it wrote none, its summary's `tests N` and `skipped K`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import EnvironmentAdvice, FailedAt, InitJUnit, Read, Signature, Totals

NAME = "node --test"
COMMAND = re.compile(r"\bnode\b.*--test\b")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = r"node\s+--test"
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-node.xml",
    options="--test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={report}",
)

JUNIT_HINT: str | None = (
    "node's test runner: add `--test-reporter=spec "
    "--test-reporter-destination=stdout --test-reporter=junit "
    "--test-reporter-destination=junit.xml` and set `validation.junit: [junit.xml]`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--test-reporter=junit")
JUNIT_FILE: re.Pattern[str] | None = re.compile(r"--test-reporter-destination=([^\s'\"]+\.xml)")


def junit_command(command: str) -> str | None:
    return None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    return {}


def junit_arg(command: str) -> str | None:
    return None


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    return []


# its summary, TAP (`# tests 0`) or spec (`ℹ tests 0`)
SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"^(?:# |ℹ )tests 0$", re.M), "no tests"),
)
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
FAILED_TEST: str | None = r"not ok \d+ "  # TAP

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

TESTS = re.compile(r"^(?:# |ℹ )tests (\d+)$", re.M)
SKIPPED = re.compile(r"^(?:# |ℹ )(?:skip|skipped|todo) (\d+)$", re.M)
RAN_COUNT: re.Pattern[str] | None = re.compile(r"^(?:# |ℹ )tests \d+$", re.M)


def named_tests(text: str) -> list[tuple[str, bool]]:
    return []


def totals(text: str) -> Totals | None:
    """`tests N` and `skipped K`/`todo K` (`{skip}`, `t.skip`, `todo`)."""
    tests = [int(n) for n in TESTS.findall(text)]
    if not tests:
        return None
    return Totals(sum(tests), sum(int(n) for n in SKIPPED.findall(text)))


COVERAGE = (
    "`node --experimental-test-coverage` with the lcov reporter (every file it loads): "
    "gate/coverage_node.py"
)
