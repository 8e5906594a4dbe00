"""Validation: the repository's own commands, run by the harness, decide.

A round runs `setup` (first round only), then `lint`, then `test`. A lint failure skips the
tests. When the previous round had failing tests and the test command is pytest, the round
first re-runs only those tests; the full suite runs only when they pass. pytest gets a
`--junitxml` outside the repository (through PYTEST_ADDOPTS) when no `junit` glob is set.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci import pytest_ids
from codegen_ci.junit import JUnitResult, parse_files
from codegen_ci.proc import ProcResult, run_shell
from codegen_ci.report import CommandKind, CommandResult, Failure, Round
from codegen_ci.spec import Validation
from codegen_ci.workspace import Worktree

LINT_LINE = re.compile(r"^(?P<path>[\w./\\-]+\.\w+):(?P<line>\d+)(?::\d+)?:?\s+(?P<msg>.+)$")
MAX_LINT_ERRORS = 50


class CommandObserver:
    def command_started(self, kind: str, command: str) -> None: ...
    def command_finished(self, result: CommandResult) -> None: ...


@dataclass
class RoundOutcome:
    """A finished round: the report's view, plus what reflection needs."""

    round: Round
    junit: JUnitResult
    lint_errors: list[str] = field(default_factory=list)
    # (command, kind, head-and-tail output) of failed commands
    failed_outputs: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.round.passed

    def signature(self) -> frozenset[str]:
        """Failing test ids, lint errors, and failing commands without either."""
        sig = {f"test:{c.id}" for c in self.junit.failing()}
        sig |= {f"lint:{e}" for e in self.lint_errors}
        if not sig:
            sig |= {f"cmd:{kind}:{cmd}" for cmd, kind, _ in self.failed_outputs}
        return frozenset(sig)

    def failing_ids(self) -> list[str]:
        return [c.id for c in self.junit.failing()]


@dataclass
class Validator:
    validation: Validation
    worktree: Worktree
    output_dir: Path
    env: Mapping[str, str]
    observer: CommandObserver = field(default_factory=CommandObserver)
    excerpt_chars: int = 6000
    setup_done: bool = False
    _seq: int = 0

    def run_round(self, iteration: int, previous: RoundOutcome | None) -> RoundOutcome:
        rnd = Round(iteration=iteration)
        outcome = RoundOutcome(rnd, JUnitResult([], [], []))
        if not self.setup_done:
            for command in self.validation.setup:
                if not self._run(command, "setup", iteration, outcome).ok:
                    return self._finish(outcome)
            self.setup_done = True
        for command in self.validation.lint:
            result = self._run(command, "lint", iteration, outcome)
            if not result.ok:
                outcome.lint_errors.extend(lint_errors(result.excerpt(200_000)))
        if outcome.failed_outputs:
            for command in self.validation.test:
                rnd.commands.append(CommandResult(
                    command=command, kind="test", exit_code=None, duration_s=0.0, skipped=True
                ))  # fmt: skip
            return self._finish(outcome)
        self._run_tests(iteration, previous, outcome)
        return self._finish(outcome)

    def _run_tests(self, iteration: int, previous: RoundOutcome | None, out: RoundOutcome) -> None:
        targets = previous.failing_ids() if previous else []
        if targets and len(self.validation.test) == 1:
            targeted = pytest_ids.targeted_command(
                self.validation.test[0], targets, self.worktree.path
            )
            if targeted:
                trial = RoundOutcome(Round(iteration=iteration), JUnitResult([], [], []))
                self._run(targeted, "test", iteration, trial, targeted=True)
                out.round.commands.extend(trial.round.commands)
                if trial.failed_outputs or trial.junit.failing():
                    out.junit, out.failed_outputs = trial.junit, trial.failed_outputs
                    return
        for command in self.validation.test:
            self._run(command, "test", iteration, out)

    def _run(
        self,
        command: str,
        kind: CommandKind,
        iteration: int,
        outcome: RoundOutcome,
        *,
        targeted: bool = False,
    ) -> ProcResult:
        self._seq += 1
        tag = f"round-{iteration}-{self._seq:02d}-{kind}"
        log = self.output_dir / "logs" / f"{tag}.log"
        env = dict(self.env)
        junit_out = self.output_dir / "junit" / f"{tag}.xml"
        if kind == "test" and not self.validation.junit and pytest_ids.mentions_pytest(command):
            junit_out.parent.mkdir(parents=True, exist_ok=True)
            env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={junit_out}"
        self.observer.command_started(kind, command)
        before = self.worktree.snapshot()
        started = time.time()
        result = run_shell(
            command,
            cwd=self.worktree.path,
            env=env,
            timeout=self.validation.timeout,
            output_path=log,
        )
        self.worktree.note_artifacts(before)
        record = CommandResult(
            command=command,
            kind=kind,
            exit_code=result.exit_code,
            duration_s=round(result.duration_s, 3),
            timed_out=result.timed_out,
            output_path=str(log),
            targeted=targeted,
        )
        outcome.round.commands.append(record)
        self.observer.command_finished(record)
        if kind == "test":
            files = [junit_out] if junit_out.exists() else self._collect_junit(started, tag)
            outcome.junit = outcome.junit.merge(parse_files(files))
        if not result.ok:
            outcome.failed_outputs.append((command, kind, result.excerpt(self.excerpt_chars)))
        return result

    def _collect_junit(self, started: float, tag: str) -> list[Path]:
        """Copies of the JUnit files the spec's globs match, written by this command."""
        found = []
        for pattern in self.validation.junit:
            for path in sorted(self.worktree.path.glob(pattern)):
                if path.is_file() and path.stat().st_mtime >= started - 1:
                    copy = self.output_dir / "junit" / f"{tag}-{len(found)}-{path.name}"
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, copy)
                    found.append(copy)
        return found

    def _finish(self, outcome: RoundOutcome) -> RoundOutcome:
        rnd = outcome.round
        rnd.tests = outcome.junit.totals()
        rnd.parse_problems = list(outcome.junit.problems)
        failures = outcome.junit.failures()
        failures += [Failure(id=e, message=e, kind="lint") for e in outcome.lint_errors]
        if not failures:
            failures = [
                Failure(id=f"{kind}: {cmd}", message=_last_line(text), kind="command")
                for cmd, kind, text in outcome.failed_outputs
            ]
        rnd.failures = failures
        rnd.passed = not outcome.failed_outputs
        return outcome


def lint_errors(output: str) -> list[str]:
    """`path:line[:col]: message` lines, normalised; the head of the output if none match."""
    errors = []
    for raw in output.splitlines():
        match = LINT_LINE.match(raw.strip())
        if match:
            errors.append(f"{match['path']}:{match['line']}: {match['msg'].strip()}")
            if len(errors) >= MAX_LINT_ERRORS:
                break
    return errors


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def environment_for_commands(
    environ: Mapping[str, str], passthrough: list[str], scrub: Callable[..., dict[str, str]]
) -> dict[str, str]:
    """The environment commands run with: secrets removed, CI marked."""
    env = scrub(environ, passthrough=passthrough)
    env.setdefault("CI", os.environ.get("CI", "true"))
    return env
