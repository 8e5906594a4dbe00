"""Validation: the repository's own commands, run by the harness, decide.

A round runs `setup` (until it has passed once; the pre-flight normally has, on the untouched
code, and what it left in the scratch starts every later phase. A resumed run has no
pre-flight: its setup runs on the model's code, so it is not kept and runs in every round),
then every `lint` command, then `test`; a lint failure skips the tests. Success means every
command exited 0, and some test ran (unless `validation.allow_no_tests`): a round whose test
commands all wrote JUnit listing no test fails.

Lint gets the same baseline as tests: the pre-flight runs each lint command on the untouched
code. One that fails there is *pre-existing*: the report lists it (`preexisting_lint`), it is
left to the user, and in the rounds it neither skips the tests nor fails the round, unless the
change adds lint errors of its own (an error is `path: message`, line numbers aside, that the
base run did not print). So no round is spent on lint the model did not break.

Targeted re-runs: when the last round that ran tests had failing tests and there is one test
command, which runs pytest, the round runs it with the `codegen_first` plugin
(runners/pytest_first.py): the previously failing tests run first, and if one still fails
the session stops there; that is the round's answer, at the price of those tests (`targeted` in the
report). When they pass, the same process goes on through the full suite. So a run pays the
full suite about twice, and each round one pytest start-up. Where the plugin cannot be loaded
(or the command runs xdist), the command is rewritten to the failing node ids instead
(gate/runners/pytest_ids.py), and the full suite runs after it only when they pass.

JUnit: `<output>/junit/` holds every report a test command wrote (gate/junit/capture.py). Lint
output is read for `path:line: message` errors (gate/lint_output.py); the round's result is a
`RoundOutcome` (gate/round_outcome.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codegen_ci.gate.command_places import command_places
from codegen_ci.gate.junit.capture import run_test_command
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.lint_output import lint_errors, lint_key
from codegen_ci.gate.round_outcome import FailedCommand, RoundOutcome
from codegen_ci.gate.runners import pytest_first, pytest_ids
from codegen_ci.gate.runners.pytest_first import FirstStatus
from codegen_ci.report import CommandKind, CommandResult, Round
from codegen_ci.security.output_normalise import strip_ansi
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.spec.model import Validation
from codegen_ci.workspace import output_cap
from codegen_ci.workspace.proc import ProcResult, run_shell
from codegen_ci.workspace.worktree import Worktree


class CommandObserver(Protocol):
    def command_started(self, kind: str, command: str) -> None: ...
    def command_finished(self, result: CommandResult) -> None: ...


class QuietObserver:
    def command_started(self, kind: str, command: str) -> None:
        pass

    def command_finished(self, result: CommandResult) -> None:
        pass


def round_tag(iteration: int) -> str:
    """How a round's logs and JUnit copies are named: `round-<i>`, or `preflight` (round 0)."""
    return f"round-{iteration}" if iteration else "preflight"


