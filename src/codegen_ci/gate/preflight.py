"""The pre-flight: the repository's setup, lint and test commands on the untouched code, before
the first model call, so a configuration the model cannot fix costs no tokens, lint that
already fails is known as pre-existing (gate/validation.py), and test commands that write no
JUnit get a note (`junit_hint`, gate/junit/capture.py). `--dry-run` is the pre-flight with every
test command run in full (`dry_run`).

Cost: setup runs here instead of in round 1 (no extra run); a pytest command only collects
(through codegen-ci's plugin, which lists the collected tests: the base commit's tests, that
the change must keep, gate/kept_tests.py);
any other test command runs its suite once more, and that run then answers the baseline's
question (which failures are pre-existing) without a separate base-commit worktree.

Telling a configuration error from a failing test: a setup command that fails, or a test or lint
command that cannot start (exit 126/127, "command not found", a missing npm script, a test
reporter that is not installed, options the runner refuses (pytest's "unrecognized arguments":
`--cov` without pytest-cov), a package manager that tries to download itself with no
network), a test command that ran no test (no tests collected at all), a spec with no test
command, `validation.junit` globs that matched nothing after the tests ran, or tests that cannot
import the repository's own package on the untouched code (not installed, not on PYTHONPATH, or
failing inside its own code for a file the build writes or a dependency not installed:
gate/project_imports.py), is not something the model can fix by editing code: the run ends
as a configuration error (status `error`, reason `config`, exit 2) before any model call, with
the command and the tail of its output. A command that cannot start, on a base-commit run,
makes the baseline unavailable instead of "also fails on the base commit" (gate/baseline.py).
The pre-flight stops at the first lint or test command that cannot start (exit 126/127): the
run ends as a configuration error anyway, so the commands after it are recorded as skipped,
not run (a test suite's minutes for an answer already known; only the first such command is
named, fixed, the next run names the next).

"No test, no success": a gate that runs no test cannot tell a fix from a break, so no test
command, or one that ran none, is an error unless `validation.allow_no_tests` says otherwise.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from codegen_ci import runners
from codegen_ci.errors import InputError
from codegen_ci.gate.environment_check import (
    Cause,
    SandboxView,
    record_cause,
    untouched_code_cause,
)
from codegen_ci.gate.junit.capture import junit_hint
from codegen_ci.gate.project_imports import project_not_importable
from codegen_ci.gate.validation import RoundOutcome, Validator
from codegen_ci.report import (
    CommandResult,
    JUnitMissing,
    PreexistingLint,
    Reason,
    Report,
    Round,
    Status,
)
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import strip_ansi
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.proc import read_head_tail


class Seeded(Protocol):
    """What takes the pre-flight's full test runs as the base commit's answer (the baseline,
    the proof)."""

    def seed(self, preflight: RoundOutcome, tree: Path) -> None: ...


def run_preflight(
    validator: Validator, baseline: Seeded, report: Report, cwd: Path, *more: Seeded
) -> None:
    """Run the pre-flight round; raise `ConfigError` when the commands cannot work."""
    check_tests_configured(validator.validation)
    outcome = validator.preflight()
    report.preflight = outcome.round
    check_imports_found(validator, report)
    note_preexisting_lint(report, outcome)
    note_missing_junit(report, outcome.round, cwd)
    check_round(outcome.round, validator.validation, cwd, SandboxView.of(validator.sandbox))
    for seeded in (baseline, *more):
        seeded.seed(outcome, cwd)


def check_imports_found(validator: Validator, report: Report) -> None:
    """Note where the commands import the repository's own code from; raise `ConfigError`
    when it is not the worktree and cannot be made so (gate/project_source.py)."""
    check = validator.state.imports
    if check is None:
        return
    report.imports = list(check.seen)
    if check.problem:
        raise ConfigError(
            f"configuration error: {check.problem}.\nThe model is not asked to fix this."
        )


def note_preexisting_lint(report: Report, outcome: RoundOutcome) -> None:
    """Lint commands that fail on the untouched code: reported, left to the user."""
    report.preexisting_lint = [
        PreexistingLint(command=command, errors=errors[:20])
        for command, errors in outcome.preexisting_lint.items()
    ]


def note_missing_junit(report: Report, rnd: Round, cwd: Path) -> None:
    """Record each test command that ran and wrote no JUnit report, with how to get one."""
    known = {m.command for m in report.junit_missing}
    for record in rnd.commands:
        ran = record.kind == "test" and not (record.skipped or record.timed_out)
        ran = ran and not record.collect_only
        if ran and record.junit_tests is None and record.command not in known:
            known.add(record.command)
            hint = junit_hint(record.command, cwd)
            report.junit_missing.append(JUnitMissing(command=record.command, hint=hint))


def dry_run(
    validator: Validator,
    report: Report,
    worktree_path: Path,
    output_dir: Path,
    first_prompt: Callable[[], str],
) -> None:
    """`--dry-run`: the pre-flight on the untouched code with every test command run in full
    (no collect-only), and the first prompt the model would get, written to first-prompt.md; no
    model call, no commit. A configuration error ends it as it would end a run (exit 2)."""
    check_tests_configured(validator.validation)
    outcome = validator.preflight(full=True)
    report.rounds.append(outcome.round)
    report.iterations = 0
    check_imports_found(validator, report)
    note_preexisting_lint(report, outcome)
    note_missing_junit(report, outcome.round, worktree_path)
    view = SandboxView.of(validator.sandbox)
    check_round(outcome.round, validator.validation, worktree_path, view)
    (output_dir / "first-prompt.md").write_text(REDACTOR.redact(first_prompt()), encoding="utf-8")
    report.finish(Status.SUCCESS if outcome.passed else Status.FAILED, Reason.DRY_RUN)


# Configuration errors: what the model cannot fix.

TAIL_CHARS = 1500
NO_TESTS = "no tests found"
REPORTER_MISSING = "a test reporter is not installed"
RUNNER_MISSING = "the test runner is not installed"
OPTIONS_REFUSED = (
    "the test runner refused options of its command line (is the plugin that adds them installed "
    "for the interpreter the command uses?)"
)
# Signatures of a command that never ran a test: the shell's and package managers' here, each
# runner's own in its module (runners/: `SIGNATURES`); the first that matches says why.
NOT_STARTED = (
    (re.compile(r"^(?:\S+: )?(?:line \d+: )?\S+: command not found$", re.M), "command not found"),
    (re.compile(r"npm (?:ERR!|error) Missing script"), "no such npm script"),
    (re.compile(r"(?:ERR_PNPM_NO_SCRIPT|Command \"[\w:-]+\" not found)"), "no such script"),
    (re.compile(r"Cannot find module '[^']*node_modules[^']*'"), RUNNER_MISSING),
    # @borderless/ts-scripts (`ts-scripts test`: jshttp's, pillarjs' and blakeembrey's packages)
    # finds vitest, prettier and tsc in node_modules by path and says so when one is not there
    (
        re.compile(r"^❌ Unable to resolve: [\w@.-]+/\S+$", re.M),
        "a tool the test script runs is not installed (ts-scripts found no such file in "
        "node_modules)",
    ),
    *((pattern, RUNNER_MISSING) for pattern in runners.signatures("runner missing")),
    *((pattern, REPORTER_MISSING) for pattern in runners.signatures("reporter missing")),
    *((pattern, OPTIONS_REFUSED) for pattern in runners.signatures("options refused")),
    (re.compile(r"Cannot find module '[^']*reporter[^']*'", re.I), REPORTER_MISSING),
    (
        re.compile(
            r"Corepack is about to download|Error when performing the request to "
            r"https?://\S*(?:pnpm|yarn|yarnpkg)|UsageError: This project is configured to "
            r"use (?:pnpm|yarn)|ERR_PNPM_(?:META_FETCH|FETCH)_FAIL\b.*(?:pnpm|yarn)|"
            r"Internal Error: .*(?:getaddrinfo|ENOTFOUND|EAI_AGAIN).*(?:pnpm|yarn)"
        ),
        "the package manager tried to download itself (no network for commands: install it "
        "in the workflow, e.g. pnpm/action-setup, or `corepack enable` with its version cached)",
    ),
    *((pattern, NO_TESTS) for pattern in runners.signatures("no tests")),
)


# No test file anywhere (Go's `[no test files]` for every package): asked after the others.
NO_TEST_FILES = runners.start_failures("no test files")


class ConfigError(InputError):
    """The repository's commands cannot work as configured (exit 2, reason `config`)."""


