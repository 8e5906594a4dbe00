"""A failed test command that wrote no JUnit names no test: it is re-run whole, once (as
`validation.proof.reruns` allows), and one that passes on the re-run is flaky itself, named by
its failure's id, never the model's failure (gate/flaky.py). The run is real
(`pipeline.execute()` on the sample repository, the deterministic model); the flaky command
fails on its first run in each round and passes on the next (a marker it leaves in the
worktree, which each round's clearing removes)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.in_process import run_in_process, sample_spec
from tests.helpers.sample_repo import FIX, QUICK_GATE, SampleRepo, copy_sample_repo

from codegen_ci.report import Status
from codegen_ci.testing.deterministic_model import step

FLAKY = "if [ -e .second ]; then echo ok; else touch .second; echo 'lost a race' >&2; exit 1; fi"
BROKEN = "echo 'always broken' >&2; exit 1"


def run_with(
    template: SampleRepo, tmp_path: Path, command: str, reruns: int = 1
) -> tuple[Status, list[str], str]:
    tmp_path.mkdir(exist_ok=True)
    sample = copy_sample_repo(template, tmp_path)  # the session's sample (tests/conftest.py)
    # beside the command, the fix's check decided by its exit code (the sample's pytest is not
    # the subject: two starts a run fewer); a command that wrote no JUnit is
    spec = sample_spec(
        validation={
            "test": [*QUICK_GATE["test"], command],
            "allow_no_tests": True,
            "timeout": 120,
            "proof": {"tests": "off", "reruns": reruns},
        },
        limits={"max_iterations": 1},
    )
    run = run_in_process(sample, spec, [step(None, FIX), step("Fixed.")])
    flaky = [f.key for f in run.report.proof.flaky] if run.report.proof else []
    return run.report.status, flaky, run.log


def test_a_command_without_junit_that_passes_on_a_re_run_is_flaky(
    sample_template: SampleRepo, tmp_path: Path
) -> None:
    status, flaky, log = run_with(sample_template, tmp_path, FLAKY)

    assert status == Status.SUCCESS, log
    assert flaky == [f"test: {FLAKY}"]
    assert "round 1: re-running 1 failed test command(s) that wrote no JUnit" in log


def test_one_that_fails_again_or_with_no_re_runs_fails_the_round(
    sample_template: SampleRepo, tmp_path: Path
) -> None:
    status, flaky, log = run_with(sample_template, tmp_path / "broken", BROKEN)
    assert (status, flaky) == (Status.FAILED, []), log
    status, flaky, log = run_with(sample_template, tmp_path / "none", FLAKY, reruns=0)
    assert (status, flaky) == (Status.FAILED, []), log
    assert "re-running" not in log
