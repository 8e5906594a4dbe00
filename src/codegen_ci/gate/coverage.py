"""Changed lines run by the tests: which executable lines of the change the test suite ran.

Measured after a passing final round, in a run of its own (the gate's run, its counts and
its JUnit stay as they are), confined like every command, by the runner's own coverage tool:
- Python (gate/coverage_python.py): `python -m pytest`, a bare `pytest` script and
  `python -m unittest` run under coverage.py (`coverage run --include=<the change's source
  files>`, `COVERAGE_CORE=sysmon`, then `coverage xml`; on CPython 3.10/3.11 slipcover records
  the lines and coverage.py writes the report); the Cobertura report is read through
  the guarded reader and parsed without DTDs or entities (defusedxml).
- Go (gate/coverage_go.py): `go test` and `gotestsum -- ...` with `-coverprofile` and
  `-coverpkg=<the changed packages>`; the profile, turned into LCov there, is read by
  diff-cover's LCov reader.
diff-cover matches the report against the change's own diff (made by our guarded git,
`Worktree.diff`, never by diff-cover's `git` calls): the changed lines the tool counts as
executable, which of them ran, and the others as `file:line` ranges. `measure` picks the
runner by the test command.

- jest, vitest and `node --test` (gate/coverage_node.py), run directly or by a package.json
  script: their own V8/istanbul coverage written as LCov, read by diff-cover's LCov reader.

Where coverage cannot be measured (more than one test command, a command of no shape above,
no source file of the runner's language changed, the coverage tool missing or its report
unreadable, the coverage run not passing), `ChangedLines.reason` says so and why.

`validation.proof.coverage` (0 to 1): a lower share of changed lines run makes the passing
round a reflection naming the lines no test runs (`uncovered_message`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    LcovCoverageReporter,
    XmlCoverageReporter,
)

from codegen_ci.gate import coverage_go, coverage_node, coverage_python
from codegen_ci.gate.test_runs import CommandPlaces, Runner, command_places
from codegen_ci.report import ChangedLines
from codegen_ci.runners import go
from codegen_ci.security import guarded_read
from codegen_ci.security.guarded_read import Refused
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.file_kinds import is_test_file
from codegen_ci.workspace.proc import ProcResult
from codegen_ci.workspace.worktree import Worktree

MAX_REPORT_BYTES = 20_000_000
MAX_RANGES = 20
NOT_MEASURED = (
    "coverage is measured for pytest (`python -m pytest`, `pytest`), `python -m unittest`, Go "
    "(`go test`, `gotestsum -- ...`), jest, vitest and `node --test` test commands"
)


@dataclass(frozen=True)
class Plan:
    """One runner's coverage run: `command` (with `env`) writes `report` (relative to the run's
    io folder) for `sources`; `reader` turns the report's bytes into diff-cover's coverage
    reporter (or a reason it names none of them). `missing`: the reason when no report was
    written; `what`: the report, as the reasons name it."""

    command: str
    env: Mapping[str, str]
    report: str
    sources: Sequence[str]
    reader: Callable[[bytes], Any]
    missing: str
    what: str = "coverage report"


@dataclass(kw_only=True)
class CoverageRun:
    worktree: Worktree
    validation: Validation
    work_dir: Path  # `<output>/coverage`: its log and JUnit copy
    env: Mapping[str, str]
    sandbox: Sandbox | None = None

    def measure(self) -> ChangedLines:
        if len(self.validation.test) != 1:
            return ChangedLines(reason="measured for one test command only")
        command = self.validation.test[0]
        places = command_places(self.sandbox, self.work_dir, "coverage")
        change = self.worktree.agent_changes()
        if coverage_node.runner_of(command, self.worktree.path):
            plan = self._node(command, change, places)  # jest, vitest, node --test
        elif go.is_go_test(command):
            plan = self._go(command, change, places)
        else:
            plan = self._python(command, change, places)
        return plan if isinstance(plan, ChangedLines) else self._measured(plan, places)

    def _python(
        self, command: str, change: Sequence[str], places: CommandPlaces
    ) -> Plan | ChangedLines:
        """coverage.py (gate/coverage_python.py), its Cobertura report."""
        sources = [p for p in change if p.endswith(".py") and not is_test_file(p)]
        tree = self.worktree.path
        covered = coverage_python.coverage_command(command, sources, places.io_dir, tree, self.env)
        if covered is None:  # before "no Python source": a Makefile's change may be Go
            return ChangedLines(reason=NOT_MEASURED)
        if not sources:
            return ChangedLines(reason="the change has no Python source file to measure")
        return Plan(
            command=covered,
            env=coverage_python.select_env(self.env, places.tool_dir, sources),
            report=coverage_python.REPORT,
            sources=sources,
            reader=lambda data: XmlCoverageReporter(
                [safe_etree.fromstring(data)], src_roots=[str(tree)]
            ),
            missing="no coverage report: is coverage.py installed for the repository's "
            "Python? (see coverage/logs/coverage.log)",
        )

    def _go(
        self, command: str, change: Sequence[str], places: CommandPlaces
    ) -> Plan | ChangedLines:
        """`go test -coverprofile` (gate/coverage_go.py), the profile read as LCov."""
        sources = [p for p in change if p.endswith(".go") and not is_test_file(p)]
        if not sources:
            return ChangedLines(reason="the change has no Go source file to measure")
        tree = self.worktree.path
        mods = coverage_go.modules(tree, sources)
        covered = go.coverage_command(command, coverage_go.packages(sources, mods), places.io_dir)
        if covered is None:
            return ChangedLines(
                reason="the Go test command sets its own -coverprofile or -coverpkg, or no "
                "go.mod holds the changed files"
            )

        def reader(data: bytes) -> LcovCoverageReporter:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            lcov = self.work_dir / "coverage.lcov"
            profile = data.decode("utf-8", errors="replace")
            lcov.write_text(coverage_go.profile_to_lcov(profile, mods), encoding="utf-8")
            return LcovCoverageReporter([LcovCoverageReporter.parse(str(lcov))], [str(tree)])

        return Plan(
            command=covered,
            env=self.env,
            report=go.COVER_PROFILE,
            sources=sources,
            reader=reader,
            missing="no cover profile: did the Go tests build? (see coverage/logs/coverage.log)",
            what="cover profile",
        )

    def _node(
        self, command: str, change: Sequence[str], places: CommandPlaces
    ) -> Plan | ChangedLines:
        """jest, vitest or `node --test` with their own coverage, read as LCov
        (gate/coverage_node.py)."""
        tree = self.worktree.path
        plan = coverage_node.plan(command, change, tree, places.io_dir)
        if plan is None or isinstance(plan, str):
            return ChangedLines(reason=plan or "not a jest, vitest or node --test command")
        sources, runner = plan.sources, plan.runner

        def reader(data: bytes) -> LcovCoverageReporter | ChangedLines:
            return coverage_node.lcov_report(data, tree, sources) or ChangedLines(
                reason=f"the {runner} coverage report names none of the changed files "
                "(is the runner rooted elsewhere than the repository?)"
            )

        return Plan(
            command=plan.command,  # a `coverage/` folder is not the change
            env=self.env,
            report=plan.report,
            sources=sources,
            reader=reader,
            missing=f"no coverage report: {runner} wrote no LCov (see coverage/logs/coverage.log)",
        )

    def _measured(self, plan: Plan, places: CommandPlaces) -> ChangedLines:
        """The one path of every runner's coverage: the run, its report read through the
        guarded reader, a run that did not pass, then diff-cover's verdict over the change's
        own diff of `plan.sources`."""
        run = self._run(plan.command, plan.env)
        try:
            data = guarded_read.read_bytes(places.io_dir, plan.report, max_bytes=MAX_REPORT_BYTES)
        except (Refused, OSError):
            return ChangedLines(reason=plan.missing)
        if not run.ok:
            return failed(run)
        tree = self.worktree.path
        try:
            # diff-cover resolves paths against a class-wide git root that `set_cwd` would ask
            # git for; it is the worktree, set here without running anything.
            GitPathTool._cwd = GitPathTool._root = str(tree)
            reporter = plan.reader(data)
            if isinstance(reporter, ChangedLines):
                return reporter
            return diff_cover_verdict(reporter, self.worktree.diff(list(plan.sources)), tree)
        except (ParseError, DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden) as exc:
            return ChangedLines(reason=f"the coverage report could not be read ({exc})")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # diff-cover reading a report the tests could shape: not a reason to stop the run
            return ChangedLines(reason=f"diff-cover could not use the {plan.what} ({exc})")

    def _run(self, command: str, env: Mapping[str, str]) -> ProcResult:
        """The coverage run, confined like every test command; what it leaves in the worktree
        (`.coverage`, a JUnit file) is no part of the change."""
        wrap = (
            self.sandbox.prefix(self.worktree.path, network="test" in self.validation.network)
            if self.sandbox
            else []
        )
        runner = Runner(self.worktree.path, self.validation, self.work_dir, self.sandbox, wrap)
        snapshot = self.worktree.snapshot()
        log = self.work_dir / "logs" / "coverage.log"
        try:
            return runner.run(command, env, "coverage", log).result
        finally:
            self.worktree.note_artifacts(snapshot)


def failed(run: ProcResult) -> ChangedLines:
    """A coverage run that did not pass, after a passing round: its figures are not the
    suite's (a test failed this time, the run was cut short)."""
    how = "timed out" if run.timed_out else f"exit {run.exit_code}"
    return ChangedLines(
        reason=f"the coverage run did not pass ({how}), so its figures are not the suite's "
        "(see coverage/logs/coverage.log)"
    )


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