@dataclass
class Validator:
    validation: Validation
    worktree: Worktree
    output_dir: Path
    env: Mapping[str, str]
    observer: CommandObserver = field(default_factory=QuietObserver)
    excerpt_chars: int = 6000
    setup_done: bool = False
    targets: list[str] = field(default_factory=list)  # failing ids of the last tests run
    plugin_usable: bool = True  # False once pytest could not load codegen_first
    sandbox: Sandbox | None = None  # None: unconfined (only where a caller chose so)
    # lint command -> its errors (`path: message`) on the untouched code, when it failed there
    base_lint: dict[str, frozenset[str]] = field(default_factory=dict)
    _seq: int = 0

    def run_round(self, iteration: int, previous: RoundOutcome | None = None) -> RoundOutcome:
        """One round. `previous` is not needed: the validator remembers the last failing
        tests itself, also across a round whose tests were skipped."""
        outcome = RoundOutcome(Round(iteration=iteration))
        self._new_phase()
        if not self.setup_done:
            if not self._setup(outcome):
                return outcome.finish()
            # Run on the model's code (a resumed run has no pre-flight): what it left in the
            # scratch is not kept for later phases, so it runs again in the next round.
            self.setup_done = self.sandbox is None
        for command in self.validation.lint:
            result, _ = self._run(command, "lint", outcome)
            if not result.ok:
                errors = lint_errors(strip_ansi(result.excerpt(200_000)))
                if command in self.base_lint:
                    errors = [e for e in errors if lint_key(e) not in self.base_lint[command]]
                    if not errors:
                        continue  # only what the base commit already had: not the change's
                outcome.lint_errors.extend(errors)
                outcome.failed.append(self._failed(command, "lint", result, bool(errors)))
        if outcome.failed:
            outcome.round.commands += [
                CommandResult(command=c, kind="test", exit_code=None, duration_s=0.0, skipped=True)
                for c in self.validation.test
            ]
        else:
            self._tests(outcome)
        return outcome.finish()

    def _setup(self, outcome: RoundOutcome) -> bool:
        """Run `setup` into `outcome`; False (and the failure recorded) when a command fails."""
        for command in self.validation.setup:
            result, _ = self._run(command, "setup", outcome)
            if not result.ok:
                outcome.failed.append(self._failed(command, "setup", result, False))
                return False
        self.setup_done = True
        return True

    def preflight(self, *, full: bool = False) -> RoundOutcome:
        """Round 0, on the untouched code before any model call: `setup` (once, as a round
        would), each lint command (a failure here is pre-existing: `base_lint`) and each test
        command, to find configuration errors before tokens are spent. A pytest command only
        collects (`--collect-only`), so it costs its start-up; `full` (the dry run) runs it."""
        outcome = RoundOutcome(Round(iteration=0))
        self._new_phase()
        if not self._setup(outcome):
            return outcome.finish()
        if self.sandbox is not None:  # on the untouched code: the start of every later phase
            self.sandbox.keep_setup_state()
        for command in self.validation.lint:
            result, _ = self._run(command, "lint", outcome)
            if not result.ok:
                errors = lint_errors(strip_ansi(result.excerpt(200_000)))
                self.base_lint[command] = frozenset(map(lint_key, errors))
                outcome.preexisting_lint[command] = errors
        for command in self.validation.test:
            collect = not full and pytest_ids.mentions_pytest(command)
            result, junit = self._run(command, "test", outcome, collect_only=collect)
            if not collect:
                self._take(outcome, command, result, junit)
        self._require_tests(outcome)
        return outcome.finish()

    def _tests(self, outcome: RoundOutcome) -> None:
        if not self._targeted(outcome):
            for command in self.validation.test:
                result, junit = self._run(command, "test", outcome)
                self._take(outcome, command, result, junit)
        self._require_tests(outcome)
        self.targets = outcome.failing_ids()

    def _require_tests(self, outcome: RoundOutcome) -> None:
        """No test, no success: test commands that all wrote JUnit listing no test fail the
        round (the model deleted or disabled the tests, or they never existed)."""
        ran = [c for c in outcome.round.commands if c.kind == "test" and not c.collect_only]
        if self.validation.allow_no_tests or not ran or outcome.failed:
            return
        if all(c.junit_tests == 0 for c in ran):
            note = "ran no test (its JUnit report lists none): no test, no success"
            outcome.failed.append(FailedCommand(ran[-1].command, "test", note, False))

    def _targeted(self, outcome: RoundOutcome) -> bool:
        """Start from the previously failing tests; True when that answered the round."""
        if not self.targets or len(self.validation.test) != 1:
            return False
        command = self.validation.test[0]
        if self.plugin_usable and pytest_first.applies(command):
            result, junit = self._run(command, "test", outcome, first=self.targets)
            if self.plugin_usable:
                self._take(outcome, command, result, junit)
                return True
            outcome.round.commands.pop()  # the plugin was refused: that run proves nothing
        targeted = pytest_ids.targeted_command(command, self.targets, self.worktree.path)
        if not targeted:
            return False
        result, junit = self._run(targeted, "test", outcome, targeted=True)
        if junit.failing() or result.timed_out:
            self._take(outcome, targeted, result, junit)
            return True
        return False

    def _take(self, outcome: RoundOutcome, command: str, result: ProcResult,
              junit: JUnitResult) -> None:  # fmt: skip
        outcome.junit = outcome.junit.merge(junit)
        if not result.ok:
            explained = bool(junit.failing()) and not result.timed_out
            outcome.failed.append(self._failed(command, "test", result, explained))

    def _failed(self, command: str, kind: CommandKind, result: ProcResult,
                explained: bool) -> FailedCommand:  # fmt: skip
        return FailedCommand(command, kind, result.excerpt(self.excerpt_chars), explained)

    def _run(self, command: str, kind: CommandKind, outcome: RoundOutcome, *,
             targeted: bool = False, first: list[str] | None = None,
             collect_only: bool = False) -> tuple[ProcResult, JUnitResult]:  # fmt: skip
        """Run one command, record it in the round, and parse the JUnit it wrote (tests).
        `first`: failing ids to run first, through the pytest plugin."""
        iteration = outcome.round.iteration
        self._seq += 1 if iteration else 0  # pre-flight logs do not shift the rounds' names
        n = self._seq if iteration else len(outcome.round.commands) + 1
        tag = f"{round_tag(iteration)}-{n:02d}-{kind}"
        log = self.output_dir / "logs" / f"{tag}.log"
        self.observer.command_started(kind, command)
        snapshot = self.worktree.snapshot()
        self.worktree.before_command()  # a test the model wrote may run git
        status = FirstStatus()
        if kind == "test":
            result, junit, status = self._test_command(command, tag, log, first, collect_only)
        else:
            result, junit = run_shell(command, cwd=self.worktree.path, env=self.env,
                                      timeout=self.validation.timeout, output_path=log,
                                      wrap=self._wrap(kind)), JUnitResult()  # fmt: skip
        self.worktree.note_artifacts(snapshot)  # reports and caches are not the agent's change
        output_cap.enforce(self.output_dir, [log], (self.output_dir / "junit").glob(f"{tag}*"))
        record = CommandResult(command=command, kind=kind, exit_code=result.exit_code,
                               duration_s=round(result.duration_s, 3), timed_out=result.timed_out,
                               output_path=str(log), targeted=targeted or status.stopped,
                               failing_first=status.matched > 0,
                               junit_tests=len(junit.cases) if junit.files else None,
                               collect_only=collect_only)  # fmt: skip
        outcome.round.commands.append(record)
        self.observer.command_finished(record)
        return result, junit

    def _test_command(self, command: str, tag: str, log: Path, first: list[str] | None,
                      collect_only: bool = False,
                      ) -> tuple[ProcResult, JUnitResult, FirstStatus]:  # fmt: skip
        env, status_file = dict(self.env), None
        if collect_only:
            env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --collect-only -q".strip()
            result = run_shell(command, cwd=self.worktree.path, env=env,
                               timeout=self.validation.timeout, output_path=log,
                               wrap=self._wrap("test"))  # fmt: skip
            return result, JUnitResult(), FirstStatus()
        places = command_places(self.sandbox, self.output_dir, tag)
        if first:
            env, status_file = pytest_first.prepare(self.env, first, places.tool_dir, tag,
                                                    io_dir=places.io_dir)  # fmt: skip
        result, junit = run_test_command(command, self.worktree.path, env, self.validation,
                                         self.output_dir / "junit", tag, log,
                                         wrap=self._wrap("test"), drop_dir=places.io_dir,
                                         anchors=places.anchors)  # fmt: skip
        status = FirstStatus()
        if status_file:
            status = pytest_first.keep(status_file, places.tool_dir, self.output_dir)
        if status_file and pytest_first.failed_to_load(status, result.excerpt(4000)):
            self.plugin_usable = False
        return result, junit, status

    def _new_phase(self) -> None:
        """A fresh scratch HOME, TMPDIR and caches: nothing the model's commands (or an
        earlier round's) left there runs in this round (Sandbox.new_phase)."""
        if self.sandbox is not None:
            self.sandbox.new_phase()

    def _wrap(self, kind: CommandKind) -> list[str]:
        if self.sandbox is None:
            return []
        return self.sandbox.prefix(self.worktree.path, network=kind in self.validation.network)
