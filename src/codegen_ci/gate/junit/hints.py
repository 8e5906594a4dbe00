"""How to make a test runner write JUnit XML, for a test command that wrote none.

Without JUnit the gate can only go by exit codes: no failing test ids for the reflection,
no baseline per test, "tests: unknown" in reports. The hint names the runner the command
uses (looking through `npm test`/`pnpm run x`/`yarn x` into package.json's scripts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SCRIPT = re.compile(r"^\s*(?:npm|pnpm|yarn|bun)\s+(?:run(?:-script)?\s+)?([\w:.-]+)")
HINTS = (
    (re.compile(r"\bvitest\b"), "vitest: add `--reporter=default --reporter=junit "
     "--outputFile.junit=junit.xml` and set `validation.junit: [junit.xml]`"),
    (re.compile(r"\bjest\b"), "jest: `npm install --save-dev jest-junit`, run `jest --ci "
     "--reporters=default --reporters=jest-junit` and set `validation.junit: [junit.xml]`"),
    (re.compile(r"\bmocha\b"), "mocha: `npm install --save-dev mocha-junit-reporter`, run "
     "`mocha --reporter mocha-junit-reporter --reporter-options mochaFile=junit.xml` and set "
     "`validation.junit: [junit.xml]`"),
    (re.compile(r"\bnode\b.*--test\b"), "node's test runner: add `--test-reporter=spec "
     "--test-reporter-destination=stdout --test-reporter=junit "
     "--test-reporter-destination=junit.xml` and set `validation.junit: [junit.xml]`"),
    (re.compile(r"\bgo\s+test\b|\bgotestsum\b"), "go: run `gotestsum --junitfile junit.xml -- "
     "./...` instead of `go test ./...` and set `validation.junit: [junit.xml]`"),
    (re.compile(r"\bcargo\b"), "cargo: run `cargo nextest run --profile ci` with "
     "`[profile.ci.junit] path = \"junit.xml\"` in .config/nextest.toml and set "
     "`validation.junit: [target/nextest/ci/junit.xml]`"),
    (re.compile(r"\bpytest\b|\btox\b|\bnox\b"), "pytest: with `validation.junit` empty it gets "
     "`--junitxml` automatically; with globs set, pass `--junitxml=<file>` matching them"),
)  # fmt: skip
GENERIC = ("make the command write a JUnit XML report and list the file in `validation.junit` "
           "(pytest gets one automatically)")  # fmt: skip


# The command (or the script it runs) already asks its runner for JUnit: suggesting the same
# flags again would be no help; what is missing is the file in `validation.junit`.
ASKS_FOR_JUNIT = re.compile(
    r"--reporters?[= ](?:default,)?(?:junit|jest-junit)\b|mocha-junit-reporter|"
    r"--test-reporter=junit|--junitfile\b|--junit(?:xml)?\b|--reporter[= ]junit"
)
JUNIT_FILE = re.compile(
    r"(?:--outputFile(?:\.junit)?[= ]|mochaFile=|--test-reporter-destination=|--junitfile[= ]|"
    r"JEST_JUNIT_OUTPUT_FILE=|--junitxml[= ])([^\s'\"]+\.xml)"
)


def junit_hint(command: str, cwd: Path) -> str:
    """The way to get JUnit from the runner `command` uses; when it already asks for JUnit,
    where the report goes instead (what `validation.junit` must match)."""
    text = command + " " + _script(command, cwd)
    if ASKS_FOR_JUNIT.search(text):
        written = JUNIT_FILE.search(text)
        target = f"`{written[1]}`" if written else "the file it writes"
        default = " (jest-junit's default is junit.xml)" if "jest-junit" in text else ""
        return (
            f"the command already asks for JUnit; list {target}{default} in "
            "`validation.junit` (a glob relative to the repository) so the gate reads it"
        )
    for pattern, hint in HINTS:
        if pattern.search(text):
            return hint
    return GENERIC


def _script(command: str, cwd: Path) -> str:
    """The package.json script an `npm test`-style command runs ("" if none)."""
    match = SCRIPT.match(command)
    if not match:
        return ""
    try:
        scripts = json.loads((cwd / "package.json").read_text(encoding="utf-8")).get("scripts")
    except (OSError, ValueError, AttributeError):
        return ""
    value = scripts.get(match.group(1)) if isinstance(scripts, dict) else None
    return value if isinstance(value, str) else ""
