"""`--dry-run`: the pre-flight on the untouched code with every test command run in full (no
collect-only), and the first prompt the model would get, written to first-prompt.md; no model
call, no commit. A configuration error ends it as it would end a run (exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codegen_ci.gate.config_check import check_round, check_tests_configured
from codegen_ci.gate.preflight import note_missing_junit, note_preexisting_lint
from codegen_ci.gate.validation import Validator
from codegen_ci.report import Reason, Report, Status
from codegen_ci.security.redact import REDACTOR


def dry_run(validator: Validator, report: Report, worktree_path: Path, output_dir: Path,
            first_prompt: Callable[[], str]) -> None:  # fmt: skip
    check_tests_configured(validator.validation)
    outcome = validator.preflight(full=True)
    report.rounds.append(outcome.round)
    report.iterations = 0
    note_preexisting_lint(report, outcome)
    note_missing_junit(report, outcome.round, worktree_path)
    check_round(outcome.round, validator.validation, worktree_path)
    (output_dir / "first-prompt.md").write_text(REDACTOR.redact(first_prompt()), encoding="utf-8")
    report.finish(Status.SUCCESS if outcome.passed else Status.FAILED, Reason.DRY_RUN)
