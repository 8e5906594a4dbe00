"""Baseline: which failures were already there before the change?

Paid only when a round's tests fail (a run that passes, or fails only setup or lint, runs
nothing here). The failing tests (ids from JUnit) are re-run once on the base commit in a
separate detached worktree: a single pytest command runs unchanged, with the `codegen_first`
plugin in `only` mode deselecting every other test; where the plugin does not apply or pytest
refuses it, the command is rewritten to the failing node ids (the ladder in gate/test_runs.py,
which validation climbs too). Without ids, or when they cannot be targeted, the full test
commands run there instead. Answers are cached for the whole run: each test id is checked at
most once, and after a full run on the base every id is answered from it.

Conservative by design, because `allow_preexisting_failures` turns "pre-existing" into
success: a test counts as pre-existing only when a JUnit report from the base run shows it
failing. A base run that produced no report (the suite could not even start there) marks
nothing as pre-existing, and a full pytest run there that stopped at collection errors makes
the baseline unavailable: a test it never ran is not thereby passing on the base. So does the
plugin's targeted run stopping there (it collects the whole suite first), without that full
run, which would stop at the same errors.

`setup` is not run on the base: it may change state the agent's worktree shares (an editable
install, a shared virtualenv); the base runs with what setup left behind, the base tree's own
code first on the import path (`base_env`).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from codegen_ci.gate import pytest_commands
from codegen_ci.gate.command_baseline import CommandEnd, command_end, new_failure, round_end
from codegen_ci.gate.junit.capture import is_typecheck
from codegen_ci.gate.junit.parse import JUnitCase, JUnitResult
from codegen_ci.gate.kept_tests import SuiteTests, compare, suite_tests
from codegen_ci.gate.preflight import not_started
from codegen_ci.gate.project_source import ImportCheck
from codegen_ci.gate.pytest_commands import Mode
from codegen_ci.gate.test_runs import CommandRun, RerunLadder, Runner
from codegen_ci.gate.validation import RoundOutcome
from codegen_ci.report import CommandResult, RemovedTest
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.dependency_links import unlink_dependencies
from codegen_ci.workspace.proc import ProcResult
from codegen_ci.workspace.worktree import attach_worktree, worktree_git


@dataclass(kw_only=True)
class Baseline:
    repo: Path
    base_commit: str
    validation: Validation
    work_dir: Path  # logs and reports of the base runs
    env: Mapping[str, str]
    tree_path: Path  # the base worktree; outside any `.git` (workspace/worktree.py)
    sandbox: Sandbox | None = None  # None: unconfined (only where a caller chose so)
    # where the pre-flight found the commands take the project's code from (GOWORK and
    # PYTHONPATH redirected to a tree: gate/project_source.py), once it has run
    sources: Callable[[], ImportCheck | None] = lambda: None
    # What the base runs answered so far (run state, not configuration):
    fails_on_base: dict[str, bool] = field(default_factory=dict, init=False)
    suite_failing: set[str] | None = field(default=None, init=False)  # of a full run, once run
    # test command -> how it ended on the base (to compare a failure without JUnit with)
    command_ends: dict[str, CommandEnd] = field(default_factory=dict, init=False)
    unavailable: str | None = field(default=None, init=False)  # why nothing can be judged
    suite: SuiteTests | None = field(default=None, init=False)  # the tests a full run listed
    # the tests the pre-flight's pytest collection listed (run: not skipped by a marker)
    collected: SuiteTests | None = field(default=None, init=False)
    runs: int = field(default=0, init=False)
    _ladder: RerunLadder = field(default_factory=RerunLadder, init=False)
    _ran: dict[str, bool] = field(default_factory=dict, init=False)  # ran, not skipped, on base
    _tree: Path | None = field(default=None, init=False)
    _fresh: bool = field(default=False, init=False)  # this round's base runs: fresh scratch
    _links: tuple[str, ...] = field(default=(), init=False)

    def classify(self, outcome: RoundOutcome) -> None:
        """Mark each failure of a round whose tests failed as new or pre-existing
        (`Failure.new`); lint and setup failures are left alone (always the change's)."""
        failed_tests = [f for f in outcome.failed if f.kind == "test"]
        if not failed_tests:
            return
        self._fresh = False  # the base runs this round makes start a phase of their own
        unknown = [i for i in outcome.failing_ids() if i not in self.fails_on_base]
        if unknown and not self.unavailable:
            self._answer(unknown)
        unexplained = any(not f.explained for f in failed_tests)
        if unexplained and self.suite_failing is None and not self.unavailable:
            self._run_suite()
        outcome.round.baseline_unavailable = self.unavailable
        if self.unavailable:
            for failure in outcome.round.failures:
                failure.new = None  # unknown: never "also fails on the base commit"
            return
        for failure in outcome.round.failures:
            if failure.kind in ("failure", "error"):
                failure.new = not self.fails_on_base.get(failure.key, False)
        for failed, failure in outcome.command_failures:
            if failed.kind == "test":  # the same failure on the base? gate/command_baseline.py
                base = self.command_ends.get(failed.command)
                failure.new = new_failure(base, round_end(outcome.round, failed.command))

    def only_preexisting(self, outcome: RoundOutcome) -> bool:
        """True when the round failed only through tests that also fail on the base commit.

        A failed command without JUnit never qualifies: without per-test results there is no
        telling whether the change broke something else in it."""
        failures = outcome.round.failures
        return (
            bool(failures)
            and all(f.kind in ("failure", "error") and f.new is False for f in failures)
            and all(f.kind == "test" and f.explained for f in outcome.failed)
        )

    def seed(self, preflight: RoundOutcome, tree: Path) -> None:
        """Take a pre-flight round's full test runs (on the untouched code in `tree`, which is
        the base commit) as the base suite's answer, so no base worktree is needed. A pytest
        pre-flight only collected, so it answers nothing."""
        rnd = preflight.round
        tests = [c for c in rnd.commands if c.kind == "test"]
        pytest_only = bool(tests) and all(pytest_commands.mentions_pytest(c.command) for c in tests)
        if pytest_only and preflight.collected:  # what the plugin listed: the base's tests
            self.collected = SuiteTests(
                Counter(list(preflight.collected)),
                Counter(i for i, skipped in preflight.collected.items() if not skipped),
                known=True,
            )
        if not tests or any(pytest_commands.mentions_pytest(c.command) for c in tests):
            return
        for record in tests:
            self._check_usable(record, whole_suite=True)
            end = command_end(record.exit_code, record.timed_out, record.output_path)
            self.command_ends[record.command] = end
        self.suite_failing = {f.key for f in rnd.failures if f.kind in ("failure", "error")}
        self.suite = suite_tests(preflight.junit.cases, tests, [tree])

    def removed_tests(self, change: SuiteTests) -> list[RemovedTest] | None:
        """The base commit's tests that a change's whole-suite run (`change`) no longer runs
        (gate/kept_tests.py); None when the base runs cannot tell. pytest: compared with the
        pre-flight's collection (a skip only the change shows is confirmed on the base),
        else a single command runs on the base just the tests the change did not run
        (usually none: the price of a collection); anything else compares whole suites."""
        if self.suite is None and self.collected is not None and not self.unavailable:
            found = self._confirmed(compare(self.collected, change))
            if found is not None:
                return found
        if self.suite is None and not self.unavailable:
            found = self._not_run_by(change)
            if found is not None:
                return found
        suite = self.suite_tests()
        return None if suite is None else compare(suite, change)

    def listed(self) -> Counter[str] | None:
        """The base commit's tests as its runs listed them so far (a full run's, else the
        pre-flight's pytest collection); None when none did. Runs nothing."""
        suite = (None if self.unavailable else self.suite) or self.collected
        return None if suite is None or not suite.known else suite.listed

    def known_removed_tests(self, change: SuiteTests) -> list[RemovedTest] | None:
        """`removed_tests` from the base runs that already happened, starting none (a round
        that fails anyway, gate/kept_tests.py `noticed`): the pre-flight's or an earlier full
        run's suite, else the pre-flight's pytest collection, less each skip that no marker
        made there and no earlier run on the base confirmed. None when nothing answers yet."""
        if self.unavailable:
            return None
        if self.suite is not None:
            return compare(self.suite, change)
        if self.collected is None:
            return None
        problems = compare(self.collected, change)
        return [p for p in problems if p.how != "skipped" or self._ran.get(p.key, False)]

    def _confirmed(self, problems: list[RemovedTest]) -> list[RemovedTest] | None:
        """What a comparison with the pre-flight's collection found, less the tests the
        change's run skipped that skip on the base commit too (at run time: no marker said
        so at collection); they run there, alone. None when that run cannot tell."""
        suspects = [p.key for p in problems if p.how == "skipped" and p.key not in self._ran]
        if not suspects:
            return [p for p in problems if p.how != "skipped" or self._ran[p.key]]
        command = self.validation.test[0] if len(self.validation.test) == 1 else ""
        if not (self._ladder.plugin_usable and pytest_commands.applies(command)):
            return None
        self._fresh = False  # a phase of its own: nothing the rounds left in HOME runs
        run = self._run(command, only=suspects)
        if run.refused:
            self._ladder.plugin_usable = False
            return None
        if not (collected_everything(run.result) and run.junit.files):
            return None
        ran_on_base = {c.key for c in run.junit.cases if c.outcome != "skipped"}
        self._ran.update({i: i in ran_on_base for i in suspects})
        return [p for p in problems if p.how != "skipped" or self._ran[p.key]]

    def _not_run_by(self, change: SuiteTests) -> list[RemovedTest] | None:
        ran = [i for i, n in change.ran.items() if n > 0]
        command = self.validation.test[0] if len(self.validation.test) == 1 else ""
        if not (ran and self._ladder.plugin_usable and pytest_commands.applies(command)):
            return None
        self._fresh = False  # a phase of its own: nothing the rounds left in HOME runs
        run = self._run(command, only=ran, mode="except")
        if run.refused:
            self._ladder.plugin_usable = False
            return None
        if not (collected_everything(run.result) and run.junit.files):
            return None  # collection errors on the base, or no report: compare whole suites
        problems: dict[str, RemovedTest] = {}
        for case in run.junit.cases:
            if case.outcome == "skipped":
                continue  # not run on the base either
            how: Literal["removed", "skipped"] = "skipped" if change.listed[case.key] else "removed"
            if case.key in problems:
                problems[case.key].count += 1
            else:
                problems[case.key] = RemovedTest(id=case.id, how=how)
        return list(problems.values())

    def suite_tests(self) -> SuiteTests | None:
        """Which tests the base commit's suite lists and runs (gate/kept_tests.py): from the
        pre-flight, or an earlier full run on the base, else from a full run now (a pytest
        pre-flight only collected). None when the base runs cannot tell."""
        if self.suite is None and not self.unavailable:
            self._fresh = False  # a phase of its own: nothing the rounds left in HOME runs
            self._run_suite()
        return None if self.unavailable else self.suite

    def _answer(self, ids: list[str]) -> None:
        if self.suite_failing is None:
            ids = self._answer_targeted(ids)
            if ids:
                # Not targetable, or not run (a rewritten command stops at the node id of a
                # test the change added): the full suite answers for everything.
                self._run_suite()
        failing = self.suite_failing or set()
        self.fails_on_base.update({i: i in failing for i in ids})

    def _answer_targeted(self, ids: list[str]) -> list[str]:
        """Re-run just `ids` on the base; returns the ids that run did not answer."""
        if len(self.validation.test) != 1:
            return ids

        def run(command: str, only: list[str] | None) -> CommandRun:
            return self._run(command, only=only)

        command = self.validation.test[0]
        step = self._ladder.climb(command, ids, self._worktree(), run)
        if step is None:
            return ids
        missing = self._take(ids, step.run.junit)
        if step.rung == "plugin" and missing and collected_everything(step.run.result):
            # pytest collected the whole base suite and none of these was in it: tests the
            # change added, so they cannot fail on the base.
            self.fails_on_base.update(dict.fromkeys(missing, False))
            return []
        result = step.run.result
        if step.rung == "plugin" and missing and result.exit_code == 2 and not result.timed_out:
            # The plugin deselects only after pytest collected the whole base suite: it stopped
            # at collection errors there, where the full suite would stop again (a second run
            # of it answered nothing more).
            self.unavailable = self.unavailable or stopped_on_base(command, result.exit_code)
            return []
        return missing

    def _take(self, ids: list[str], junit: JUnitResult) -> list[str]:
        """Record what a run of just `ids` answered (failing there; run, not skipped: a skip
        only a change shows is then known to be the change's, `_confirmed`); returns the ids it
        did not run."""
        ran = {c.key for c in junit.cases}
        failing = {c.key for c in junit.failing()}
        not_skipped = {c.key for c in junit.cases if c.outcome != "skipped"}
        self.fails_on_base.update({i: i in failing for i in ids if i in ran})
        self._ran.update({i: i in not_skipped for i in ids if i in ran})
        return [i for i in ids if i not in ran]

    def _run_suite(self) -> None:
        failing: set[str] = set()
        cases: list[JUnitCase] = []
        records: list[CommandResult] = []
        for command in self.validation.test:
            run = self._run(command, whole_suite=True)
            failing |= {c.key for c in run.junit.failing()}
            cases += run.junit.cases
            records.append(base_record(command, run.result, run.junit))
            result = run.result
            self.command_ends[command] = command_end(
                result.exit_code, result.timed_out, result.output_path
            )
            stopped = not collected_everything(run.result)
            if not self.unavailable and pytest_commands.mentions_pytest(command) and stopped:
                # pytest stopped before running the suite (collection errors, exit 2; a usage
                # error, 4): a test it never ran is not thereby passing on the base.
                self.unavailable = stopped_on_base(command, run.result.exit_code)
        self.suite_failing = failing
        self.suite = suite_tests(cases, records, [self._worktree()])

    def _check_usable(self, record: CommandResult, whole_suite: bool) -> None:
        # a typecheck beside the runner (`npm test`'s `&& npm run check:type:ts`) never writes
        # JUnit: its missing report must not turn the kept-tests check off for the whole run
        expects_junit = pytest_commands.mentions_pytest(record.command) or (
            bool(self.validation.junit) and not is_typecheck(record.command, self.repo)
        )
        reason = base_run_problem(record, expects_junit, whole_suite)
        if not self.unavailable and reason:
            self.unavailable = f"`{record.command}` on the base commit: {reason}"

    def _run(
        self,
        command: str,
        only: list[str] | None = None,
        *,
        whole_suite: bool = False,
        mode: Mode = "only",
    ) -> CommandRun:
        """Run a test command on the base; `only`: run just these tests, through the plugin
        (`mode` "except": all but these)."""
        tree = self._worktree()
        if self.sandbox is not None and not self._fresh:
            self.sandbox.new_phase()  # nothing the model's commands left in HOME runs here
            self._fresh = True
        self.runs += 1
        tag = f"baseline-{self.runs:02d}"
        wrap = (
            self.sandbox.prefix(tree, network="test" in self.validation.network)
            if self.sandbox
            else []
        )
        runner = Runner(tree, self.validation, self.work_dir, self.sandbox, wrap)
        found = self.sources()
        env = base_env(found.apply(self.env, tree) if found else self.env, tree)
        log = self.work_dir / "logs" / f"{tag}.log"
        run = runner.run(command, env, tag, log, first=only, mode=mode)
        if not run.refused:  # a refused plugin is no verdict on the base; the ladder goes on
            self._check_usable(base_record(command, run.result, run.junit), whole_suite)
        return run

    def _worktree(self) -> Path:
        if self._tree is None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self._tree, self._links = attach_worktree(
                self.repo, self.tree_path, commit=self.base_commit
            )
        return self._tree

    def close(self) -> None:
        if self._tree is not None:
            unlink_dependencies(self._tree, self._links)
            worktree_git(self.repo, ["remove", "--force", str(self._tree)], check=False)
            shutil.rmtree(self._tree, ignore_errors=True)
            self._tree = None


# One run on the base commit: its environment, its record, and what it can tell.


def base_env(env: Mapping[str, str], tree: Path) -> dict[str, str]:
    """`env` for a run in the base `tree`. An editable install (`pip install -e .` in setup)
    points imports at the agent's worktree; put the base tree's own code first so the base run
    tests the base code."""
    out = dict(env)
    paths = [str(tree / "src")] if (tree / "src").is_dir() else []
    paths += [str(tree), *filter(None, [out.get("PYTHONPATH")])]
    out["PYTHONPATH"] = os.pathsep.join(paths)
    return out


def collected_everything(result: ProcResult) -> bool:
    """A pytest run that ended normally (passed, failed, or nothing selected) collected
    the whole suite; collection errors end with exit 2, a timeout with none."""
    return not result.timed_out and result.exit_code in (0, 1, 5)


def stopped_on_base(command: str, exit_code: int | None) -> str:
    """Why the baseline is unavailable when pytest stopped on the base before running tests."""
    return (
        f"`{command}` on the base commit: pytest stopped before running the tests "
        f"(exit {exit_code}; collection errors?), see baseline/logs"
    )


def base_record(command: str, result: ProcResult, junit: JUnitResult) -> CommandResult:
    """The base run as a `CommandResult`, for the usability check (`base_run_problem`)."""
    return CommandResult(
        command=command,
        kind="test",
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        timed_out=result.timed_out,
        output_path=str(result.output_path),
        junit_tests=len(junit.cases) if junit.files else None,
    )


def base_run_problem(record: CommandResult, expects_junit: bool, whole_suite: bool) -> str | None:
    """Why a base-commit run cannot tell a pre-existing failure from a new one (it could not
    start, timed out, or wrote no JUnit where one was expected); None when it can. A run of
    selected tests may legitimately select none (tests the change added). Whether it started
    is judged as the pre-flight judges a test command (gate/preflight.py)."""
    if record.exit_code in (126, 127) or (whole_suite and (reason := not_started(record))):
        return reason if whole_suite and reason else f"command not found (exit {record.exit_code})"
    if record.timed_out and whole_suite:
        return "timed out"
    if expects_junit and record.junit_tests is None:
        return "it wrote no JUnit report"
    return None
