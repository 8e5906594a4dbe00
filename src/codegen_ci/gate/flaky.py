"""Flaky tests: a failing test is re-run before anyone is charged with it.

A test that fails and then passes on the same code, in the same tree, is flaky: it is not
the model's failure (a round whose only failures are flaky passes, and the reflection never
names them) and never proof (a test that passes on a re-run on the base commit fails there
only by chance). `validation.proof.reruns` bounds the re-runs (default 1; 0: none). A test
flaky on the base and with the change is the repository's, and the report says so (`where`).

A re-run runs just the failing tests where a pytest command allows it (the plugin in `only`
mode, else the command rewritten to their node ids: the ladder of gate/test_runs.py) or a
`python -m unittest` command (`-k` with their names), else
the test commands in full (so each re-run of a Go or jest suite costs a full run).

A failed test command that wrote no JUnit names no test: it is re-run whole, as CI systems
re-run a failed target (Bazel's `--flaky_test_attempts`), and one that passes on a re-run is
flaky itself, named by its failure's id (`test: <command>`). Not one that timed out (a second
wait as long), could not start (126, 127: the environment's), or ran no test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.test_runs import CommandRun, RerunLadder, Runner
from codegen_ci.gate.validation import FailedCommand, RoundOutcome, Validator
from codegen_ci.report import FlakyTest
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.worktree import Worktree

FAILING = ("failure", "error")


@dataclass
class Rerunner:
    """Re-runs chosen tests of `validation.test` in `cwd` (the run's worktree, or a base
    tree), logging under `own_dir/logs` as `<tag>-rerun-<n>`."""

    cwd: Path
    validation: Validation
    own_dir: Path
    env: Mapping[str, str]
    sandbox: Sandbox | None
    tag: str
    wrap: Sequence[str] = ()
    worktree: Worktree | None = None  # the run's: what the re-runs write is not the change
    runs: int = 0
    ladder: RerunLadder = field(default_factory=RerunLadder)

    @classmethod
    def of(cls, validator: Validator, tag: str) -> Rerunner:
        """Re-runs in the run's worktree, as `validator` runs its tests: in its command
        environment, so a project installed editable elsewhere imports the worktree's code
        (with the run's bare env a re-run tests the checkout, and a broken change's failing
        test passes there and is called flaky)."""
        tree, sandbox, validation = validator.worktree, validator.sandbox, validator.validation
        wrap = sandbox.prefix(tree.path, network="test" in validation.network) if sandbox else []
        return cls(
            tree.path,
            validation,
            validator.output_dir / "reruns",  # apart from the rounds' own logs and JUnit
            validator.command_env(),
            sandbox,
            tag,
            wrap,
            worktree=tree,
        )

    def passing(self, ids: list[str]) -> dict[str, int]:
        """Of `ids` (failing once), those that pass in one of up to `reruns` re-runs, with
        how many runs it took them to pass (2 or more)."""
        passed: dict[str, int] = {}
        left = list(ids)
        for attempt in range(self.validation.proof.reruns):
            if not left:
                break
            outcomes = self._once(left)
            for test_id in list(left):
                if outcomes.get(test_id) == "passed":
                    passed[test_id] = attempt + 2
                    left.remove(test_id)
        return passed

    def command_passing(self, command: str) -> int | None:
        """How many runs `command` (failed once) took to pass, re-run whole up to `reruns`
        times; None when it never did."""
        for attempt in range(self.validation.proof.reruns):
            if self._run(command, None).result.ok:
                return attempt + 2
        return None

    def _once(self, ids: list[str]) -> dict[str, str]:
        junit = JUnitResult()
        step = None
        if len(self.validation.test) == 1:
            step = self.ladder.climb(self.validation.test[0], ids, self.cwd, self._run)
        if step is not None:
            junit = step.run.junit
        else:
            for command in self.validation.test:
                junit = junit.merge(self._run(command, None).junit)
        outcomes: dict[str, str] = {}
        for case in junit.cases:  # a test reported twice counts as its worse outcome
            if outcomes.get(case.key) not in FAILING:
                outcomes[case.key] = case.outcome
        return outcomes

    def _run(self, command: str, only: list[str] | None) -> CommandRun:
        self.runs += 1
        tag = f"{self.tag}-rerun-{self.runs:02d}"
        runner = Runner(self.cwd, self.validation, self.own_dir, self.sandbox, self.wrap)
        log = self.own_dir / "logs" / f"{tag}.log"
        if self.worktree is None:
            return runner.run(command, self.env, tag, log, first=only, mode="only")
        snapshot = self.worktree.snapshot()
        self.worktree.before_command()
        try:
            return runner.run(command, self.env, tag, log, first=only, mode="only")
        finally:
            self.worktree.note_artifacts(snapshot)


def set_flaky_aside(outcome: RoundOutcome, rerunner: Rerunner) -> list[FlakyTest]:
    """Re-run the round's failing tests, and its failed test commands that wrote no JUnit;
    the ones that pass are flaky: taken out of the round's failures (and the round passes
    when nothing else failed). Returns them."""
    if rerunner.validation.proof.reruns == 0:
        return []
    flaky = _flaky_tests(outcome, rerunner)
    for failed in unnamed_failures(outcome):
        runs = rerunner.command_passing(failed.command)
        if runs is not None:
            outcome.failed.remove(failed)
            flaky.append(
                FlakyTest(id=Untrusted(f"test: {failed.command}"), runs=runs, where="change")
            )
    if flaky:
        outcome.finish()
    return flaky


def unnamed_failures(outcome: RoundOutcome) -> list[FailedCommand]:
    """The round's failed test commands nothing explains that wrote no JUnit, ran to their
    end and failed: a re-run can only say whether the whole command is flaky."""
    if outcome.ran_no_tests:
        return []
    ran = {
        c.command
        for c in outcome.round.commands
        if c.kind == "test"
        and c.junit_tests is None
        and not (c.skipped or c.timed_out or c.collect_only)
        and c.exit_code not in (None, 0, 126, 127)
    }
    return [f for f in outcome.failed if f.kind == "test" and not f.explained and f.command in ran]


def _flaky_tests(outcome: RoundOutcome, rerunner: Rerunner) -> list[FlakyTest]:
    failing = outcome.failing_ids()
    if not failing:
        return []
    passed = rerunner.passing(failing)
    if not passed:
        return []
    flaky = [FlakyTest(id=Untrusted(i), runs=n, where="change") for i, n in passed.items()]
    cases = [
        replace(c, outcome="passed", flaky=True) if c.key in passed else c
        for c in outcome.junit.cases
    ]  # passed on a re-run: counted as passed, marked flaky (as JUnit's own reruns are)
    outcome.junit = JUnitResult(cases, outcome.junit.problems, outcome.junit.files)
    if not outcome.junit.failing():
        # Every failing test was flaky: test commands whose failure JUnit explained are
        # answered; lint, setup and unexplained failures stand.
        outcome.failed = [f for f in outcome.failed if not (f.kind == "test" and f.explained)]
    return flaky


def merge_flaky(seen: list[FlakyTest], new: list[FlakyTest]) -> list[FlakyTest]:
    """`seen` plus `new`; a test flaky with the change and on the base is the repository's."""
    by_id = {f.key: f for f in seen}
    for f in new:
        known = by_id.get(f.key)
        where = f.where if known is None or known.where == f.where else "both"
        by_id[f.key] = f.model_copy(update={"where": where})
    return list(by_id.values())
