"""The pre-flight: the repository's setup, lint and test commands on the untouched code, before
the first model call, so a configuration the model cannot fix costs no tokens
(gate/config_check.py), lint that already fails is known as pre-existing (gate/validation.py),
and test commands that write no JUnit get a note (gate/junit/capture.py).

Cost: setup runs here instead of in round 1 (no extra run); a pytest command only collects;
any other test command runs its suite once more, and that run then answers the baseline's
question (which failures are pre-existing) without a separate base-commit worktree.
"""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.baseline import Baseline
from codegen_ci.gate.config_check import check_round, check_tests_configured
from codegen_ci.gate.junit.capture import junit_hint
from codegen_ci.gate.round_outcome import RoundOutcome
from codegen_ci.gate.validation import Validator
from codegen_ci.report import JUnitMissing, PreexistingLint, Report, Round


def run_preflight(validator: Validator, baseline: Baseline, report: Report, cwd: Path) -> None:
    """Run the pre-flight round; raise `ConfigError` when the commands cannot work."""
    check_tests_configured(validator.validation)
    outcome = validator.preflight()
    report.preflight = outcome.round
    note_preexisting_lint(report, outcome)
    note_missing_junit(report, outcome.round, cwd)
    check_round(outcome.round, validator.validation, cwd)
    baseline.seed(outcome.round)


def note_preexisting_lint(report: Report, outcome: RoundOutcome) -> None:
    """Lint commands that fail on the untouched code: reported, left to the user."""
    report.preexisting_lint = [PreexistingLint(command=command, errors=errors[:20])
                               for command, errors in outcome.preexisting_lint.items()]  # fmt: skip


def note_missing_junit(report: Report, rnd: Round, cwd: Path) -> None:
    """Record each test command that ran and wrote no JUnit report, with how to get one."""
    known = {m.command for m in report.junit_missing}
    for record in rnd.commands:
        ran = record.kind == "test" and not (record.skipped or record.timed_out)
        ran = ran and not record.collect_only
        if ran and record.junit_tests is None and record.command not in known:
            known.add(record.command)
            hint = junit_hint(record.command, cwd)
            report.junit_missing.append(JUnitMissing(command=record.command, hint=hint))
