"""`run.resume(run_dir) -> Report` in-process: a run stopped by its cancellation token, or one
that failed, goes on with its transcript, worktree or branch; a deterministic model
(`model_factory`) plays both attempts. No process of ours is started."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.in_process import Hooked, ScriptedModels, one_model, quiet, sample_spec
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    PYTEST,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.cancel import Cancel
from codegen_ci.errors import InputError, Interrupted
from codegen_ci.report import Reason, Report, Status
from codegen_ci.run.directory import RunState
from codegen_ci.run.resume import resume
from codegen_ci.run.start import RunRequest, start
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import call, step

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)
BRANCH = "codegen/reset-patch-in-bump-minor"


def resumable(*, suite: bool = False, **limits: int) -> Spec:
    """The sample task. Its gate: the sample's pytest suite when the test reads what the suite
    reports (`suite`), else a check of the fixed line (exit codes alone decide); never the
    proof run (gate/proof's subject, not resume's)."""
    gate = [PYTEST] if suite else [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION_FILE}"]
    return sample_spec(
        validation={
            "test": gate,
            "allow_no_tests": not suite,
            "proof": {"tests": "off", "reruns": 0},
        },
        limits={"max_iterations": 3, **limits},
    )


@pytest.fixture
def sample(sample_repo: SampleRepo) -> SampleRepo:
    """The sample repository, copied from the session's template (tests/conftest.py)."""
    return sample_repo


def interrupted_run(sample: SampleRepo) -> tuple[Path, ScriptedModels]:
    """The sample task, its run stopped by its cancellation token once the model has answered
    its first request (the fix): the run directory, and the models, whose second script is
    for the resume."""
    out = sample.tmp / "out"
    models = one_model([step(None, FIX), step("Done.")], [step("The fix is in place.")])
    cancel = Cancel()
    with pytest.raises(Interrupted):
        start(
            RunRequest(
                resumable(),
                sample.path,
                out,
                progress=quiet(),
                cancel=cancel,
                model_factory=Hooked(models, lambda _name, n: cancel.set()),
            )
        )
    return out, models


def test_resume_continues_an_interrupted_run_in_its_worktree(sample: SampleRepo) -> None:
    head = sample.head()
    out, models = interrupted_run(sample)
    stopped = Report.read(out)
    assert stopped.reason == Reason.INTERRUPTED and stopped.worktree

    report = resume(out, model_factory=models)

    assert (report.status, report.reason) == (Status.SUCCESS, None)
    assert report.commit and report.worktree is None
    assert not Path(stopped.worktree).exists()
    assert sample.git("rev-parse", BRANCH).strip() == report.commit
    assert FIXED_LINE_NEW in sample.git("show", f"{BRANCH}:{VERSION_FILE}")
    # the second model went on with the first one's conversation, told it was resumed
    first, second = models.made
    assert second.requests[0][: len(first.requests[0])] == first.requests[0]
    assert "resumed" in second.requests[0][-1]["content"]
    assert Report.read(out).status == Status.SUCCESS
    assert sample.head() == head and sample.git("worktree", "list").count("\n") == 1


def test_resume_continues_a_failed_run_and_refuses_one_that_succeeded(sample: SampleRepo) -> None:
    out = sample.tmp / "out"
    models = one_model([step("I see no problem.")], [step(None, FIX), step("Fixed now.")])
    spec = resumable(suite=True, max_iterations=1)
    failed = start(RunRequest(spec, sample.path, out, progress=quiet(), model_factory=models))
    assert (failed.status, failed.branch) == (Status.FAILED, None)

    report = resume(out, model_factory=models)

    assert report.status == Status.SUCCESS and report.iterations == 2
    assert FIXED_LINE_NEW in sample.git("show", f"{report.branch}:{VERSION_FILE}")
    note = models.made[1].requests[0][-1]["content"]
    assert "resumed" in note and "test_bump_minor_resets_patch" in note
    with pytest.raises(InputError, match="already succeeded"):
        resume(out, model_factory=models)


def test_resume_after_a_wip_commit_leaves_one_commit(sample: SampleRepo) -> None:
    head = sample.head()
    out = sample.tmp / "out"
    wrong = call(
        "edit_file",
        path=VERSION_FILE,
        old_text=FIXED_LINE_OLD,
        new_text="return Version(self.major, self.minor + 1, 1)",
    )
    fix = call(
        "edit_file", path=VERSION_FILE, old_text="self.minor + 1, 1)", new_text="self.minor + 1, 0)"
    )
    models = one_model([step(None, wrong), step("Done, I think.")], [step(None, fix)])
    spec = resumable(max_iterations=1)
    failed = start(RunRequest(spec, sample.path, out, progress=quiet(), model_factory=models))
    assert failed.status == Status.FAILED and failed.branch
    assert sample.git("log", "-1", "--format=%s", failed.branch).startswith("wip(semver): ")

    report = resume(out, model_factory=models)

    assert report.status == Status.SUCCESS and report.branch == failed.branch
    assert sample.git("rev-list", "--count", f"{head}..{failed.branch}").strip() == "1"
    assert sample.git("log", "-1", "--format=%s", failed.branch).startswith("fix(semver): ")
    assert FIXED_LINE_NEW in sample.git("show", f"{failed.branch}:{VERSION_FILE}")


def test_a_folder_that_is_no_run_directory_is_bad_input(sample: SampleRepo) -> None:
    with pytest.raises(InputError, match="not a codegen-ci run directory"):
        resume(sample.tmp, model_factory=one_model())


def test_a_run_started_meanwhile_takes_another_slot_and_resume_goes_on_in_its_own(
    sample: SampleRepo,
) -> None:
    """An interrupted run's worktree stays in its slot (workspace/slots.py) for `resume`: a
    run started in between works in the next slot, and leaves the first one as it was."""
    out, models = interrupted_run(sample)
    stopped = Path(Report.read(out).worktree or "")
    assert stopped.parent.name == "slot-0"

    start(RunRequest(resumable(), sample.path, sample.tmp / "dry", dry_run=True, progress=quiet()))

    meanwhile = RunState.read(sample.tmp / "dry").worktree
    assert meanwhile == stopped.parent.with_name("slot-1") / stopped.name
    assert FIXED_LINE_NEW in (stopped / VERSION_FILE).read_text()
    report = resume(out, model_factory=models)
    assert report.status == Status.SUCCESS and not stopped.exists()
    assert FIXED_LINE_NEW in sample.git("show", f"{BRANCH}:{VERSION_FILE}")
