"""publish/flow.py after an in-process run: the deterministic model fixes the sample
repository through `pipeline.execute()`, then `publish_new_branch` pushes the run's commit to
the repository's (bare, local) origin and opens the pull request on the GitHub double over
loopback HTTP (a process-boundary fake). No process of ours is started."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.in_process import run_in_process, sample_spec
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    NO_PROOF,
    PYTEST,
    VERSION_FILE,
    make_sample_repo,
)

from codegen_ci.publish.flow import NewBranch, Publishing, publish_new_branch
from codegen_ci.publish.github import GitHubPublisher, GitHubTarget
from codegen_ci.publish.status import StatusComment
from codegen_ci.report import Status
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.testing.deterministic_model import call, step
from codegen_ci.testing.github_double import GitHubDouble

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)


def test_a_successful_run_is_pushed_and_opened_as_a_pull_request(tmp_path: Path) -> None:
    sample = make_sample_repo(tmp_path)
    # no proof run after the passing round: publishing is what this is about
    spec = sample_spec(validation={"test": [PYTEST], "timeout": 120, "proof": NO_PROOF})
    run = run_in_process(sample, spec, [step(None, FIX), step("Fixed.")])
    report = run.report
    assert report.status == Status.SUCCESS and report.branch and report.commit, run.log
    warnings: list[str] = []
    with GitHubDouble("octo-org/hello", token="t0k") as gh:
        issue = gh.add_issue("bump_minor keeps the patch", "3.4.5 -> 3.5.5")
        publisher = GitHubPublisher(GitHubTarget(gh.url, "octo-org/hello", "t0k"), backoff=0.0)
        status = StatusComment(publisher, issue.number, None, warnings.append)
        publishing = Publishing(sample.path, None, publisher, status, None, warnings.append)
        title = Untrusted("Reset patch in bump_minor")
        to = NewBranch(report.branch, "main", title, issue.number, False)
        published = publish_new_branch(publishing, report, spec, to)
        pulls = gh.pulls()
        comments = [c.body for c in gh.comments.values() if c.issue_number == issue.number]
    assert warnings == []
    # the run's commit is on the origin's branch, and the pull request is for that branch
    pushed = sample.git("ls-remote", "origin", f"refs/heads/{report.branch}").split()
    assert pushed[0] == report.commit
    assert len(pulls) == 1 and pulls[0].pull is not None
    assert (pulls[0].pull.head_ref, pulls[0].pull.base_ref) == (report.branch, "main")
    assert f"#{issue.number}" in (pulls[0].body or "")  # the body links the issue
    assert published.pr_url.endswith(f"/pull/{pulls[0].number}")
    assert published.branch == report.branch
    assert len(comments) == 1 and "opened" in comments[0] and published.pr_url in comments[0]
