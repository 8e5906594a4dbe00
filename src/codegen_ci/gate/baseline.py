"""Baseline: which failures were already there before the change?

Paid only when a round's tests fail (a run that passes, or fails only setup or lint, runs
nothing here). The failing tests (ids from JUnit) are re-run once on the base commit in a
separate detached worktree: a single pytest command runs unchanged, with the `codegen_first`
plugin in `only` mode deselecting every other test (runners/pytest_first.py); where the plugin does
not apply or pytest refuses it, the command is rewritten to the failing node ids
(runners/pytest_ids.py). Without ids, or when they cannot be targeted, the full test commands run
there instead. Answers are cached for the whole run: each test id is checked at most once,
and after a full run on the base every id is answered from it.

Conservative by design, because `allow_preexisting_failures` turns "pre-existing" into
success: a test counts as pre-existing only when a JUnit report from the base run shows it
failing. A base run that produced no report (the suite could not even start there) marks
nothing as pre-existing, and a full pytest run there that stopped at collection errors makes
the baseline unavailable: a test it never ran is not thereby passing on the base.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.gate.base_run import base_env, base_record, collected_everything
from codegen_ci.gate.command_places import command_places
from codegen_ci.gate.config_check import base_run_problem
from codegen_ci.gate.junit.capture import run_test_command
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.round_outcome import RoundOutcome
from codegen_ci.gate.runners import pytest_first, pytest_ids
from codegen_ci.report import CommandResult, Round
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.spec.model import Validation
from codegen_ci.workspace import git
from codegen_ci.workspace.dependency_links import unlink_dependencies
from codegen_ci.workspace.proc import ProcResult
from codegen_ci.workspace.worktree import attach_worktree

COMMAND_PREFIX = "test: "  # how validation names a failed test command without JUnit
# `setup` is not run on the base: it may change state the agent's worktree shares (an
# editable install, a shared virtualenv); the base runs with what setup left behind.


@dataclass
class Baseline:
    repo: Path
    base_commit: str
    validation: Validation
    work_dir: Path  # logs and reports of the base runs
    env: Mapping[str, str]
    tree_path: Path  # the base worktree; outside any `.git` (workspace/worktree.py)
    fails_on_base: dict[str, bool] = field(default_factory=dict)
    suite_failing: set[str] | None = None  # failing ids of a full run on the base, once run
    command_failed: dict[str, bool] = field(default_factory=dict)  # test command -> failed
    runs: int = 0
    plugin_usable: bool = True  # False once pytest could not load codegen_first
    sandbox: Sandbox | None = None  # None: unconfined (only where a caller chose so)
    unavailable: str | None = None  # why the base runs cannot answer (then nothing is judged)
    _tree: Path | None = None
    _fresh: bool = False  # this round's base runs have their own fresh scratch already
    _links: tuple[str, ...] = ()

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
        for failure in outcome.round.failures:
            if self.unavailable:
                failure.new = None  # unknown: never "also fails on the base commit"
            elif failure.kind in ("failure", "error"):
                failure.new = not self.fails_on_base.get(failure.id, False)
            elif failure.kind == "command" and failure.id.startswith(COMMAND_PREFIX):
                failed = self.command_failed.get(failure.id.removeprefix(COMMAND_PREFIX))
                failure.new = None if failed is None else not failed

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
        command = self.validation.test[0]
        if self.plugin_usable and pytest_first.applies(command):
            result, junit = self._run(command, only=ids)
            if self.plugin_usable:
                missing = self._take(ids, junit)
                if missing and collected_everything(result):
                    # pytest collected the whole base suite and none of these was in it:
                    # tests the change added, so they cannot fail on the base.
                    self.fails_on_base.update(dict.fromkeys(missing, False))
                    return []
                return missing
            # pytest refused the plugin: that run proves nothing
        targeted = pytest_ids.targeted_command(command, ids, self._worktree())
        if not targeted:
            return ids
        _, junit = self._run(targeted)
        return self._take(ids, junit)

    def _take(self, ids: list[str], junit: JUnitResult) -> list[str]:
        """Record what a run of just `ids` answered; returns the ids it did not run."""
        ran = {c.id for c in junit.cases}
        failing = {c.id for c in junit.failing()}
        self.fails_on_base.update({i: i in failing for i in ids if i in ran})
        return [i for i in ids if i not in ran]

    def _run_suite(self) -> None:
        failing: set[str] = set()
        for command in self.validation.test:
            result, junit = self._run(command, whole_suite=True)
            failing |= {c.id for c in junit.failing()}
            self.command_failed[command] = not result.ok
            if (not self.unavailable and pytest_ids.mentions_pytest(command)
                    and not collected_everything(result)):  # fmt: skip
                # pytest stopped before running the suite (collection errors, exit 2; a usage
                # error, 4): a test it never ran is not thereby passing on the base.
                self.unavailable = (f"`{command}` on the base commit: pytest stopped before "
                                    f"running the tests (exit {result.exit_code}; collection "
                                    "errors?), see baseline/logs")  # fmt: skip
        self.suite_failing = failing

    def seed(self, preflight: Round) -> None:
        """Take a pre-flight round's full test runs (on the untouched code, which is the base
        commit) as the base suite's answer, so no base worktree is needed. A pytest pre-flight
        only collected, so it answers nothing."""
        tests = [c for c in preflight.commands if c.kind == "test"]
        if not tests or any(pytest_ids.mentions_pytest(c.command) for c in tests):
            return
        for record in tests:
            self._check_usable(record, whole_suite=True)
            self.command_failed[record.command] = record.exit_code != 0 or record.timed_out
        self.suite_failing = {f.id for f in preflight.failures if f.kind in ("failure", "error")}

    def _check_usable(self, record: CommandResult, whole_suite: bool) -> None:
        expects_junit = bool(self.validation.junit) or pytest_ids.mentions_pytest(record.command)
        reason = base_run_problem(record, expects_junit, whole_suite)
        if not self.unavailable and reason:
            self.unavailable = f"`{record.command}` on the base commit: {reason}"

    def _run(self, command: str, only: list[str] | None = None, *, whole_suite: bool = False
             ) -> tuple[ProcResult, JUnitResult]:  # fmt: skip
        """Run a test command on the base; `only`: run just these tests, through the plugin."""
        tree = self._worktree()
        if self.sandbox is not None and not self._fresh:
            self.sandbox.new_phase()  # nothing the model's commands left in HOME runs here
            self._fresh = True
        self.runs += 1
        tag = f"baseline-{self.runs:02d}"
        env = base_env(self.env, tree)  # the base tree's own code first (base_run.py)
        status = None
        wrap = self.sandbox.prefix(tree, network="test" in self.validation.network) \
            if self.sandbox else []  # fmt: skip
        places = command_places(self.sandbox, self.work_dir, tag)
        if only:
            env, status = pytest_first.prepare(env, only, places.tool_dir, tag, mode="only",
                                               io_dir=places.io_dir)  # fmt: skip
        result, junit = run_test_command(command, tree, env, self.validation,
                                         self.work_dir / "junit", tag,
                                         self.work_dir / "logs" / f"{tag}.log", wrap=wrap,
                                         drop_dir=places.io_dir,
                                         anchors=places.anchors)  # fmt: skip
        first = pytest_first.keep(status, places.tool_dir, self.work_dir) if status else None
        if first and pytest_first.failed_to_load(first, result.excerpt(4000)):
            self.plugin_usable = False  # pytest refused the plugin: rewrite commands from now on
        else:  # (a refused plugin is no verdict on the base; the rewritten command runs next)
            self._check_usable(base_record(command, result, junit), whole_suite)
        return result, junit

    def _worktree(self) -> Path:
        if self._tree is None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self._tree, self._links = attach_worktree(self.repo, self.tree_path,
                                                      commit=self.base_commit)  # fmt: skip
        return self._tree

    def close(self) -> None:
        if self._tree is not None:
            unlink_dependencies(self._tree, self._links)
            git.git(["worktree", "remove", "--force", str(self._tree)], self.repo, check=False)
            shutil.rmtree(self._tree, ignore_errors=True)
            self._tree = None
