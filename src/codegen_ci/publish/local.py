"""`run --push` / `run --pr` outside Actions: push the branch, open a PR for it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.publish.forge import Forge
from codegen_ci.publish.report_text import pr_body
from codegen_ci.report import Report, Status
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

GITHUB_REMOTE = re.compile(r"(?:github\.com[:/])(?P<repo>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")


def check_prerequisites(root: Path, *, open_pr: bool) -> str | None:
    """What `--push`/`--pr` need, checked before the first model call so a missing remote or
    token costs no tokens: a remote `origin`; for `--pr` also a token and the GitHub
    repository (GITHUB_REPOSITORY or origin's URL). Returns that repository (`--pr`)."""
    flag = "--pr" if open_pr else "--push"
    result = git.git(["remote", "get-url", "origin"], root, check=False)
    url = result.strip()
    if not url:
        raise InputError(
            f"{flag} needs a git remote named origin to push to; this repository "
            "has none (add one with: git remote add origin URL)"
        )
    if not open_pr:
        return None
    if not (os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")):
        raise InputError(
            "--pr needs GITHUB_TOKEN (or GH_TOKEN) to open the pull request; "
            "set it, or use --push alone"
        )
    return os.environ.get("GITHUB_REPOSITORY") or _repo_from_url(url)


def publish_branch(root: Path, report: Report, spec: Spec, *, open_pr: bool) -> None:
    assert report.branch
    repository = check_prerequisites(root, open_pr=open_pr)
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    git.push(root, report.branch, token=token, force_with_lease=True)
    if not open_pr or repository is None or token is None:
        return
    if report.status != Status.SUCCESS and not spec.pr.draft:
        return  # never a ready-for-review PR for a failed run
    from codegen_ci.publish.github import GitHubPublisher, GitHubTarget

    target = GitHubTarget(
        api_url=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        repository=repository,
        token=token,
        server_url=os.environ.get("GITHUB_SERVER_URL", "https://github.com"),
        run_url=None,
    )
    publisher: Forge = GitHubPublisher(target)  # the forge is chosen here; used as a Forge
    pull = publisher.open_or_update_pr(
        head=report.branch,
        base=spec.git.base or publisher.default_branch(),
        title=report.title,
        body=pr_body(report, task=spec.task, issue_number=None, run_url=None),
        draft=spec.pr.draft or report.status != Status.SUCCESS,
        labels=list(spec.pr.labels),
        reviewers=list(spec.pr.reviewers),
    )
    report.pr_url = pull.html_url


def _repo_from_url(url: str) -> str:
    match = GITHUB_REMOTE.search(url)
    if not match:
        raise InputError(
            f"--pr: cannot tell the GitHub repository from origin {url!r}; "
            "set GITHUB_REPOSITORY=owner/name"
        )
    return match["repo"]