def output_tail(record: CommandResult, chars: int = TAIL_CHARS) -> str:
    if not record.output_path or not Path(record.output_path).is_file():
        return ""
    return strip_ansi(read_head_tail(Path(record.output_path), chars)).strip()


def shown_output(record: CommandResult, chars: int = TAIL_CHARS) -> str:
    """The head and tail of a command's output as a configuration error shows them: the
    backtraces its toolchain printed (`RUST_BACKTRACE` set: rustup's own error with ~20
    frames) left out, so what is left is the error (runners' `BACKTRACE`)."""
    text = runners.without_backtraces(output_tail(record, 20 * chars))
    if len(text) <= chars:
        return text
    head = int(chars * 0.4)
    return f"{text[:head]}\n... [output cut] ...\n{text[head - chars :]}"


def not_started(record: CommandResult) -> str | None:
    """Why a test command did not run any test, or None when it ran some (passing or not);
    a pre-flight pytest run that only collected is judged by its exit code and output."""
    collect_only = record.collect_only
    if record.skipped or record.timed_out or record.exit_code is None:
        return None
    if record.exit_code in (126, 127):
        return f"command not found or not executable (exit {record.exit_code})"
    text = output_tail(record, 20_000)
    if record.exit_code != 0 and (module := module_not_installed(record.command, text)):
        return (
            f"`{module}` is not installed for the interpreter it runs with (No module named "
            f"{module}; exit {record.exit_code})"
        )
    if runner := runners.no_tests_exit(record.exit_code, record.command + text):
        return f"no tests collected ({runner.NAME} exit {record.exit_code})"
    if record.kind == "lint":
        return _not_started_lint(record, text)
    if record.exit_code != 0 or not collect_only:
        for pattern, reason in NOT_STARTED:
            if pattern.search(text) and not record.junit_tests:
                return f"{reason} (exit {record.exit_code})"
    if any(s.found(text) for s in NO_TEST_FILES) and not record.junit_tests:
        return "no test files in any package"
    if not collect_only and record.junit_tests == 0 and record.exit_code == 0:
        return "it ran 0 tests (its test report lists none)"
    return None


