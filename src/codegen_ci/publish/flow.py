"""After the pipeline: push, open or update the pull request, and say what happened in the
status comment.

Two shapes of result:

* a branch of our own (`codegen/<issue>-<slug>`, or the spec's for a dispatch): pushed with
  `--force-with-lease` (a re-run rewrites it from the default branch), then one pull request
  for it, adopted when it exists already;
* a pull request's own branch (a `/codegen` comment on a PR): the commit goes on top, pushed
  without force, and no new pull request.

A failed run opens no ready-for-review pull request: it comments with the failures, and with
`draft-on-failure` pushes its branch as a draft pull request (never over a ready one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.errors import GitHubError
from codegen_ci.publish import remote
from codegen_ci.publish.forge import Forge, PullInfo, PullRequestsNotPermitted
from codegen_ci.publish.markdown import code_span
from codegen_ci.publish.proof_text import proof_note
from codegen_ci.publish.report_text import (
    candidates_text,
    failure_comment,
    pr_body,
    rounds_text,
    usage_line,
)
from codegen_ci.publish.status import StatusComment
from codegen_ci.report import Reason, Report, Status
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git


@dataclass
class Publishing:
    root: Path
    token: str | None
    publisher: Forge
    status: StatusComment | None  # None for a dispatch: no issue to talk on
    run_url: str | None
    warn: Callable[[str], None]

    def say(self, text: str) -> None:
        if self.status is not None:
            self.status.post(text)

    def run_link(self) -> str:
        return f" · [workflow run]({self.run_url})" if self.run_url else ""


@dataclass
class Published:
    pr_url: str = ""
    branch: str = ""
    compare_url: str = ""


@dataclass(frozen=True)
class NewBranch:
    """Where an issue's (or a dispatch's) result goes."""

    name: str
    base: str  # the default branch the pull request targets
    title: Untrusted  # the issue's or the spec's: the forge neutralises it
    issue_number: int | None
    draft_on_failure: bool


def publish_new_branch(p: Publishing, report: Report, spec: Spec, to: NewBranch) -> Published:
    if report.status != Status.SUCCESS and report.reason != Reason.NO_CHANGE:
        return _failed_on_new_branch(p, report, spec, to)
    if not report.commit:  # no_change: a success always has a commit
        p.say(_nothing_to_change(report) + p.run_link())
        return Published()
    _push_own_branch(p, to.name)
    body = pr_body(report, task=spec.task, issue_number=to.issue_number, run_url=p.run_url)
    verb = "updated" if p.publisher.find_open_pr(to.name) else "opened"
    try:
        pull = p.publisher.open_or_update_pr(
            head=to.name,
            base=to.base,
            title=to.title,
            body=body,
            draft=spec.pr.draft,
            labels=spec.pr.labels,
            reviewers=spec.pr.reviewers,
        )
    except PullRequestsNotPermitted as exc:
        p.warn(exc.message)
        p.say(
            f"✅ **codegen-ci**: validation passed after {rounds_text(report)} and the change is "
            f"on branch {code_span(to.name)}, but GitHub Actions may not open pull requests in "
            f"this repository. [Open the pull request]({exc.compare_url}).{p.run_link()}"
        )
        return Published(branch=to.name, compare_url=exc.compare_url)
    p.say(
        f"✅ **codegen-ci** {verb} {pull.html_url}: "
        f"validation passed after {rounds_text(report)}; {usage_line(report)}.{p.run_link()}"
        + proof_note(report)
        + candidates_text(report)
    )
    return Published(pr_url=pull.html_url, branch=to.name)


def _failed_on_new_branch(p: Publishing, report: Report, spec: Spec, to: NewBranch) -> Published:
    comment = failure_comment(report, run_url=p.run_url)
    published = Published()
    if to.draft_on_failure and report.commit:
        existing = p.publisher.find_open_pr(to.name)
        if existing is not None and not existing.draft:
            comment += f"\n\nThe open pull request {existing.html_url} was left as it was."
        else:
            published = _draft(p, report, spec, to)
            comment += (
                f"\n\nThe attempt is in the draft pull request {published.pr_url}."
                if published.pr_url
                else "\n\nGitHub Actions may not open pull requests here, so no draft either."
            )
    p.say(comment)
    return published


def _draft(p: Publishing, report: Report, spec: Spec, to: NewBranch) -> Published:
    existed = bool(remote.remote_branches(p.root, to.name, p.token))
    _push_own_branch(p, to.name)
    body = pr_body(report, task=spec.task, issue_number=None, run_url=p.run_url)
    try:
        pull = p.publisher.open_or_update_pr(
            head=to.name,
            base=to.base,
            title=Untrusted("[failed] ") + to.title,
            body=body,
            draft=True,
            labels=spec.pr.labels,
        )
    except GitHubError as exc:
        if not existed:  # a failed attempt on a branch without a pull request helps nobody
            remote.delete_branch(p.root, to.name, p.token)
        if isinstance(exc, PullRequestsNotPermitted):
            return Published()
        raise
    return Published(pr_url=pull.html_url, branch=to.name)


def _push_own_branch(p: Publishing, branch: str) -> None:
    # The lease needs a remote-tracking ref: without one, git would refuse or clobber blindly.
    remote.fetch_branch(p.root, branch, p.token)
    git.push(p.root, branch, token=p.token, force_with_lease=True)


def publish_on_pull(p: Publishing, report: Report, pull: PullInfo, local: str) -> Published:
    """A `/codegen` comment on a pull request: add the commit on top of its branch."""
    if report.status != Status.SUCCESS and report.reason != Reason.NO_CHANGE:
        p.say(failure_comment(report, run_url=p.run_url) + f"\n\n{_untouched(pull)}")
        return Published()
    if not report.commit:  # no_change: a success always has a commit
        p.say(_nothing_to_change(report) + p.run_link())
        return Published()
    remote.push_on_top(p.root, local, pull.head_ref, p.token)
    p.say(
        f"✅ **codegen-ci** pushed {report.commit[:12]} to {code_span(pull.head_ref)}: "
        f"validation passed after {rounds_text(report)}; {usage_line(report)}.{p.run_link()}"
        + proof_note(report)
        + candidates_text(report)
    )
    return Published(pr_url=pull.html_url, branch=pull.head_ref)


def fork_refusal(pull: PullInfo) -> str:
    where = f"{pull.head_repo}" if pull.head_repo else "a deleted fork"
    return (
        f"🚫 **codegen-ci** does not work on pull requests from forks: the branch of "
        f"#{pull.number} lives in {where}, where this workflow may not push (and its commands "
        "must not run with this repository's secrets). Nothing was changed."
    )


def _untouched(pull: PullInfo) -> str:
    return f"Nothing was pushed to {code_span(pull.head_ref)}."


def _nothing_to_change(report: Report) -> str:
    return (
        f"**codegen-ci** changed nothing (`no_change`): validation passes after "
        f"{rounds_text(report)} without a change, so nothing was pushed and the task is not "
        "done by this run."
    )
