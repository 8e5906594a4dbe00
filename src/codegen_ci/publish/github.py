"""The GitHub REST side of publishing; with its github_* siblings, the only code of ours that
imports PyGithub.

Every public method is one retried operation: on a 5xx, a rate limit or a dropped connection
the whole operation runs again (honouring Retry-After), which keeps retried writes idempotent
(a retried PR creation finds the PR the first attempt made). Any failure that survives the
retries, and any other API error, surfaces as `GitHubError` (exit 3), never as a PyGithub
exception. Every text sent to GitHub (titles, bodies, comments) first passes `redact`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from github import Auth, Github
from github.IssueComment import IssueComment
from github.Repository import Repository

from codegen_ci.errors import GitHubError
from codegen_ci.publish.github_pulls import (
    create_pull,
    listed,
    open_pull,
    pull_info,
    request_reviewers,
)
from codegen_ci.publish.github_retry import RetryPolicy
from codegen_ci.publish.github_types import (
    GitHubTarget,
    IssueInfo,
    PullInfo,
    PullRequestsNotPermitted,
)

__all__ = [
    "ROLES",
    "GitHubPublisher",
    "GitHubTarget",
    "IssueInfo",
    "PullInfo",
    "PullRequestsNotPermitted",
]

T = TypeVar("T")
ROLES = ("admin", "maintain", "write", "triage", "read", "none")


class GitHubPublisher:
    def __init__(
        self,
        target: GitHubTarget,
        *,
        retries: int = 5,
        backoff: float = 1.0,
        max_wait: float = 120.0,
        redact: Callable[[str], str] = lambda text: text,
        seconds_between_requests: float = 0.0,
        seconds_between_writes: float = 0.0,
        timeout: int = 30,
    ) -> None:
        """`retries`: further attempts after the first; `backoff`: first wait in seconds,
        doubled each time, unless GitHub names a wait (Retry-After, rate-limit reset);
        a named wait longer than `max_wait` fails at once."""
        self.target = target
        self._retry = RetryPolicy(retries, backoff, max_wait)
        self._redact = redact
        self._gh = Github(
            base_url=target.api_url.rstrip("/"),
            auth=Auth.Token(target.token),
            retry=None,  # retries are ours (github_retry), around whole operations
            lazy=True,  # no request until an attribute is needed
            seconds_between_requests=seconds_between_requests,
            seconds_between_writes=seconds_between_writes,
            timeout=timeout,
        )
        self._repo: Repository = self._gh.get_repo(target.repository)

    # -- reading --------------------------------------------------------------------------

    def permission(self, login: str) -> str:
        """The actor's role: admin, maintain, write, triage, read or none."""
        path = f"/repos/{self.target.repository}/collaborators/{_quote(login)}/permission"

        def run() -> str:
            _, data = self._gh.requester.requestJsonAndCheck("GET", path)
            for answer in (data.get("role_name"), data.get("permission")):
                if answer in ROLES:
                    return str(answer)
            raise GitHubError(f"GitHub API: unexpected permission answer for {login}: {data}")

        return self._call(f"reading the permission of {login}", run)

    def user_type(self, login: str) -> str:
        """ "User", "Bot" or "Organization"."""
        return self._call(f"reading user {login}", lambda: self._gh.get_user(login).type)

    def default_branch(self) -> str:
        return self._call("reading the repository", lambda: self._repo.default_branch)

    def get_issue(self, number: int) -> IssueInfo:
        def run() -> IssueInfo:
            issue = self._repo.get_issue(number)
            return IssueInfo(
                number=issue.number,
                title=issue.title,
                body=issue.body or "",
                author=issue.user.login if issue.user is not None else "",  # a deleted account
                html_url=issue.html_url,
                is_pull_request=issue.pull_request is not None,
                labels=tuple(label.name for label in listed(lambda: issue.labels)),
            )

        return self._call(f"reading issue #{number}", run)

    def get_pull(self, number: int) -> PullInfo:
        pull = self._repo.get_pull(number)  # lazy: the GET happens inside the retried call
        return self._call(f"reading pull request #{number}", lambda: pull_info(pull))

    def find_open_pr(self, head_branch: str) -> PullInfo | None:
        """The open pull request from `head_branch` of this repository (or `owner:branch`)."""

        def run() -> PullInfo | None:
            pull = open_pull(self._repo, self.target, head_branch)
            return pull_info(pull) if pull else None

        return self._call(f"looking for an open pull request from {head_branch}", run)

    # -- writing --------------------------------------------------------------------------

    def react(self, comment_id: int, content: str = "eyes") -> None:
        """React to an issue or PR comment (GitHub ignores a repeated reaction)."""
        url = f"/repos/{self.target.repository}/issues/comments/{comment_id}"
        comment = IssueComment(self._gh.requester, url=url)  # lazy: no GET first
        self._call(f"reacting to comment {comment_id}", lambda: comment.create_reaction(content))

    def react_to_issue(self, issue_number: int, content: str = "eyes") -> None:
        issue = self._repo.get_issue(issue_number)
        self._call(f"reacting to #{issue_number}", lambda: issue.create_reaction(content))

    def comment(self, issue_number: int, body: str) -> str:
        """Post a comment on an issue or PR; returns its html_url."""
        text = self._redact(body)
        issue = self._repo.get_issue(issue_number)
        return self._call(
            f"commenting on #{issue_number}", lambda: issue.create_comment(text).html_url
        )

    def upsert_status_comment(self, issue_number: int, body: str, marker: str) -> int:
        """Edit the comment that carries `marker` (a hidden `<!-- codegen-ci:... -->`), or
        create it, so re-runs keep one status comment; returns its id."""
        text = self._redact(body)
        text = text if marker in text else f"{marker}\n{text}"
        issue = self._repo.get_issue(issue_number)

        def run() -> int:
            found = next((c for c in issue.get_comments() if marker in (c.body or "")), None)
            if found is None:
                return issue.create_comment(text).id
            if found.body != text:
                found.edit(text)
            return found.id

        return self._call(f"updating the status comment on #{issue_number}", run)

    def open_or_update_pr(
        self,
        *,
        head: str,
        base: str,
        title: str,
        body: str,
        draft: bool = False,
        labels: list[str] | tuple[str, ...] = (),
        reviewers: list[str] | tuple[str, ...] = (),
    ) -> PullInfo:
        """Open a PR from `head` into `base`, or adopt the open one for `head` and update its
        title and body. Reviewers named `org/team` are requested as teams. A draft flag is
        applied only on creation (the REST API cannot convert an existing PR)."""
        title, body = self._redact(title), self._redact(body)

        def run() -> PullInfo:
            pull = open_pull(self._repo, self.target, head) or create_pull(
                self._repo, self.target, head, base, title, body, draft
            )
            if (pull.title, pull.body or "") != (title, body):  # an adopted PR
                pull.edit(title=title, body=body)
            present = {label.name for label in listed(lambda: pull.labels)}
            if missing := [name for name in labels if name not in present]:
                pull.add_to_labels(*missing)
            request_reviewers(pull, reviewers)
            return pull_info(pull)

        return self._call(f"opening a pull request from {head} into {base}", run)

    # -- internals ------------------------------------------------------------------------

    def _call(self, what: str, operation: Callable[[], T]) -> T:
        """Run one operation with retries; turn whatever escapes into GitHubError."""
        return self._retry.run(what, self.target.api_url, operation)


def _quote(login: str) -> str:
    return urllib.parse.quote(login, safe="")
