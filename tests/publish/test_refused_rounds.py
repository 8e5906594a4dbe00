"""A round the gate refused because the change removed an existing test (its commands all
passed: `exit 0`, `0 failed`) says so where people read the run, naming the test: the pull
request body, the failure comment, the job summary and the status comment's progress edit.
The run is real (`pipeline.execute()` on the sample repository, the deterministic model);
the status comment goes to the GitHub double over loopback HTTP."""

from __future__ import annotations

import io
from pathlib import Path

from tests.helpers.in_process import InProcessRun, run_in_process, sample_spec
from tests.helpers.sample_repo import FIX, NO_PROOF, PYTEST, make_sample_repo

from codegen_ci.publish.github import GitHubPublisher, GitHubTarget
from codegen_ci.publish.report_text import failure_comment, pr_body, summary_markdown
from codegen_ci.publish.status import StatusComment, StatusProgress
from codegen_ci.report import Round, Status
from codegen_ci.testing.deterministic_model import call, step
from codegen_ci.testing.github_double import GitHubDouble

TEST_FILE = "tests/test_version.py"
BUG = "test_bump_minor_resets_patch"
BUG_ID = f"tests.test_version::{BUG}"
# No proof run after the passing round, no re-run of a failing one: not what these are about
# (the refusal is the kept-tests check, validation.protect_tests).
VALIDATION = {"test": [PYTEST], "timeout": 120, "proof": NO_PROOF}
REFUSED = f"🛡️ Round 1 refused, the change removed 1 existing test: `{BUG_ID}`"


def _refused_then(tmp_path: Path, *, fixed: bool) -> InProcessRun:
    """Round 1 deletes the failing test; round 2 restores it and fixes the code, or not."""
    sample = make_sample_repo(tmp_path)
    original = (sample.path / TEST_FILE).read_text()
    body = original[original.index(f"def {BUG}") :]
    delete = call("edit_file", path=TEST_FILE, old_text=body, new_text="")
    restore = call("write_file", path=TEST_FILE, content=original)
    after = [step(None, restore, FIX), step("Fixed.")] if fixed else [step("I cannot.")]
    script = [step(None, delete), step("Removed the failing test."), *after]
    return run_in_process(
        sample, sample_spec(validation=VALIDATION, limits={"max_iterations": 2}), script
    )


def test_a_refused_round_names_its_test_in_the_pr_body_summary_and_status_comment(
    tmp_path: Path,
) -> None:
    run = _refused_then(tmp_path, fixed=True)
    report = run.report
    assert report.status == Status.SUCCESS and report.iterations == 2, run.log
    first = report.rounds[0]
    assert all(c.exit_code == 0 for c in first.commands) and first.tests.failed == 0
    body = pr_body(report, task="fix", issue_number=None, run_url=None)
    assert REFUSED in body
    assert "Failures fixed along the way" not in body  # put back, not fixed
    assert REFUSED in summary_markdown(report, run_url=None)
    status = _status_after(first)
    assert f"Round 1 refused, existing test(s) not kept: `{BUG_ID}`" in status
    assert "exit 0" not in status


def test_a_run_that_stays_refused_names_its_test_in_the_failure_comment(tmp_path: Path) -> None:
    run = _refused_then(tmp_path, fixed=False)
    report = run.report
    assert report.status == Status.FAILED, run.log
    assert REFUSED in failure_comment(report, run_url=None)


def _status_after(first: Round) -> str:
    """The status comment as the progress edit leaves it when round 2 starts."""
    warnings: list[str] = []
    with GitHubDouble("octo-org/hello", token="t0k") as gh:
        issue = gh.add_issue("bump_minor keeps the patch", "3.4.5 -> 3.5.5")
        publisher = GitHubPublisher(GitHubTarget(gh.url, "octo-org/hello", "t0k"), backoff=0.0)
        status = StatusComment(publisher, issue.number, None, warnings.append)
        progress = StatusProgress(status, stream=io.StringIO(), every_s=0.0)
        progress.round_started(1, 2)
        for command in first.commands:
            progress.command_finished(command)
        progress.round_finished(first)
        progress.round_started(2, 2)
        comments = [c.body for c in gh.comments.values() if c.issue_number == issue.number]
    assert warnings == [] and len(comments) == 1
    return comments[0] or ""
