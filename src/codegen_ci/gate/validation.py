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
base run did not print). So no round is spent on lint the model did not break. Linter output is
read for errors as `path:line: message` (`lint_errors`).

Targeted re-runs: when the last round that ran tests had failing tests and there is one test
command, which runs pytest, the round runs it with the `codegen_first` plugin
(gate/pytest_commands.py): the previously failing tests run first, and if one still fails
the session stops there; that is the round's answer, at the price of those tests (`targeted` in
the report). When they pass, the same process goes on through the full suite. So a run pays the
full suite about twice, and each round one pytest start-up. Where the plugin cannot be loaded
(or the command runs xdist), the command is rewritten to the failing node ids instead, and the
full suite runs after it only when they pass (the ladder in gate/test_runs.py, which the
baseline climbs too).

JUnit: `<output>/junit/` holds every report a test command wrote (gate/junit/capture.py). A
finished round is a `RoundOutcome`: the report's view of it, plus what baseline and reflection
need (the JUnit results, the lint errors, the commands that failed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import Protocol

from codegen_ci import runners
from codegen_ci.gate import pytest_commands
from codegen_ci.gate.command_baseline import CommandEnd, command_end, new_failure, summary_line
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.project_source import ImportCheck, check_sources
from codegen_ci.gate.test_runs import CommandRun, RerunLadder, Runner, command_places
from codegen_ci.report import CommandKind, CommandResult, Failure, RemovedTest, Round
from codegen_ci.runners.base import keep_tool_paths
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import Untrusted, strip_ansi
from codegen_ci.spec.model import Validation
from codegen_ci.workspace import output_cap, uncommitted
from codegen_ci.workspace.proc import ProcResult, run_shell
from codegen_ci.workspace.worktree import Worktree

MAX_CLEARED_SHOWN = 200
CLEAR_COMMAND = "(remove what the commit will not hold)"
DEPENDENCY_MANIFESTS = (
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "requirements*.txt",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "Gemfile",
    "Gemfile.lock",
    "composer.json",
    "composer.lock",
)


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
class ValidationState:
    """What a validator learns as the run goes on (its configuration is the `Validator`'s)."""

    setup_done: bool = False
    targets: list[str] = field(default_factory=list)  # failing ids of the last tests run
    # lint command -> its errors (`path: message`) on the untouched code, when it failed there
    base_lint: dict[str, frozenset[str]] = field(default_factory=dict)
    base_lint_ends: dict[str, CommandEnd] = field(default_factory=dict)  # the same runs, whole
    ladder: RerunLadder = field(default_factory=RerunLadder)
    round_commands: int = 0  # commands the rounds ran so far: numbers their logs
    # where the commands' interpreters import the repository's own code from, once checked
    imports: ImportCheck | None = None
    # the JUnit of the last run of the whole suite: the totals of a round that stopped after
    # the previously failing tests count the rest as they ran there
    suite: JUnitResult | None = None
    # untracked and ignored files as the last `setup` left them (workspace/uncommitted.py)
    setup_files: uncommitted.SetupState | None = None


@dataclass(frozen=True)
class Validator:
    validation: Validation
    worktree: Worktree
    output_dir: Path
    env: Mapping[str, str]
    observer: CommandObserver = field(default_factory=QuietObserver)
    excerpt_chars: int = 6000
    sandbox: Sandbox | None = None  # None: unconfined (only where a caller chose so)
    state: ValidationState = field(default_factory=ValidationState)

    def run_round(self, iteration: int) -> RoundOutcome:
        """One round. The validator remembers the last failing tests itself, also across a
        round whose tests were skipped."""
        state = self.state
        outcome = RoundOutcome(Round(iteration=iteration))
        self._new_phase()
        if not self._clear(outcome):
            return outcome.finish()
        again = state.setup_done and self._manifest_changed()
        if not state.setup_done or again:
            if not self._setup(outcome):
                return outcome.finish()
            # Run on the model's code (a resumed run has no pre-flight): what it left in the
            # scratch is not kept for later phases, so it runs again in the next round.
            state.setup_done = again or self.sandbox is None
        if state.imports is None:  # a resumed run has had no pre-flight
            self._check_imports()
        for command in self.validation.lint:
            run = self._run(command, "lint", outcome)
            if not run.result.ok:
                errors = lint_errors(strip_ansi(run.result.excerpt(200_000)))
                if command in state.base_lint and not errors:  # nothing read: the whole output
                    if self._same_as_base(command, run.result):
                        continue  # the base commit's failure, as it was: not the change's
                elif command in state.base_lint:
                    errors = [e for e in errors if lint_key(e) not in state.base_lint[command]]
                    if not errors:
                        continue  # only what the base commit already had: not the change's
                outcome.lint_errors.extend(map(Untrusted, errors))  # what the linter printed
                outcome.failed.append(self._failed(command, "lint", run, bool(errors)))
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
            run = self._run(command, "setup", outcome)
            if not run.result.ok:
                outcome.failed.append(self._failed(command, "setup", run, False))
                return False
        self.state.setup_done = True
        self.state.setup_files = uncommitted.setup_state(self.worktree)
        return True

    def _manifest_changed(self) -> bool:
        """The change edits a dependency manifest (`package.json`, `requirements.txt`,
        `Cargo.toml`...): `setup` runs again in every round, on the change, since what the
        model installed itself does not carry into a round (`_clear`)."""
        return any(
            fnmatch(PurePosixPath(rel).name, pattern)
            for rel in self.worktree.agent_changes()
            for pattern in DEPENDENCY_MANIFESTS
        )

    def _clear(self, outcome: RoundOutcome) -> bool:
        """Only the change is judged: what the commit will not hold and `setup` did not make
        goes before the round's commands run (workspace/uncommitted.py), listed in the round's
        `<tag>-cleared.txt` log. False (the round failed, nothing run) when some of it could
        not be removed."""
        iteration = outcome.round.iteration
        cleared = uncommitted.clear(self.worktree, self.state.setup_files)
        if cleared.removed:
            log = self.output_dir / "logs" / f"{round_tag(iteration)}-cleared.txt"
            log.parent.mkdir(parents=True, exist_ok=True)
            shown = cleared.removed[:MAX_CLEARED_SHOWN]
            more = len(cleared.removed) - len(shown)
            log.write_text(
                "Removed before the round (the commit will not hold them):\n"
                + "".join(f"{rel}\n" for rel in shown)
                + (f"... and {more} more\n" if more else ""),
                encoding="utf-8",
            )
        if not cleared.stuck:
            return True
        note = (
            "files the commit will not hold could not be removed before the round, so its "
            "commands were not run: " + ", ".join(cleared.stuck[:20])
        )
        outcome.failed.append(FailedCommand(CLEAR_COMMAND, "setup", Untrusted(note), False))
        return False

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
        if self._check_imports().problem:
            return outcome.finish()
        for at, command in enumerate(self.validation.lint):
            run = self._run(command, "lint", outcome)
            if _could_not_start(run.result):  # a configuration error: nothing more to learn
                rest: list[tuple[CommandKind, str]] = [
                    ("lint", c) for c in self.validation.lint[at + 1 :]
                ]
                return _skipping(outcome, [*rest, *(("test", c) for c in self.validation.test)])
            if not run.result.ok:
                errors = lint_errors(strip_ansi(run.result.excerpt(200_000)))
                self.state.base_lint[command] = frozenset(map(lint_key, errors))
                self.state.base_lint_ends[command] = _command_end(run.result)
                outcome.preexisting_lint[command] = errors
        for at, command in enumerate(self.validation.test):
            collect = not full and pytest_commands.mentions_pytest(command)
            run = self._run(command, "test", outcome, collect_only=collect)
            if _could_not_start(run.result):
                return _skipping(outcome, [("test", c) for c in self.validation.test[at + 1 :]])
            if not collect:
                self._take(outcome, command, run)
        if self.sandbox is not None:  # on the untouched code: jest's cache, warm in every round
            self.sandbox.keep_caches()
        self._require_tests(outcome)
        return outcome.finish()

    def _check_imports(self) -> ImportCheck:
        """Where the commands import the repository's own Python code from; redirected to the
        worktree for every later command when it is elsewhere (gate/project_source.py)."""
        commands = [*self.validation.lint, *self.validation.test]
        logs = self.output_dir / "checks"  # not a command of the repository's: not in logs/
        tree = self.worktree
        wrap = self._wrap("test")
        check = check_sources(
            commands, tree.path, self.env, wrap, logs, checkout=tree.repo, links=tree.links
        )
        self.state.imports = check
        return check

    def command_env(self) -> dict[str, str]:
        """The commands' environment: the run's, with the worktree's own code first on the
        import path when the pre-flight found it elsewhere."""
        if self.state.imports is None:
            return dict(self.env)
        return self.state.imports.apply(self.env, self.worktree.path)

    def _tests(self, outcome: RoundOutcome) -> None:
        answered, partial = self._targeted(outcome)
        if partial:  # all the round ran: the tests it asked for (gate/kept_tests.py `noticed`)
            outcome.only = list(self.state.targets)
        if not answered:
            for command in self.validation.test:
                self._take(outcome, command, self._run(command, "test", outcome))
        if partial and self.state.suite is not None:
            ran = {case.key for case in outcome.junit.cases}
            rest = [case for case in self.state.suite.cases if case.key not in ran]
            outcome.carried = JUnitResult(cases=rest)
        elif not partial:
            self.state.suite = outcome.junit
        self._require_tests(outcome)
        self.state.targets = outcome.failing_ids()

    def _require_tests(self, outcome: RoundOutcome) -> None:
        """No test, no success: test commands that all wrote JUnit listing no test fail the
        round (the model deleted or disabled the tests, or they never existed)."""
        ran = [c for c in outcome.round.commands if c.kind == "test" and not c.collect_only]
        if self.validation.allow_no_tests or not ran or outcome.failed:
            return
        if all(c.junit_tests == 0 for c in ran):
            note = "ran no test (its test report lists none): no test, no success"
            outcome.failed.append(FailedCommand(ran[-1].command, "test", Untrusted(note), False))
            outcome.ran_no_tests = True

    def _targeted(self, outcome: RoundOutcome) -> tuple[bool, bool]:
        """Start from the previously failing tests; (answered, partial). Answered when that
        answered the round: the plugin's run always does (it goes on through the full suite
        when they pass), a rewritten command's only when one of them still fails (or it timed
        out). Partial when the answer ran only some of the suite."""
        targets = self.state.targets
        if not targets or len(self.validation.test) != 1:
            return False, False

        def run(command: str, first: list[str] | None) -> CommandRun:
            return self._run(command, "test", outcome, first=first, targeted=first is None)

        step = self.state.ladder.climb(self.validation.test[0], targets, self.worktree.path, run)
        if step is None:
            return False, False
        ran = step.run
        answered = step.rung == "plugin" or bool(ran.junit.failing()) or ran.result.timed_out
        if answered:
            self._take(outcome, step.command, ran)
        return answered, answered and (step.rung == "rewritten" or ran.first.stopped)

    def _take(self, outcome: RoundOutcome, command: str, run: CommandRun) -> None:
        outcome.junit = outcome.junit.merge(run.junit)
        if not run.result.ok:
            explained = bool(run.junit.failing()) and not run.result.timed_out
            outcome.failed.append(self._failed(command, "test", run, explained))

    def _same_as_base(self, command: str, result: ProcResult) -> bool:
        """A lint failure with no `path:line: message` error to compare is the base commit's
        only when the command failed the same way there (gate/command_baseline.py)."""
        base = self.state.base_lint_ends.get(command)
        return new_failure(base, _command_end(result)) is False

    def _failed(
        self, command: str, kind: CommandKind, run: CommandRun, explained: bool
    ) -> FailedCommand:
        excerpt = Untrusted(run.result.excerpt(self.excerpt_chars))  # what the command printed
        return FailedCommand(command, kind, excerpt, explained)

    def _tag(self, outcome: RoundOutcome, kind: CommandKind) -> str:
        """The name of a command's log and JUnit copies, `<round tag>-<nn>-<kind>`. The rounds
        number their commands on across the run (round-1-01, round-1-02, round-2-03); the
        pre-flight numbers its own, so it does not shift the rounds' names."""
        iteration = outcome.round.iteration
        if iteration:
            self.state.round_commands += 1
            number = self.state.round_commands
        else:
            number = len(outcome.round.commands) + 1
        return f"{round_tag(iteration)}-{number:02d}-{kind}"

    def _run(
        self,
        command: str,
        kind: CommandKind,
        outcome: RoundOutcome,
        *,
        targeted: bool = False,
        first: list[str] | None = None,
        collect_only: bool = False,
    ) -> CommandRun:
        """Run one command, record it in the round, and parse the JUnit it wrote (tests).
        `first`: failing ids to run first, through the pytest plugin; a run in which pytest
        refused the plugin proves nothing and is not recorded in the round."""
        tag = self._tag(outcome, kind)
        log = self.output_dir / "logs" / f"{tag}.log"
        self.observer.command_started(kind, command)
        snapshot = self.worktree.snapshot()
        self.worktree.before_command()  # a test the model wrote may run git
        if kind == "test" and not collect_only:
            runner = Runner(
                self.worktree.path, self.validation, self.output_dir, self.sandbox, self._wrap(kind)
            )
            run = runner.run(command, self.command_env(), tag, log, first=first)
        elif collect_only and pytest_commands.mentions_pytest(command):
            run = self._collect(command, outcome, tag, log)
        else:
            result = run_shell(
                command,
                cwd=self.worktree.path,
                env=_collecting(self.command_env()) if collect_only else self.command_env(),
                timeout=self.validation.timeout,
                output_path=log,
                wrap=self._wrap(kind),
            )
            run = CommandRun(result, JUnitResult())
        self.worktree.note_artifacts(snapshot)  # reports and caches are not the agent's change
        output_cap.enforce(self.output_dir, [log], (self.output_dir / "junit").glob(f"{tag}*"))
        result, junit = run.result, run.junit
        record = CommandResult(
            command=command,
            kind=kind,
            exit_code=result.exit_code,
            duration_s=round(result.duration_s, 3),
            timed_out=result.timed_out,
            output_path=str(log),
            targeted=targeted or run.first.stopped,
            failing_first=run.first.matched > 0,
            junit_tests=len(junit.cases) if junit.files else None,
            collect_only=collect_only,
        )
        if not run.refused:
            outcome.round.commands.append(record)
        self.observer.command_finished(record)
        return run

    def _collect(self, command: str, outcome: RoundOutcome, tag: str, log: Path) -> CommandRun:
        """A pre-flight pytest collection, with the plugin listing the collected tests (the
        base commit's, for gate/kept_tests.py) into `outcome.collected`; collected again
        without it when pytest refuses the plugin."""
        places = command_places(self.sandbox, self.output_dir, tag)
        env, status = pytest_commands.prepare(
            _collecting(self.command_env()),
            [],
            places.tool_dir,
            tag,
            io_dir=places.io_dir,
            collect=True,
        )
        wrap = self._wrap("test")
        timeout = self.validation.timeout
        result = run_shell(
            keep_tool_paths(command, env),
            cwd=self.worktree.path,
            env=env,
            timeout=timeout,
            output_path=log,
            wrap=wrap,
        )
        plugin = pytest_commands.keep(status, places.tool_dir, self.output_dir)
        if pytest_commands.failed_to_load(plugin, result.excerpt(4000)):
            env = _collecting(self.command_env())
            result = run_shell(
                command,
                cwd=self.worktree.path,
                env=env,
                timeout=timeout,
                output_path=log,
                wrap=wrap,
            )
            outcome.collected = None
        elif outcome.collected is not None:
            tests = pytest_commands.collected_tests(status, self.output_dir)
            if tests is None:
                outcome.collected = None
            else:
                outcome.collected.update(tests)
        return CommandRun(result, JUnitResult())

    def _new_phase(self) -> None:
        """A fresh scratch HOME, TMPDIR and caches: nothing the model's commands (or an
        earlier round's) left there runs in this round (Sandbox.new_phase)."""
        if self.sandbox is not None:
            self.sandbox.new_phase()

    def _wrap(self, kind: CommandKind) -> list[str]:
        if self.sandbox is None:
            return []
        return self.sandbox.prefix(self.worktree.path, network=kind in self.validation.network)


# A finished round.


@dataclass(frozen=True)
class FailedCommand:
    command: str
    kind: CommandKind
    # head and tail of its output (or a note naming the change's files): whatever the
    # command, a test or the change printed is data
    output: Untrusted
    explained: bool  # failing JUnit cases or parsed lint errors account for the failure

    def places(self) -> tuple[runners.TestRunner, list[runners.FailedAt]] | None:
        """Where a test command's runner says its tests failed (plain `cargo test`: where
        each panicked), read from the output; None for other commands or when it says not."""
        return runners.failed_at(self.output.raw_for("matching")) if self.kind == "test" else None

    def failure(self) -> Failure:
        """The report's entry for a failure nothing else explains: the command by its kind and
        text, with the line of its output that says what went wrong."""
        found = self.places()
        first = found[1][0] if found else None  # plain `cargo test`: where it panicked
        return Failure(
            id=Untrusted(f"{self.kind}: {self.command}"),
            # the report's record: read back as `Failure.message`, an `Untrusted`
            message=summary_line(self.output.raw_for("record")),
            file=first.file if first else None,
            line=first.line if first else None,
            kind="command",
        )


@dataclass
class RoundOutcome:
    """A finished round: the report's view, plus what baseline and reflection need."""

    round: Round
    junit: JUnitResult = field(default_factory=JUnitResult)
    lint_errors: list[Untrusted] = field(default_factory=list)  # the linter's lines: data
    failed: list[FailedCommand] = field(default_factory=list)
    preexisting_lint: dict[str, list[str]] = field(default_factory=dict)  # pre-flight only
    # the suite's tests a partial re-run did not run, as they last ran (totals only)
    carried: JUnitResult = field(default_factory=JUnitResult)
    # once finished: each failed command nothing explains, with its entry in the report
    command_failures: list[tuple[FailedCommand, Failure]] = field(default_factory=list)
    # the base commit's tests the change removed or skipped (gate/kept_tests.py)
    removed_tests: list[RemovedTest] = field(default_factory=list)
    # a round that stopped after the previously failing tests: those it was asked to run first
    only: list[str] | None = None
    # pre-flight: the tests pytest collected (JUnit id -> skipped by a marker); None: unknown
    collected: dict[str, bool] | None = field(default_factory=dict)
    # every test command ran, and each listed no test: the round fails for that alone (the
    # base commit's tests it no longer runs are still named: gate/kept_tests.py)
    ran_no_tests: bool = False

    @property
    def passed(self) -> bool:
        return self.round.passed

    def signature(self) -> frozenset[str]:
        """What failed, for the stuck check: test ids, lint errors, and failed commands whose
        failure neither explains."""
        sig = {f"test:{test_id}" for test_id in self.failing_ids()}
        sig |= {f"lint:{e.raw_for('matching')}" for e in self.lint_errors}
        sig |= {f"cmd:{f.kind}:{f.command}" for f in self.failed if not f.explained}
        sig |= {f"removed:{r.key}" for r in self.removed_tests}
        return frozenset(sig)

    def failing_ids(self) -> list[str]:
        return list(dict.fromkeys(c.key for c in self.junit.failing()))

    def finish(self) -> RoundOutcome:
        """Fill in the report's view of the round from what was collected."""
        rnd = self.round
        self.command_failures = [(f, f.failure()) for f in self.failed if not f.explained]
        rnd.tests = JUnitResult(cases=self.junit.cases + self.carried.cases).totals()
        rnd.tests_carried = len(self.carried.cases)
        rnd.parse_problems = list(self.junit.problems)
        rnd.failures = [
            *self.junit.failures(),
            *(Failure(id=e, message=e.raw_for("record"), kind="lint") for e in self.lint_errors),
            *(
                # the pre-flight's: the base's
                Failure(id=Untrusted(e), message=e, kind="lint", new=False)
                for errors in self.preexisting_lint.values()
                for e in errors
            ),
            *(failure for _, failure in self.command_failures),
        ]
        rnd.passed = not self.failed
        return self


# Linter output -> errors as `path:line: message`, for the report and the reflection.

_PATH = r"(?P<path>[\w./\\~-]+\.\w+)"
LINT_LINE = re.compile(_PATH + r":(?P<line>\d+)(?::\d+)?:?\s+(?P<msg>\S.*)$")  # flake8, mypy
LINT_ARROW = re.compile(r"^\s*-->\s*" + _PATH + r":(?P<line>\d+)")  # ruff/rustc full format
LINT_STYLISH = re.compile(r"^\s+(?P<line>\d+):\d+\s+(?P<msg>(?:error|warning)\s+.+)$")  # eslint
MAX_LINT_ERRORS = 50
GO_VET_PREFIX = "vet: "  # go vet's type-check errors: `vet: pkg/file.go:6:17: cannot use ...`


def lint_errors(output: str) -> list[str]:
    """Errors as `path:line: message` from the usual linter formats (flake8/ruff concise/mypy/
    pylint/go vet `path:line[:col]: message`, ruff/rustc full `CODE message` + `--> path:line:col`,
    eslint stylish); empty when none is recognised (the caller then shows the raw output)."""
    errors: list[str] = []
    header, current_file = "", ""
    for raw in output.splitlines():
        line = raw.rstrip()
        if arrow := LINT_ARROW.match(line):
            errors.append(f"{arrow['path']}:{arrow['line']}: {header}")
        elif flat := LINT_LINE.match(line.strip().removeprefix(GO_VET_PREFIX)):
            errors.append(f"{flat['path']}:{flat['line']}: {flat['msg'].strip()}")
        elif (stylish := LINT_STYLISH.match(line)) and current_file:
            errors.append(f"{current_file}:{stylish['line']}: {' '.join(stylish['msg'].split())}")
        elif re.fullmatch(_PATH, line):
            current_file = line
        elif line.strip() and not line.startswith((" ", "|")):
            header = line.strip()
        if len(errors) >= MAX_LINT_ERRORS:
            break
    return errors


def _collecting(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a pre-flight pytest command that only collects the tests."""
    out = dict(env)
    out["PYTEST_ADDOPTS"] = f"{out.get('PYTEST_ADDOPTS', '')} --collect-only -q".strip()
    return out


def lint_key(error: str) -> str:
    """An error without its line number (`path: message`), to compare runs of a linter on
    code whose lines moved: the base commit's errors against a round's."""
    return re.sub(r"^([^:]+):\d+(?::\d+)?:", r"\1:", error)


def _could_not_start(result: ProcResult) -> bool:
    return not result.timed_out and result.exit_code in (126, 127)


def _skipping(outcome: RoundOutcome, rest: list[tuple[CommandKind, str]]) -> RoundOutcome:
    """The pre-flight ended at a command that could not start (exit 126/127: a configuration
    error whatever follows, gate/preflight.py): the commands after it are recorded as
    skipped, not run (a suite's minutes for an answer already known)."""
    outcome.round.commands += [
        CommandResult(command=c, kind=kind, exit_code=None, duration_s=0.0, skipped=True)
        for kind, c in rest
    ]
    return outcome.finish()


def _command_end(result: ProcResult) -> CommandEnd:
    return command_end(result.exit_code, result.timed_out, result.output_path)
