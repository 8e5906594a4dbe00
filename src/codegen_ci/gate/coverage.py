"""Changed lines run by the tests: which executable lines of the change the test suite ran.

Measured after a passing final round, in a run of its own (the gate's run, its counts and
its JUnit stay as they are): a `python -m pytest ...` command runs once more under coverage.py
(`python -m coverage run --include=<the change's source files> -m pytest ...`, then
`coverage xml`), confined like every command; `--include` and `COVERAGE_CORE=sysmon` keep
the tracer's cost to the changed files where Python has sys.monitoring (3.12+). The
Cobertura report is read through the guarded reader and parsed without
DTDs or entities (defusedxml), and diff-cover matches it against the change's own diff (made
by our guarded git, `Worktree.diff`, never by diff-cover's `git` calls): the changed lines
coverage.py counts as executable, which of them ran, and the others as `file:line` ranges.

jest, vitest and `node --test` commands (run directly or by a package.json script) run with
their runner's own V8/istanbul coverage written as LCov instead (gate/coverage_node.py: the
flags, the LCov read into diff-cover's `LcovCoverageReporter`); the verdict is the same
diff-cover match against the change's diff.

Where coverage cannot be measured (another command, coverage.py not importable by the
repository's Python, vitest without `@vitest/coverage-v8`, no source file changed),
`ChangedLines.reason` says so and why. Go (`go test -coverprofile`) is not measured yet.

`validation.proof.coverage` (0 to 1): a lower share of changed lines run makes the passing
round a reflection naming the lines no test runs (`uncovered_message`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_etree
from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from diff_cover.diff_reporter import GitDiffReporter
from diff_cover.git_path import GitPathTool
from diff_cover.report_generator import JsonReportGenerator
from diff_cover.violationsreporters.violations_reporter import (
    BaseViolationReporter,
    XmlCoverageReporter,
)

from codegen_ci import runners
from codegen_ci.gate import coverage_node
from codegen_ci.gate.test_runs import Runner, command_places
from codegen_ci.report import ChangedLines
from codegen_ci.security import guarded_read
from codegen_ci.security.guarded_read import Refused
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.file_kinds import is_test_file
from codegen_ci.workspace.worktree import Worktree

MAX_REPORT_BYTES = 20_000_000
MEASURED_SUFFIXES = (".py",)  # coverage.py: Python sources only
MAX_RANGES = 20


@dataclass(kw_only=True)
class CoverageRun:
    worktree: Worktree
    validation: Validation
    work_dir: Path  # `<output>/coverage`: its log and JUnit copy
    env: Mapping[str, str]
    sandbox: Sandbox | None = None

    def measure(self) -> ChangedLines:
        if len(self.validation.test) == 1 and coverage_node.runner_of(
            self.validation.test[0], self.worktree.path
        ):
            return self._node(self.validation.test[0])  # jest, vitest, node --test
        change = self.worktree.agent_changes()
        sources = [p for p in change if p.endswith(MEASURED_SUFFIXES) and not is_test_file(p)]
        if not sources:
            return ChangedLines(reason="the change has no Python source file to measure")
        if len(self.validation.test) != 1:
            return ChangedLines(reason="measured for one test command only")
        command = self.validation.test[0]
        places = command_places(self.sandbox, self.work_dir, "coverage")
        covered = coverage_command(command, sources, places.io_dir)
        if covered is None:
            return ChangedLines(
                reason="coverage is measured for `python -m pytest` commands (coverage.py) and "
                "jest, vitest and `node --test` (gate/coverage_node.py) only"
            )
        wrap = (
            self.sandbox.prefix(self.worktree.path, network="test" in self.validation.network)
            if self.sandbox
            else []
        )
        runner = Runner(self.worktree.path, self.validation, self.work_dir, self.sandbox, wrap)
        snapshot = self.worktree.snapshot()
        log = self.work_dir / "logs" / "coverage.log"
        try:
            runner.run(covered, self.env, "coverage", log)
        finally:
            self.worktree.note_artifacts(snapshot)  # `.coverage` files are not the change
        try:
            data = guarded_read.read_bytes(
                places.io_dir, "coverage.xml", max_bytes=MAX_REPORT_BYTES
            )
        except (Refused, OSError):
            return ChangedLines(
                reason="no coverage report: is coverage.py installed for the repository's "
                "Python? (see coverage/logs/coverage.log)"
            )
        try:
            root: Element = safe_etree.fromstring(data)
            return changed_lines(root, self.worktree.diff(sources), self.worktree.path)
        except (ParseError, DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden) as exc:
            return ChangedLines(reason=f"the coverage report could not be read ({exc})")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # diff-cover reading a report the tests could shape: not a reason to stop the run
            return ChangedLines(reason=f"diff-cover could not use the coverage report ({exc})")

    def _node(self, command: str) -> ChangedLines:
        """jest, vitest or `node --test` with their own coverage, read as LCov
        (gate/coverage_node.py)."""
        places = command_places(self.sandbox, self.work_dir, "coverage")
        change = self.worktree.agent_changes()
        plan = coverage_node.plan(command, change, self.worktree.path, places.io_dir)
        if plan is None or isinstance(plan, str):
            return ChangedLines(reason=plan or "not a jest, vitest or node --test command")
        wrap = (
            self.sandbox.prefix(self.worktree.path, network="test" in self.validation.network)
            if self.sandbox
            else []
        )
        runner = Runner(self.worktree.path, self.validation, self.work_dir, self.sandbox, wrap)
        snapshot = self.worktree.snapshot()
        try:
            runner.run(plan.command, self.env, "coverage", self.work_dir / "logs" / "coverage.log")
        finally:
            self.worktree.note_artifacts(snapshot)  # a `coverage/` folder is not the change
        try:
            data = guarded_read.read_bytes(places.io_dir, plan.report, max_bytes=MAX_REPORT_BYTES)
        except (Refused, OSError):
            return ChangedLines(
                reason=f"no coverage report: {plan.runner} wrote no LCov "
                "(see coverage/logs/coverage.log)"
            )
        try:
            reporter = coverage_node.lcov_report(data, self.worktree.path, plan.sources)
            if reporter is None:
                return ChangedLines(
                    reason=f"the {plan.runner} coverage report names none of the changed files "
                    "(is the runner rooted elsewhere than the repository?)"
                )
            diff = self.worktree.diff(list(plan.sources))
            return changed_lines(reporter, diff, self.worktree.path)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # diff-cover reading a report the tests could shape: not a reason to stop the run
            return ChangedLines(reason=f"diff-cover could not use the coverage report ({exc})")


def coverage_command(command: str, sources: Sequence[str], io_dir: Path) -> str | None:
    """`command` under its runner's coverage tool, its Cobertura report in
    `io_dir/coverage.xml` (each runner's `coverage_command`, runners/: pytest's runs
    coverage.py); None where no runner measures it."""
    return runners.coverage_command(command, sources, io_dir)


class _Diff:
    """The change's diff, for diff-cover, in place of its `git diff` calls."""

    range_notation = "..."

    def __init__(self, text: str) -> None:
        self.text = text

    def diff_committed(self, compare_branch: str = "") -> str:
        return self.text

    def diff_staged(self) -> str:
        return ""

    def diff_unstaged(self) -> str:
        return ""


