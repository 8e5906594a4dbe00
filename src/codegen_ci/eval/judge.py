"""Which tests a task is about, whether a task is kept, and whether a run resolved it.

Everything is judged from the JUnit reports the gate copied into a run's output directory
(`junit/round-<i>-<nn>-test*.xml`; `junit/preflight-<nn>-test*.xml` for a dry run), by test id,
so no test result is taken from the model or from text it could shape: a kept task's *targets*
are the tests of the commit's changed test files that fail (or cannot even be collected) on the
base and pass with the commit's own change; a run resolves the task when its gate passed, every
target passed in its last round, and no test that passed on the base failed there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from codegen_ci.eval.history import Task, test_modules
from codegen_ci.gate.junit.parse import JUnitCase, parse_files
from codegen_ci.gate.validation import round_tag
from codegen_ci.report import Report, Status

DropReason = Literal["setup_failed", "tests_did_not_fail_before", "did_not_pass_after"]
REASON_TEXT = {
    "setup_failed": "setup failed",
    "tests_did_not_fail_before": "tests did not fail before",
    "did_not_pass_after": "did not pass after",
}


@dataclass
class Outcomes:
    """Test id -> outcome (passed, failure, error, skipped) of one round; a test reported
    twice in a round (a failing-first run, then the full suite) counts as the later report."""

    by_id: dict[str, str] = field(default_factory=dict)
    cases: dict[str, JUnitCase] = field(default_factory=dict)
    files: int = 0

    def passed(self) -> set[str]:
        return {i for i, o in self.by_id.items() if o == "passed"}

    def failing(self) -> set[str]:
        return {i for i, o in self.by_id.items() if o in ("failure", "error")}


def round_outcomes(output_dir: Path, iteration: int) -> Outcomes:
    paths = sorted((output_dir / "junit").glob(f"{round_tag(iteration)}-*-test*.xml"))
    result = parse_files(paths)
    outcomes = Outcomes(files=len(result.files))
    for case in result.cases:
        outcomes.by_id[case.key] = case.outcome
        outcomes.cases[case.key] = case
    return outcomes


def last_round(output_dir: Path, report: Report) -> Outcomes:
    return round_outcomes(output_dir, report.rounds[-1].iteration) if report.rounds else Outcomes()


def belongs(case: JUnitCase, test_files: list[str], modules: list[str]) -> bool:
    """Is this case one of the changed test files'? By the file JUnit names, else by pytest's
    dotted module prefix (`tests.test_x::test_y`, `tests.test_x.TestK::test_y`, or
    `tests.test_x` for a file that could not be collected)."""
    if case.file and any(case.file == f or case.file.endswith("/" + f) for f in test_files):
        return True
    name = case.classname or case.key
    return any(
        name == m or name.startswith(m + ".") or case.key.startswith(m + "::") or case.key == m
        for m in modules
    )


@dataclass
class CheckResult:
    kept: bool
    reason: DropReason | None = None
    detail: str = ""
    targets: list[str] = field(default_factory=list)  # fail before, pass after
    passed_before: list[str] = field(default_factory=list)  # must not fail in a model run
    changed_tests: int = 0  # cases of the changed test files, after


def check(task: Task, before: Outcomes, after: Outcomes, after_report: Report) -> CheckResult:
    """Keep the task only when its changed tests fail on the base and pass with the commit."""
    modules = test_modules(task.test_files)
    changed = {i: c for i, c in after.cases.items() if belongs(c, task.test_files, modules)}
    note = ""
    if not changed and after.cases:
        # The JUnit names no file of the commit's (gotestsum's package classnames, tests run
        # from a sub-directory): judge by every test's outcome instead.
        changed, note = dict(after.cases), " (by outcome: the JUnit names no changed test file)"
    failing_after = sorted(i for i in changed if after.by_id[i] in ("failure", "error"))
    passed_before = sorted(before.passed())
    if not changed:
        detail = "no test ran with the commit's change (no JUnit case)"
        return CheckResult(False, "did_not_pass_after", detail, passed_before=passed_before)
    if failing_after:
        shown = ", ".join(failing_after[:5])
        return CheckResult(
            False,
            "did_not_pass_after",
            f"{len(failing_after)} changed test(s) fail with the commit's own change: {shown}"
            + note,
            passed_before=passed_before,
            changed_tests=len(changed),
        )
    if after_report.status != Status.SUCCESS:
        return CheckResult(
            False,
            "did_not_pass_after",
            "the gate fails with the commit's own change: " + _first_failure(after_report),
            passed_before=passed_before,
            changed_tests=len(changed),
        )
    targets = sorted(
        i
        for i, o in after.by_id.items()
        if i in changed and o == "passed" and before.by_id.get(i, "error") in ("failure", "error")
    )
    if not targets:
        return CheckResult(
            False,
            "tests_did_not_fail_before",
            f"none of the {len(changed)} test(s) of the changed test files fails on the "
            "base" + note,
            passed_before=passed_before,
            changed_tests=len(changed),
        )
    return CheckResult(
        True,
        None,
        f"{len(targets)} test(s) fail before and pass after" + note,
        targets,
        passed_before,
        len(changed),
    )


def _first_failure(report: Report) -> str:
    if report.rounds and report.rounds[-1].failures:
        return report.rounds[-1].failures[0].id.raw_for("record")  # the result's detail
    return report.reason or report.status


@dataclass
class Verdict:
    resolved: bool
    why: str  # what decided it, in a few words


def resolved(
    report: Report, last: Outcomes, targets: list[str], passed_before: list[str]
) -> Verdict:
    """Resolved: the gate passed, every target passed in the last round, and no test that
    passed on the base fails there. A run that edited tests is never resolved."""
    if report.status != Status.SUCCESS:
        return Verdict(
            False, f"gate: {report.status}" + (f" ({report.reason})" if report.reason else "")
        )
    if report.tests_touched:
        return Verdict(False, "edited tests: " + ", ".join(report.tests_touched[:3]))
    missing = [t for t in targets if last.by_id.get(t) != "passed"]
    if missing:
        return Verdict(
            False, f"{len(missing)} target test(s) did not pass: {', '.join(missing[:3])}"
        )
    broke = sorted(set(passed_before) & last.failing())
    if broke:
        return Verdict(
            False, f"{len(broke)} test(s) that passed before fail: {', '.join(broke[:3])}"
        )
    return Verdict(True, f"{len(targets)} target test(s) pass, nothing that passed broke")