def changed_lines(root: Element, diff: str, tree: Path) -> ChangedLines:
    """diff-cover's verdict on `diff` against the Cobertura report `root`."""
    # diff-cover resolves paths against a class-wide git root that `set_cwd` would ask git
    # for; it is the worktree, set here without running anything.
    GitPathTool._cwd = GitPathTool._root = str(tree)
    return diff_cover_verdict(XmlCoverageReporter([root], src_roots=[str(tree)]), diff, tree)


def diff_cover_verdict(coverage: Any, diff: str, tree: Path) -> ChangedLines:
    """diff-cover's verdict on `diff` against a coverage reporter of its own (Cobertura, LCov);
    the class-wide git root set to `tree` first."""
    GitPathTool._cwd = GitPathTool._root = str(tree)
    reporter = GitDiffReporter(compare_branch="base", git_diff=_Diff(diff))
    stats: dict[str, Any] = JsonReportGenerator(coverage, reporter).report_dict()
    total = int(stats["total_num_lines"])
    missing = int(stats["total_num_violations"])
    uncovered: list[Untrusted] = []  # the change's file names: data
    for path, found in sorted(stats["src_stats"].items()):
        uncovered += [
            Untrusted(f"{PurePosixPath(path).as_posix()}:{r}")
            for r in ranges(found["violation_lines"])
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
    shown = Untrusted.join("\n", (u.map(strip_invisible) for u in lines.uncovered[:MAX_RANGES]))
    return (
        f"Validation round {iteration} of {last} passed, but the tests run only "
        f"{lines.covered} of the {lines.total} changed executable lines "
        f"({lines.share:.0%}; this repository asks for {wanted:.0%}, validation.proof.coverage). "
        "Add or change tests that run the changed lines below, run by no test (or remove code "
        "the task does not need); keep the fix and the existing tests.\n\n"
        + fence("changed lines run by no test", shown)
    )