def changed_lines(root: Element | BaseViolationReporter, diff: str, tree: Path) -> ChangedLines:
    """diff-cover's verdict on `diff` against the Cobertura report `root` (or another
    diff-cover coverage reporter: LCov, gate/coverage_node.py)."""
    # diff-cover resolves paths against a class-wide git root that `set_cwd` would ask git
    # for; it is the worktree, set here without running anything.
    GitPathTool._cwd = GitPathTool._root = str(tree)
    reporter = GitDiffReporter(compare_branch="base", git_diff=_Diff(diff))
    coverage = (
        root
        if isinstance(root, BaseViolationReporter)
        else XmlCoverageReporter([root], src_roots=[str(tree)])
    )
    stats: dict[str, Any] = JsonReportGenerator(coverage, reporter).report_dict()
    total = int(stats["total_num_lines"])
    missing = int(stats["total_num_violations"])
    uncovered: list[str] = []
    for path, found in sorted(stats["src_stats"].items()):
        uncovered += [
            f"{PurePosixPath(path).as_posix()}:{r}" for r in ranges(found["violation_lines"])
        ]
    return ChangedLines(
        measured=True,
        covered=total - missing,
        total=total,
        uncovered=uncovered,
        reason="" if total else "no changed line is executable",
    )


def ranges(lines: Sequence[int]) -> list[str]:
    """[40, 41, 42, 44] -> ["40-42", "44"]."""
    spans: list[list[int]] = []
    for line in sorted(set(lines)):
        if spans and spans[-1][1] == line - 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return [str(a) if a == b else f"{a}-{b}" for a, b in spans]


def below(validation: Validation, lines: ChangedLines) -> bool:
    """`validation.proof.coverage` set, measured, and fewer changed lines run than it asks."""
    wanted = validation.proof.coverage
    return wanted is not None and lines.measured and lines.total > 0 and lines.share < wanted


def uncovered_message(lines: ChangedLines, wanted: float, *, iteration: int, last: int) -> str:
    """The model's next message when too few changed lines ran."""
    shown = ", ".join(lines.uncovered[:MAX_RANGES])
    return (
        f"Validation round {iteration} of {last} passed, but the tests run only "
        f"{lines.covered} of the {lines.total} changed executable lines "
        f"({lines.share:.0%}; this repository asks for {wanted:.0%}, validation.proof.coverage). "
        f"{shown} are run by no test. Add or change tests that run them (or remove code the "
        "task does not need); keep the fix and the existing tests."
    )
