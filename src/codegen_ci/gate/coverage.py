"""Changed lines run by the tests: which executable lines of the change the test suite ran.

Measured after a passing final round, in a run of its own (the gate's run, its counts and
its JUnit stay as they are), confined like every command, by the runner's own coverage tool.
How is each runner's (runners/: `coverage_plan`, asked through the registry): the command
that writes the report, its environment, the report's format (Cobertura or LCov, what
diff-cover reads; Go's cover profile converted to LCov by the runner's `convert`), the
harness files the run loads (pytest's and unittest's `codegen_cov_run`, `codegen_cov_select`
and the tool's slipcover, put in the tool's read-only folder here: `install_plugins`). Here,
the one path of every runner: the run, its report read through the guarded reader (never from
a path a command could swap), parsed without DTDs or entities (defusedxml) or, as LCov, its
`SF:` paths made relative to the worktree and parsed from an anonymous file of ours.
diff-cover matches the report against the change's own diff (made by our guarded git,
`Worktree.diff`, never by diff-cover's `git` calls): the changed lines the tool counts as
executable, which of them ran, and the others as `file:line` ranges.

Where coverage cannot be measured (more than one test command, a command no runner measures,
no source file of the runner's language changed, the coverage tool missing or its report
unreadable, the coverage run not passing), `ChangedLines.reason` says so and why.

`validation.proof.coverage` (0 to 1): a lower share of changed lines run makes the passing
round a reflection naming the lines no test runs (`uncovered_message`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
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
    LcovCoverageReporter,
    XmlCoverageReporter,
)

from codegen_ci import runners
from codegen_ci.gate import project_source
from codegen_ci.gate.test_runs import CommandPlaces, Runner, command_places
from codegen_ci.report import ChangedLines
from codegen_ci.runners import CoverageAsk, CoveragePlan
from codegen_ci.runners.base import Folder, in_folder, plain_tokens
from codegen_ci.security import guarded_read
from codegen_ci.security.guarded_read import Refused
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.file_kinds import is_test_file
from codegen_ci.workspace.proc import ProcResult
from codegen_ci.workspace.worktree import Worktree

MAX_REPORT_BYTES = 20_000_000
MAX_READ_BYTES = 1_000_000  # a repository file a runner's plan reads (package.json, go.mod)
MAX_RANGES = 20
NOT_MEASURED = "coverage is measured for the test commands of " + ", ".join(runners.measured())
# `cd tests && python -m pytest | tee log`: a pytest command, yet not one the runners wrap
# (they rewrite a plain command, or one run from a folder: `cd dir && …`), so "measured for
# pytest" would mislead.
SHELL_LINE = (
    "not measured for a test command that is a shell line (a pipe, `;`, a variable, a `cd` "
    "out of the repository): coverage wraps a plain runner command only (`cd dir && …` "
    "included)"
)
PLUGIN_FOLDER = "coverage_plugin"  # in the tool's read-only folder


def not_measured(command: str) -> str:
    """Why no runner measures `command`'s coverage, in words that do not mislead."""
    return SHELL_LINE if plain_tokens(in_folder(command)[1]) is None else NOT_MEASURED


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
        ask = coverage_ask(self.worktree.path, change, places.io_dir, places.tool_dir, self.env)
        plan = runners.coverage_plan(command, ask)
        if plan is None or isinstance(plan, str):
            return ChangedLines(reason=plan or not_measured(command))
        install_plugins(plan.plugins, ask.plugin_dir)
        return self._measured(plan, places)

    def _measured(self, plan: CoveragePlan, places: CommandPlaces) -> ChangedLines:
        """The one path of every runner's coverage: the run, its report read through the
        guarded reader, a run that did not pass, then diff-cover's verdict over the change's
        own diff of `plan.sources`."""
        run = self._run(plan.command, self.env if plan.env is None else plan.env)
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
            reporter = self._reporter(plan, data)
            if isinstance(reporter, ChangedLines):
                return reporter
            return diff_cover_verdict(reporter, self.worktree.diff(list(plan.sources)), tree)
        except (ParseError, DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden) as exc:
            return ChangedLines(reason=f"the coverage report could not be read ({exc})")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            # diff-cover reading a report the tests could shape: not a reason to stop the run
            return ChangedLines(reason=f"diff-cover could not use the {plan.what} ({exc})")

    def _reporter(self, plan: CoveragePlan, data: bytes) -> Any:
        """diff-cover's coverage reporter over the report's bytes, in its format."""
        tree = self.worktree.path
        if plan.format == "cobertura":
            return XmlCoverageReporter([safe_etree.fromstring(data)], src_roots=[str(tree)])
        text = data.decode("utf-8", errors="replace")
        if plan.convert is not None:
            text = plan.convert(text)
            self.work_dir.mkdir(parents=True, exist_ok=True)
            (self.work_dir / "coverage.lcov").write_text(text, encoding="utf-8")  # to look at
        parsed = parse_lcov(text, tree, plan.folder)
        if plan.unnamed and not any(s in parsed for s in plan.sources):
            return ChangedLines(reason=plan.unnamed)
        return LcovCoverageReporter([parsed], src_roots=[str(tree)])

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