# `python -m tool` (or `coverage run -m tool`) when `tool` is not installed: the program runs
# and exits 1, which is no exit 127, yet nothing of the command ran (`.venv/bin/python -m
# pytest` in a venv made from CI's `pip install -e .` alone). Only a module the command names
# counts: a test that prints such a line itself is not the command failing to start.
RUN_MODULE = re.compile(r"(?:^|\s)-m\s+([A-Za-z_][\w.]*)")


def module_not_installed(command: str, text: str) -> str | None:
    """The module `command` runs with `-m` when its output says Python (or coverage) found no
    such module, else None. A missing submodule of a package that is there (`No module named
    pkg.new`) is not named: the task may be to write it."""
    module: str
    for module in RUN_MODULE.findall(command):
        name = re.escape(module)
        top = re.escape(module.split(".")[0])
        missing = re.compile(
            rf"^(?:\S*python[\w.]*: )?(?:No module named '?{top}'?|Error while finding module "
            rf"specification for '{name}' \(ModuleNotFoundError: No module named '{top}'\))$",
            re.M,
        )
        if missing.search(text):
            return module.split(".")[0]
    return None


def _not_started_lint(record: CommandResult, text: str) -> str | None:
    if record.exit_code == 0:
        return None
    for pattern, reason in NOT_STARTED:
        if reason != NO_TESTS and "reporter" not in reason and pattern.search(text):
            reason = reason.replace("the test runner", "the linter")
            return f"{reason} (exit {record.exit_code})"
    return None


def ran_no_tests(reason: str) -> bool:
    """A `not_started` reason that means "ran, found nothing" (allowed by allow_no_tests)."""
    return any(
        key in reason for key in (NO_TESTS, "no tests collected", "ran 0 tests", "no test files")
    )


def check_tests_configured(validation: Validation) -> None:
    """No test command at all: a configuration error unless the spec allows it explicitly."""
    if validation.test or validation.allow_no_tests:
        return
    raise ConfigError(NO_TEST_COMMAND)


NO_TEST_COMMAND = (
    "configuration error: no test command (validation.test is empty). A gate that runs no "
    "test cannot tell a fix from a break, so the run would end as a success whatever the model "
    "changed. Add the repository's test command to validation.test in the spec or "
    ".codegen.yml (`codegen-ci init` looks for it), or set `validation.allow_no_tests: true` to "
    "let lint and exit codes alone decide; the model is not asked to fix this."
)


