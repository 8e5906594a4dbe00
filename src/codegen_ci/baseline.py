"""Baseline: which failures were already there before the change?

Paid only when a round fails: the failing tests (ids from JUnit) are re-run once on the base
commit in a separate worktree; without ids, the full test command runs there. Answers are
cached for the whole run, so each test id is checked at most once.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci import git, pytest_ids
from codegen_ci.junit import parse_files
from codegen_ci.proc import run_shell
from codegen_ci.spec import Validation
from codegen_ci.validation import RoundOutcome
from codegen_ci.workspace import attach_worktree


@dataclass
class Baseline:
    repo: Path
    base_commit: str
    validation: Validation
    work_dir: Path  # baseline worktree and its logs live here, outside the repository
    env: Mapping[str, str]
    fails_on_base: dict[str, bool] = field(default_factory=dict)
    base_suite_failed: bool | None = None
    runs: int = 0
    _tree: Path | None = None

    def classify(self, outcome: RoundOutcome) -> None:
        """Mark each failing test of `outcome` as new (False: it fails on the base too)."""
        ids = outcome.failing_ids()
        unknown = [i for i in dict.fromkeys(ids) if i not in self.fails_on_base]
        if unknown or (not ids and self.base_suite_failed is None):
            self._check(unknown)
        for failure in outcome.round.failures:
            if failure.kind in ("failure", "error") and failure.id in self.fails_on_base:
                failure.new = not self.fails_on_base[failure.id]
            elif failure.id.startswith("test:") and self.base_suite_failed is not None:
                failure.new = not self.base_suite_failed

    def only_preexisting(self, outcome: RoundOutcome) -> bool:
        """True when every failure is a test that also fails on the base commit."""
        failures = outcome.round.failures
        return bool(failures) and all(
            f.kind in ("failure", "error") and f.new is False for f in failures
        ) and all(kind == "test" for _, kind, _ in outcome.failed_outputs)

    def _check(self, ids: list[str]) -> None:
        tree = self._worktree()
        command = None
        if ids and len(self.validation.test) == 1:
            command = pytest_ids.targeted_command(self.validation.test[0], ids, tree)
        commands = [command] if command else list(self.validation.test)
        failing: set[str] = set()
        any_failed = False
        seen_junit = False
        for n, cmd in enumerate(commands):
            self.runs += 1
            tag = f"baseline-{self.runs}-{n}"
            junit_out = self.work_dir / f"{tag}.xml"
            env = dict(self.env)
            if pytest_ids.mentions_pytest(cmd) and not self.validation.junit:
                env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={junit_out}"
            result = run_shell(
                cmd,
                cwd=tree,
                env=env,
                timeout=self.validation.timeout,
                output_path=self.work_dir / f"{tag}.log",
            )
            any_failed |= not result.ok
            files = [junit_out] if junit_out.exists() else []
            files += [p for g in self.validation.junit for p in tree.glob(g) if p.is_file()]
            parsed = parse_files(files)
            seen_junit |= bool(parsed.cases)
            failing |= {c.id for c in parsed.failing()}
        for test_id in ids:
            self.fails_on_base[test_id] = test_id in failing if seen_junit else any_failed
        if not command:
            self.base_suite_failed = any_failed

    def _worktree(self) -> Path:
        if self._tree is None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            self._tree = attach_worktree(self.repo, self.work_dir / "tree", commit=self.base_commit)
        return self._tree

    def close(self) -> None:
        if self._tree is not None:
            git.git(["worktree", "remove", "--force", str(self._tree)], self.repo, check=False)
            shutil.rmtree(self._tree, ignore_errors=True)
            self._tree = None