def coverage_ask(
    tree: Path, change: Sequence[str], io_dir: Path, tool_dir: Path, env: Mapping[str, str]
) -> CoverageAsk:
    """What the runners' coverage plans are given: the change's files that are not tests,
    the worktree's files through the guarded reader, the plugin folder in the tool's folder,
    and a command's interpreter as the pre-flight finds it."""
    return CoverageAsk(
        sources=tuple(p for p in change if not is_test_file(p)),
        tree=tree,
        io_dir=io_dir,
        plugin_dir=tool_dir / PLUGIN_FOLDER,
        env=env,
        read=lambda rel: _read(tree, rel),
        python=lambda command, cwd: project_source.command_python(command, env, cwd, tree),
    )


def _read(tree: Path, rel: str) -> str | None:
    """A repository file a runner's plan asks for, through the guarded reader."""
    try:
        return guarded_read.read_text(tree, rel, max_bytes=MAX_READ_BYTES)
    except (Refused, OSError):
        return None


def install_plugins(names: Sequence[str], plugin_dir: Path) -> None:
    """The harness files a coverage plan names, put in `plugin_dir` (the tool's read-only
    folder, which commands can read and not write): `<module>.py`, the module of gate/ of that
    name (they run inside the repository's test process, so they are files the tests import
    by path, never modules the tool imports); `vendor/<package>`, the tool's own installed
    package (with its compiled modules, whose recorded times copytree keeps), found without
    importing it (its extension is for the tests' process, not ours); nothing when the tool
    has none (pytest's coverage run then uses coverage.py's tracer)."""
    plugin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = plugin_dir / name
        if name.endswith(".py"):
            if not target.is_file():
                shutil.copyfile(Path(__file__).with_name(name), target)
            continue
        if target.is_dir():
            continue
        spec = importlib.util.find_spec(PurePosixPath(name).name)
        if spec is not None and spec.submodule_search_locations:
            shutil.copytree(next(iter(spec.submodule_search_locations)), target)


def parse_lcov(text: str, tree: Path, folder: str = "") -> dict[str, Any]:
    """diff-cover's reading of the LCov `text`, `SF:` paths under `tree` made relative to it,
    as the diff names them; a relative one is relative to `folder`, the repository's folder
    the command ran in (`cd DIR && jest`: its paths are relative to DIR)."""
    roots = {str(tree).rstrip("/") + "/", os.path.realpath(tree).rstrip("/") + "/"}
    lines = []
    for line in text.splitlines():
        root = next((r for r in roots if line.startswith("SF:" + r)), None)
        if root:
            line = "SF:" + line[3 + len(root) :]
        elif line.startswith("SF:"):
            line = "SF:" + Folder(folder).outward(
                PurePosixPath(line[3:].replace("\\", "/")).as_posix()
            )
        if line.strip():  # diff-cover refuses blank lines
            lines.append(line)
    # diff-cover's parser opens what it is given: an anonymous file of ours, never a path a
    # command could swap
    with tempfile.TemporaryFile() as copy:
        copy.write("\n".join(lines).encode() + b"\n")
        copy.flush()
        copy.seek(0)
        parsed: dict[str, Any] = LcovCoverageReporter.parse(os.dup(copy.fileno()))
    return parsed


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
