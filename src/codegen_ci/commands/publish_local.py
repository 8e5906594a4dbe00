"""`run --push` / `run --pr` outside Actions: push the branch, open a PR for it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.publish.pr_body import pr_body
from codegen_ci.report import Report
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

GITHUB_REMOTE = re.compile(r"(?:github\.com[:/])(?P<repo>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")


def publish_branch(root: Path, report: Report, spec: Spec, *, open_pr: bool) -> None:
    assert report.branch
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    git.push(root, report.branch, token=token, force_with_lease=True)
    if not open_pr:
        return
    if report.status != "success" and not spec.pr.draft:
        return  # never a ready-for-review PR for a failed run
    url = git.git(["remote", "get-url", "origin"], root).strip()
    repository = os.environ.get("GITHUB_REPOSITORY") or _repo_from_url(url)
    if not token:
        raise InputError("--pr needs GITHUB_TOKEN (or GH_TOKEN) to open the pull request")
    from codegen_ci.publish.github import GitHubPublisher
    from codegen_ci.publish.github_types import GitHubTarget
    from codegen_ci.security.redact import REDACTOR

    target = GitHubTarget(
        api_url=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        repository=repository,
        token=token,
        server_url=os.environ.get("GITHUB_SERVER_URL", "https://github.com"),
        run_url=None,
    )
    publisher = GitHubPublisher(target, redact=REDACTOR.redact)
    pull = publisher.open_or_update_pr(
        head=report.branch,
        base=spec.git.base or publisher.default_branch(),
        title=report.title,
        body=pr_body(report, task=spec.task, issue_number=None, run_url=None),
        draft=spec.pr.draft or report.status != "success",
        labels=list(spec.pr.labels),
        reviewers=list(spec.pr.reviewers),
    )
    report.pr_url = pull.html_url


def _repo_from_url(url: str) -> str:
    match = GITHUB_REMOTE.search(url)
    if not match:
        raise InputError(f"cannot tell the GitHub repository from origin {url!r}; "
                         "set GITHUB_REPOSITORY=owner/name")  # fmt: skip
    return match["repo"]
