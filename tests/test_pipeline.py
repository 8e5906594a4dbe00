"""`pipeline.execute()` in-process: the deterministic model drives the agent loop, pre-flight,
validation, baseline, reflection and finalize on a temporary git repository whose own pytest
suite is the gate. No process of ours is started (the e2e tests start the CLI)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.helpers.in_process import run_in_process
from tests.helpers.in_process import sample_spec as product_spec
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    NO_PROOF,
    PYTEST,
    QUICK_GATE,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.errors import ExitCode
from codegen_ci.gate.preflight import ConfigError
from codegen_ci.report import Reason, Report, Status
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import DeterministicModel, call, step

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)


def sample_spec(**overrides: Any) -> Spec:
    """The sample's spec with no proof run, no coverage run and no flaky re-run (two more
    pytest runs after a passing round, one after a failing one: tests/e2e/gate's proof and
    flaky tests are about those), unless `validation` names `proof`."""
    validation = {"test": [PYTEST], "timeout": 120, **overrides.pop("validation", {})}
    validation.setdefault("proof", NO_PROOF)
    return product_spec(validation=validation, **overrides)


def test_success_in_one_round_commits_the_fix(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    run = run_in_process(
        sample,
        sample_spec(),
        [step(None, call("read_file", path=VERSION_FILE)), step(None, FIX), step("Fixed.")],
    )
    report = run.report
    assert (report.status, report.reason) == (Status.SUCCESS, None), run.log
    assert report.iterations == 1 and len(report.rounds) == 1
    assert report.preflight is not None  # pre-flight ran before the model
    assert run.model.calls == 3
    # finalize: one commit on the run's branch holding exactly the fix
    assert report.commit and report.files_changed == [VERSION_FILE]
    shown = sample.git("show", "--format=%B", report.commit)
    assert f"+        {FIXED_LINE_NEW}" in shown and f"-        {FIXED_LINE_OLD}" in shown
    assert sample.git("rev-parse", report.branch or "").strip() == report.commit
    assert sample.git("rev-parse", f"{report.commit}^").strip() == sample.head()
    assert (run.output_dir / "report.json").is_file()
    assert (run.output_dir / "diff.patch").read_text().count(FIXED_LINE_NEW) == 1


def test_a_failed_round_is_reflected_to_the_model_which_succeeds_in_round_2(
    sample_repo: SampleRepo,
) -> None:
    sample = sample_repo
    script = [step("Looks fine to me."), step(None, FIX), step("Fixed.")]
    # the flaky re-run of round 1's failing test is this test's (its progress line)
    run = run_in_process(sample, sample_spec(validation={"proof": {"tests": "off"}}), script)
    report = run.report
    assert (report.status, report.iterations) == (Status.SUCCESS, 2), run.log
    assert [r.passed for r in report.rounds] == [False, True]
    # the model's second request ends with the reflection on round 1's failure
    reflection = run.model.requests[1][-1]
    assert reflection["role"] == "user"
    assert "test_bump_minor_resets_patch" in reflection["content"]
    assert "3.5.5" in reflection["content"]  # the assertion's message, as pytest wrote it
    assert "round 1" in reflection["content"].lower()
    # the progress lines say what the gate made of each round, not only the commands' exits
    verdicts = [ln.split("] ", 1)[1] for ln in run.log.splitlines() if "] round " in ln]
    assert verdicts[1] == "round 1: re-running 1 failing test(s)", run.log  # flaky?
    assert verdicts[2].startswith("round 1: not passed: 1 failing ("), run.log
    assert "test_bump_minor_resets_patch" in verdicts[2]
    assert verdicts[-1].startswith("round 2: passed; tests "), run.log


def test_the_same_failures_round_after_round_stop_the_run_as_stuck(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    spec = sample_spec(limits={"max_iterations": 5, "stuck_rounds": 2})
    run = run_in_process(sample, spec, [step("No idea."), step("Still no idea.")])
    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.STUCK), run.log
    assert report.iterations == 2 and run.model.calls == 2
    # baseline: the failing test fails on the base commit too, so it is not new
    failure = report.rounds[-1].failures[0]
    assert failure.key.endswith("test_bump_minor_resets_patch") and failure.new is False
    assert report.commit is None and report.branch is None  # nothing to commit


def test_the_last_round_failing_ends_at_max_iterations(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    # What the gate finds is not the subject (the reflection's content is the reflected
    # test's, above): its exit code alone, no pytest started (four starts fewer).
    spec = sample_spec(validation=QUICK_GATE, limits={"max_iterations": 2, "stuck_rounds": 3})
    run = run_in_process(sample, spec, [step("No idea.")])
    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.MAX_ITERATIONS), run.log
    assert report.iterations == 2 and run.model.calls == 2
    # round 1's failure was reflected; after the last round nothing more is asked
    told = run.model.requests[1][-1]
    assert told["role"] == "user" and "round 1" in told["content"].lower()
    assert QUICK_GATE["test"][0] in told["content"], told["content"]  # the failing command


def test_a_new_failure_is_new_and_one_on_the_base_commit_is_not(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    breaks_parse = call(
        "edit_file",
        path=VERSION_FILE,
        old_text="return cls(major, minor, patch)",
        new_text="return cls(major, minor, patch + 1)",
    )
    spec = sample_spec(limits={"max_iterations": 1})
    run = run_in_process(sample, spec, [step(None, breaks_parse), step("Done.")])
    failures = {f.key.rsplit("::", 1)[-1]: f.new for f in run.report.rounds[0].failures}
    assert failures["test_parse"] is True, run.log
    assert failures["test_bump_minor_resets_patch"] is False


def test_a_setup_that_fails_is_a_config_error_before_any_model_call(
    sample_repo: SampleRepo,
) -> None:
    sample = sample_repo
    spec = sample_spec(validation={"setup": ["sh -c 'exit 3'"], "test": [PYTEST]})
    model = DeterministicModel([step(None, FIX)])
    with pytest.raises(ConfigError) as raised:
        run_in_process(sample, spec, [], model=model)
    assert raised.value.exit_code == ExitCode.INPUT == 2
    assert model.calls == 0  # pre-flight stopped the run before the model was asked
    report = Report.model_validate_json((sample.tmp / "out-r1" / "report.json").read_text())
    assert (report.status, report.reason) == (Status.ERROR, Reason.CONFIG)
    assert "setup failed" in (report.error or "")
    assert report.iterations == 0 and report.commit is None


def test_a_lint_command_not_found_stops_the_preflight_before_the_tests(
    sample_repo: SampleRepo,
) -> None:
    """A command that cannot start (exit 127) is a configuration error whatever follows: the
    pre-flight runs nothing after it (the test commands are recorded as skipped)."""
    sample = sample_repo
    validation = {"lint": ["frobnicate-lint --check ."], "test": [PYTEST, "true"]}
    model = DeterministicModel([step(None, FIX)])
    with pytest.raises(ConfigError) as raised:
        run_in_process(sample, sample_spec(validation=validation), [], model=model)
    assert raised.value.exit_code == ExitCode.INPUT and model.calls == 0
    report = Report.model_validate_json((sample.tmp / "out-r1" / "report.json").read_text())
    assert report.preflight is not None
    states = [(c.kind, c.state) for c in report.preflight.commands]
    assert states == [("lint", "exit 127"), ("test", "skipped"), ("test", "skipped")]
    assert "frobnicate-lint" in (report.error or "") and "not found" in (report.error or "")


def test_a_gate_passing_on_no_change_is_no_change(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    # a gate the base commit passes already; the model changes nothing. What the gate finds
    # is not the subject: a check decided by its exit code (no pytest start)
    passing = {**QUICK_GATE, "test": [f"grep -q 'def bump_minor' {VERSION_FILE}"]}
    spec = sample_spec(validation=passing)
    run = run_in_process(sample, spec, [step("Nothing to do.")])
    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.NO_CHANGE), run.log
    assert report.commit is None and report.branch is None
    assert not git_branches(sample) - {"main"}


def test_skipping_the_failing_test_is_refused(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    skip = call(
        "edit_file",
        path="tests/test_version.py",
        old_text="def test_bump_minor_resets_patch():",
        new_text="import pytest\n\n\n@pytest.mark.skip\ndef test_bump_minor_resets_patch():",
    )
    spec = sample_spec(limits={"max_iterations": 1})
    run = run_in_process(sample, spec, [step(None, skip), step("Done.")])
    report = run.report
    assert report.status == Status.FAILED, run.log
    assert [(t.key.rsplit("::", 1)[-1], t.how) for t in report.removed_tests] == [
        ("test_bump_minor_resets_patch", "skipped")
    ]


def test_a_refused_round_says_so_though_its_commands_passed(sample_repo: SampleRepo) -> None:
    """The fix plus a skipped test: the test command exits 0, and the round's progress line
    says the round was refused and which test it skipped (a user reading `exit 0` round after
    round, then `failed (stuck)`, could not tell why)."""
    sample = sample_repo
    skip = call(
        "edit_file",
        path="tests/test_version.py",
        old_text="def test_parse():",
        new_text="import pytest\n\n\n@pytest.mark.skip\ndef test_parse():",
    )
    spec = sample_spec(limits={"max_iterations": 1})
    run = run_in_process(sample, spec, [step(None, FIX, skip), step("Done.")])
    assert run.report.status == Status.FAILED, run.log
    assert all(c.exit_code == 0 for c in run.report.rounds[0].commands), run.log
    verdict = next(ln for ln in run.log.splitlines() if "] round 1: " in ln and "turn" not in ln)
    assert "round 1: refused: the change skipped 1 existing test (" in verdict
    assert "test_parse" in verdict


def test_a_token_budget_used_up_stops_the_run(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    # what the gate finds is not the subject of this one and the next two: its exit code
    spec = sample_spec(validation=QUICK_GATE, limits={"max_tokens": 1000})
    expensive = step(None, call("read_file", path=VERSION_FILE), prompt_tokens=5000)
    run = run_in_process(sample, spec, [expensive, step(None, FIX), step("Fixed.")])
    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.BUDGET), run.log
    assert run.model.calls == 1 and report.usage.prompt_tokens == 5000


def git_branches(sample: SampleRepo) -> set[str]:
    return set(sample.git("branch", "--format=%(refname:short)").split())


def test_a_turn_runs_at_most_max_steps_tool_calls(sample_repo: SampleRepo) -> None:
    sample = sample_repo
    spec = sample_spec(validation=QUICK_GATE, limits={"max_iterations": 1, "max_steps": 1})
    both = step(None, call("read_file", path=VERSION_FILE), FIX)
    run = run_in_process(sample, spec, [both])
    # the second call of the reply was not run: the bug stays, the one round fails
    assert (run.report.status, run.report.reason) == (Status.FAILED, Reason.MAX_ITERATIONS)
    assert run.model.calls == 1
    assert run.report.commit is None, run.log


class Breaks(DeterministicModel):
    """A model whose second answer is a bug of ours (an exception no error class names)."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        if self.calls == 1:
            raise RuntimeError("a bug")
        return super().complete(messages, tools)


def test_an_unexpected_error_is_reported_as_an_error_not_a_failed_round(
    sample_repo: SampleRepo,
) -> None:
    """The loop marks a run `failed`/`max_iterations` before its first round; a bug raised in
    it must not leave that in report.json: status error, reason error, the exception named."""
    sample = sample_repo
    model = Breaks([step(None, call("read_file", path=VERSION_FILE))])
    with pytest.raises(RuntimeError):
        run_in_process(sample, sample_spec(validation=QUICK_GATE), [], model=model)
    report = Report.model_validate_json((sample.tmp / "out-r1" / "report.json").read_text())
    assert (report.status, report.reason) == (Status.ERROR, Reason.ERROR)
    assert "RuntimeError('a bug')" in (report.error or "")
