"""Which pre-flights answer for the proof's run on the base commit (`Prover.seed`): only one
that ran every test command in full, as the proof would run them there."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.proof import Prover
from codegen_ci.gate.validation import RoundOutcome
from codegen_ci.report import CommandResult, Round
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.worktree import Worktree

JEST = "npx jest --ci"
GO = "gotestsum --junitfile junit.xml -- ./..."
JUNIT = JUnitResult([], [], ["junit.xml"])


def prover(*tests: str) -> Prover:
    # seed reads the spec's test commands and the pre-flight alone: no worktree is touched
    return Prover(
        repo=Path("repo"),
        base_commit="0" * 40,
        validation=Validation(test=list(tests)),
        worktree=cast(Worktree, None),
        work_dir=Path("proof"),
        env={},
        tree_path=Path("repo-proof"),
    )


def preflight(*records: CommandResult) -> RoundOutcome:
    return RoundOutcome(Round(iteration=0, commands=list(records)), junit=JUNIT)


def ran(command: str, **how: object) -> CommandResult:
    fields: dict[str, object] = {"exit_code": 0, "duration_s": 1.0, "junit_tests": 2, **how}
    return CommandResult(command=command, kind="test", **fields)  # type: ignore[arg-type]


def test_a_preflight_that_ran_every_test_command_in_full_answers() -> None:
    one = prover(JEST, GO)
    lint = CommandResult(command="eslint .", kind="lint", exit_code=0, duration_s=1.0)
    outcome = preflight(lint, ran(JEST), ran(GO))
    one.seed(outcome, Path("repo"))
    assert one.preflight is not None and one.preflight[1] is JUNIT
    assert [r.command for r in one.preflight[0]] == [JEST, GO]


@pytest.mark.parametrize(
    ("tests", "records"),
    [
        pytest.param((JEST, GO), (ran(JEST),), id="a command not run"),
        pytest.param((JEST,), (ran(JEST, skipped=True),), id="skipped"),
        pytest.param((JEST,), (ran(JEST, targeted=True),), id="targeted"),
        pytest.param((JEST, GO), (ran(GO), ran(JEST)), id="another order"),
        pytest.param(("pytest -q",), (ran("pytest -q", collect_only=True),), id="collected only"),
        pytest.param(("python -m pytest",), (ran("python -m pytest"),), id="pytest in full"),
        pytest.param((), (), id="no test command"),
    ],
)
def test_a_preflight_that_did_not_run_them_all_in_full_answers_nothing(
    tests: tuple[str, ...], records: tuple[CommandResult, ...]
) -> None:
    one = prover(*tests)
    one.seed(preflight(*records), Path("repo"))
    assert one.preflight is None
