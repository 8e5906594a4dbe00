"""Telling a configuration error from a failing test.

A setup command that fails, or a test command that cannot start (exit 126/127, "command not
found", a missing npm script, no tests collected at all), is not something the model can fix
by editing code: the run ends as a configuration error (status `error`, reason `config`,
exit 2) with the command and the tail of its output. The same test, on a base-commit run,
makes the baseline unavailable instead of "also fails on the base commit" (gate/baseline.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.report import CommandResult, Round
from codegen_ci.security.output_normalise import strip_ansi
from codegen_ci.workspace.proc import read_head_tail

TAIL_CHARS = 1500
NOT_STARTED = (
    (re.compile(r"^(?:\S+: )?(?:line \d+: )?\S+: command not found$", re.M), "command not found"),
    (re.compile(r"npm (?:ERR!|error) Missing script"), "no such npm script"),
    (re.compile(r"(?:ERR_PNPM_NO_SCRIPT|Command \"[\w:-]+\" not found)"), "no such script"),
    (re.compile(r"Cannot find module '[^']*node_modules[^']*'|Cannot find module '(?:jest|"
                r"vitest|mocha|ts-jest)'"), "the test runner is not installed"),
    (re.compile(r"No tests found, exiting with code|No test files found"), "no tests found"),
    (re.compile(r"^Error: No test files found", re.M), "no tests found"),
    (re.compile(r"^(?:# |ℹ )tests 0$", re.M), "no tests found"),  # node --test
)  # fmt: skip
GO_NO_TESTS = re.compile(r"^\?\s+\S+\s+\[no test files\]\s*$", re.M)
GO_RAN = re.compile(r"^(?:ok|FAIL|---|=== RUN|PASS|DONE [1-9]\d* tests?)\b", re.M)


class ConfigError(InputError):
    """The repository's commands cannot work as configured (exit 2, reason `config`)."""


def output_tail(record: CommandResult, chars: int = TAIL_CHARS) -> str:
    if not record.output_path or not Path(record.output_path).is_file():
        return ""
    return strip_ansi(read_head_tail(Path(record.output_path), chars)).strip()


def not_started(record: CommandResult) -> str | None:
    """Why a test command did not run any test, or None when it ran some (passing or not);
    a pre-flight pytest run that only collected is judged by its exit code and output."""
    collect_only = record.collect_only
    if record.skipped or record.timed_out or record.exit_code is None:
        return None
    if record.exit_code in (126, 127):
        return f"command not found or not executable (exit {record.exit_code})"
    text = output_tail(record, 20_000)
    if record.exit_code == 5 and "pytest" in record.command + text:
        return "no tests collected (pytest exit 5)"
    if record.exit_code != 0 or not collect_only:
        for pattern, reason in NOT_STARTED:
            if pattern.search(text) and not record.junit_tests:
                return f"{reason} (exit {record.exit_code})"
    if GO_NO_TESTS.search(text) and not GO_RAN.search(text) and not record.junit_tests:
        return "no test files in any package"
    if not collect_only and record.junit_tests == 0 and record.exit_code == 0:
        return "its JUnit report lists no tests"
    return None


def base_run_problem(record: CommandResult, expects_junit: bool, whole_suite: bool) -> str | None:
    """Why a base-commit run cannot tell a pre-existing failure from a new one (it could not
    start, timed out, or wrote no JUnit where one was expected); None when it can. A run of
    selected tests may legitimately select none (tests the change added)."""
    if record.exit_code in (126, 127) or (whole_suite and (reason := not_started(record))):
        return reason if whole_suite and reason else f"command not found (exit {record.exit_code})"
    if record.timed_out and whole_suite:
        return "timed out"
    if expects_junit and record.junit_tests is None:
        return "it wrote no JUnit report"
    return None


def check_round(rnd: Round) -> None:
    """Raise `ConfigError` when setup failed or a test command could not start."""
    for record in rnd.commands:
        if record.kind == "setup" and (record.timed_out or record.exit_code != 0):
            raise ConfigError(_message(record, f"setup failed ({record.state})"))
        if record.kind == "test" and (reason := not_started(record)):
            raise ConfigError(_message(record, f"the test command could not run: {reason}"))


def _message(record: CommandResult, what: str) -> str:
    key = "validation.setup" if record.kind == "setup" else "validation.test"
    tail = output_tail(record) or "(no output)"
    return (f"configuration error: {what}\n  command: {record.command}\n"
            f"Fix {key} in the spec or .codegen.yml (and install what it needs in "
            f"validation.setup or the workflow); the model is not asked to fix this.\n"
            f"Last lines of its output:\n{tail}")  # fmt: skip