def check_round(
    rnd: Round, validation: Validation, cwd: Path, view: SandboxView | None = None
) -> None:
    """Raise `ConfigError` when the run failed for its environment with no test naming a
    reason of its own (a program or toolchain not found, the network refused:
    gate/environment_check.py), setup failed, a lint or test command could not start, a test
    command ran no test (unless allowed), the tests cannot import the repository's own package
    (gate/project_imports.py), or the JUnit globs matched nothing. `rnd` ran on the untouched
    code (the pre-flight or the dry run). `view`: how to name the sandbox's places."""
    view = view or SandboxView(Path.home())
    network = validation.network
    for record in rnd.commands:
        if record.kind == "setup" and (record.timed_out or record.exit_code != 0):
            if cause := record_cause(record, network, view):
                raise ConfigError(_environment_message(cause, view))
            raise ConfigError(_message(record, f"setup failed ({record.state})", view=view))
        reason = not_started(record) if record.kind in ("lint", "test") else None
        if reason and not (validation.allow_no_tests and ran_no_tests(reason)):
            generic = reason.startswith("command not found")
            if generic and (cause := record_cause(record, network, view)):
                raise ConfigError(_environment_message(cause, view))
            raise ConfigError(
                _message(record, f"the {record.kind} command could not run: {reason}", view=view)
            )
        if problem := project_not_importable(record, cwd):  # on the untouched code only
            raise ConfigError(_message(record, problem, view=view))
    if cause := untouched_code_cause(rnd, network, view):
        raise ConfigError(_environment_message(cause, view))
    _check_junit_globs(rnd, validation, cwd)


def _environment_message(cause: Cause, view: SandboxView) -> str:
    record = cause.record
    tail = view.user_terms(shown_output(record)) or "(no output)"
    return (
        f"configuration error: the {record.kind} command could not run on the untouched "
        f"code, for its environment, not its code: {cause.what} (exit {record.exit_code})\n"
        f"  command: {record.command}\n"
        f"  output: {cause.line}\n{cause.advice}\nThe model is not asked to fix this.\n"
        f"Last lines of its output:\n{tail}"
    )


def _check_junit_globs(rnd: Round, validation: Validation, cwd: Path) -> None:
    """`validation.junit` set, every test command ran in full, and none wrote a file the
    globs match: the gate would go by exit codes while the spec asked for JUnit. Globs that
    matched only what the tool refused to read or could not parse (a link, a FIFO, a report
    over the size cap: the round's parse problems) are named as such: the gate cannot judge by
    them either, and the spec or the test command is the user's to fix."""
    tests = [c for c in rnd.commands if c.kind == "test"]
    ran = [c for c in tests if not (c.skipped or c.collect_only or c.timed_out)]
    if not validation.junit or not ran or len(ran) != len(tests):
        return
    if any(c.junit_tests is not None for c in ran):
        return
    globs = ", ".join(validation.junit)
    if rnd.parse_problems:  # the globs matched, but nothing they matched could be used
        raise ConfigError(
            _message(
                ran[0],
                f"validation.junit ({globs}) matched only reports that could not be read: "
                + "; ".join(rnd.parse_problems[:5]),
                key="validation.junit",
            )
        )
    found = sorted({f for c in ran for f in junit_files_written(c, cwd)})
    where = (
        f"; the command did write {', '.join(found)}: add it to validation.junit"
        if found
        else "; no JUnit file from it was found either"
    )
    raise ConfigError(
        _message(
            ran[0],
            f"validation.junit ({globs}) matched no file after the test command ran{where}",
            key="validation.junit",
        )
    )


XML_PATH = re.compile(r"[\w./@~+-]*[\w-]\.xml\b")
JUNIT_NAMES = ("**/*junit*.xml", "**/TEST-*.xml", "reports/**/*.xml", "test-results/**/*.xml")


def junit_files_written(record: CommandResult, cwd: Path) -> list[str]:
    """JUnit-looking files the command wrote: `.xml` paths its output names that exist, and
    files by the usual names changed while it ran (outside dependency folders)."""
    found: set[str] = set()
    for match in XML_PATH.findall(output_tail(record, 200_000)):
        path = (cwd / match).resolve()
        if path.is_file() and path.is_relative_to(cwd.resolve()):
            found.add(path.relative_to(cwd.resolve()).as_posix())
    since = time.time() - record.duration_s - 5
    for pattern in JUNIT_NAMES:
        for path in cwd.glob(pattern):
            rel = path.relative_to(cwd).as_posix()
            if "node_modules/" in rel or rel.startswith((".git/", ".venv/")):
                continue
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_mtime >= since:
                    found.add(rel)
    return sorted(found)[:5]


def _message(
    record: CommandResult, what: str, key: str | None = None, view: SandboxView | None = None
) -> str:
    key = key or f"validation.{record.kind}"
    tail = shown_output(record) or "(no output)"
    tail = view.user_terms(tail) if view else tail
    return (
        f"configuration error: {what}\n  command: {record.command}\n"
        f"Fix {key} in the spec or .codegen.yml (and install what it needs in "
        f"validation.setup or the workflow); the model is not asked to fix this.\n"
        f"Last lines of its output:\n{tail}"
    )
