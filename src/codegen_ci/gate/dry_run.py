"""`--dry-run`: one validation round on the untouched code and the first prompt the model
would get, written to first-prompt.md; no model call, no commit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codegen_ci.gate.config_check import check_round
from codegen_ci.gate.preflight import note_missing_junit
from codegen_ci.gate.validation import Validator
from codegen_ci.report import Report
from codegen_ci.security.redact import REDACTOR


def dry_run(validator: Validator, report: Report, worktree_path: Path, output_dir: Path,
            first_prompt: Callable[[], str]) -> None:  # fmt: skip
    outcome = validator.run_round(1)
    report.rounds.append(outcome.round)
    report.iterations = 0
    note_missing_junit(report, outcome.round, worktree_path)
    check_round(outcome.round)  # a configuration error ends the dry run too (exit 2)
    (output_dir / "first-prompt.md").write_text(REDACTOR.redact(first_prompt()), encoding="utf-8")
    report.status, report.reason = ("success" if outcome.passed else "failed"), "dry-run"
