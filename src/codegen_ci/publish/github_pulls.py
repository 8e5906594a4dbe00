"""Pull-request steps on PyGithub objects, for the publisher to run inside its retries."""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TypeVar

from github import BadAttributeException, GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from codegen_ci.publish.github_retry import describe
from codegen_ci.publish.github_types import GitHubTarget, PullInfo, PullRequestsNotPermitted

log = logging.getLogger(__name__)
T = TypeVar("T")


def listed(read: Callable[[], Iterable[T] | None]) -> list[T]:
    """A list field GitHub's schema lets be null (`requested_reviewers`, `requested_teams`,
    `assignees`, ...): null, or left out, is no items. PyGithub cannot make a list of a null
    and raises BadAttributeException on reading it."""
    try:
        return list(read() or ())
    except BadAttributeException:
        return []


def open_pull(repo: Repository, target: GitHubTarget, head: str) -> PullRequest | None:
    """The open pull request from `head`: a branch of `target` or `owner:branch`."""
    owner = target.repository.split("/")[0]
    label = head if ":" in head else f"{owner}:{head}"
    return next(iter(repo.get_pulls(state="open", head=label)), None)


def create_pull(
    repo: Repository, target: GitHubTarget, head: str, base: str, title: str, body: str, draft: bool
) -> PullRequest:
    try:
        return repo.create_pull(base=base, head=head, title=title, body=body, draft=draft)
    except GithubException as exc:
        if exc.status == 422 and "pull request already exists" in describe(exc).lower():
            existing = open_pull(repo, target, head)  # created by a concurrent or earlier attempt
            if existing is not None:
                return existing
        if exc.status == 403 and "not permitted to create" in describe(exc):
            quoted = urllib.parse.quote(f"{base}...{head}", safe="/:.")
            compare = f"{target.server_url}/{target.repository}/compare/{quoted}"
            raise PullRequestsNotPermitted(target.repository, f"{compare}?expand=1") from exc
        raise


def request_reviewers(pull: PullRequest, reviewers: list[str] | tuple[str, ...]) -> None:
    asked = {u.login for u in listed(lambda: pull.requested_reviewers)}
    asked |= {f"{team.slug}" for team in listed(lambda: pull.requested_teams)}
    users = [r for r in reviewers if "/" not in r and r not in asked]
    teams = [r.split("/")[1] for r in reviewers if "/" in r and r.split("/")[1] not in asked]
    if not users and not teams:
        return
    try:
        pull.create_review_request(reviewers=users, team_reviewers=teams)
    except GithubException as exc:
        if exc.status != 422:
            raise
        # A reviewer who is the author or no collaborator must not sink an opened PR.
        log.warning("could not request reviewers %s: %s", users + teams, describe(exc))


def pull_info(pull: PullRequest) -> PullInfo:
    head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
    return PullInfo(
        number=pull.number,
        html_url=pull.html_url,
        title=pull.title,
        state=pull.state,
        draft=bool(pull.draft),
        head_ref=pull.head.ref,
        head_sha=pull.head.sha,
        head_repo=head_repo,
        base_ref=pull.base.ref,
        is_fork=head_repo != pull.base.repo.full_name,
    )
