"""jest: JUnit through the jest-junit reporter (a package of its own)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import EnvironmentAdvice, FailedAt, InitJUnit, Read, Signature, Totals

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

JUNIT_HINT: str | None = (
    "jest: `npm install --save-dev jest-junit`, run `jest --ci "
    "--reporters=default --reporters=jest-junit` and set `validation.junit: [junit.xml]`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(
    r"--reporters?[= ](?:default,)?(?:junit|jest-junit)\b"
)
JUNIT_FILE: re.Pattern[str] | None = re.compile(r"JEST_JUNIT_OUTPUT_FILE=([^\s'\"]+\.xml)")


def junit_command(command: str) -> str | None:
    return None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    return {}


def junit_arg(command: str) -> str | None:
    return None


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    return []


SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"Cannot find module '(?:jest|ts-jest)'"), "runner missing"),
    Signature(
        re.compile(r"Could not resolve a module for a custom reporter", re.I), "reporter missing"
    ),
    Signature(re.compile(r"No tests found, exiting with code"), "no tests"),
)
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
FAILED_TEST: str | None = r"\s*(?:✕|×) "

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""


def failed_at(output: str) -> list[FailedAt]:
    return []


CONFIG_GLOBS: tuple[str, ...] = ("jest.config.*",)
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
# jest's default cacheDirectory: `<realpath of os.tmpdir()>/jest_<uid in base 36>` (jest-config's
# getCacheDirectory; no variable moves it). Its haste map, transform and perf caches are named by
# the config's id, a hash of rootDir: warm only for a checkout at the same path
# (security/warm_caches.py, `TMPDIR_CACHES`).
TMPDIR_CACHES: tuple[str, ...] = ("jest_*",)


def user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    return []


def is_checkout_cache(folder: Path) -> bool:
    return False


ARTIFACT_GLOBS: tuple[str, ...] = (".jest-cache/**",)

RAN_COUNT: re.Pattern[str] | None = None


def named_tests(text: str) -> list[tuple[str, bool]]:
    return []


def totals(text: str) -> Totals | None:
    return None


COVERAGE = (
    "jest's own coverage (`--coverage --collectCoverageFrom=<the change's sources>`) "
    "written as LCov: gate/coverage_node.py"
)
