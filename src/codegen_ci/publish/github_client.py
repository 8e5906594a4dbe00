"""The connection to the GitHub REST API that `GitHubPublisher` builds on: one retried
operation per call, text redacted and neutralised before it is sent, and the reads (roles,
users, issues, pull requests); with its github_* siblings, the only code of ours that imports
PyGithub.

Every public method is one retried operation: on a 5xx, a rate limit or a dropped connection
the whole operation runs again (honouring Retry-After), which keeps retried writes idempotent
(a retried PR creation finds the PR the first attempt made). Any failure that survives the
retries, and any other API error, surfaces as `GitHubError` (exit 3), never as a PyGithub
exception. Every text sent to GitHub (titles, bodies, comments) first passes `REDACTOR`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from github import Auth, Github, GithubException
from github.Repository import Repository

from codegen_ci.errors import GitHubError
from codegen_ci.publish.github_pulls import listed, open_pull, pull_info
from codegen_ci.publish.github_retry import RetryPolicy
from codegen_ci.publish.github_types import GitHubTarget, IssueInfo, PullInfo
from codegen_ci.publish.neutral import neutralise
from codegen_ci.security.redact import REDACTOR

__all__ = ["ACTIONS_BOT", "ROLES", "GitHubClient"]

T = TypeVar("T")
ROLES = ("admin", "maintain", "write", "triage", "read", "none")
ACTIONS_BOT = "github-actions[bot]"


class GitHubClient:
    def __init__(
        self,
        target: GitHubTarget,
        *,
        retries: int = 5,
        backoff: float = 1.0,
        max_wait: float = 120.0,
        seconds_between_requests: float = 0.0,
        seconds_between_writes: float = 0.0,
        timeout: int = 30,
    ) -> None:
        """`retries`: further attempts after the first; `backoff`: first wait in seconds,
        doubled each time, unless GitHub names a wait (Retry-After, rate-limit reset);
        a named wait longer than `max_wait` fails at once."""
        self.target = target
        self._retry = RetryPolicy(retries, backoff, max_wait)
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
        self._login: str | None = None

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

    def own_login(self) -> str:
        """Who the token writes as: `GET /user` for a user's token; the Actions token and app
        installation tokens may not read it (403), and write as `github-actions[bot]`."""
        if self._login is None:

            def run() -> str:
                try:
                    _, data = self._gh.requester.requestJsonAndCheck("GET", "/user")
                except GithubException as exc:
                    if exc.status in (401, 403, 404):
                        return ACTIONS_BOT
                    raise
                return str(data.get("login") or ACTIONS_BOT)

            self._login = self._call("reading the token's user", run)
        return self._login

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

    # -- for the raw REST calls of github_rest -----------------------------------------------

    def clean(self, text: str) -> str:
        """What a post made outside this class sends (a review reply): as `_clean`."""
        return self._clean(text)

    def retried(self, what: str, operation: Callable[[], T]) -> T:
        return self._call(what, operation)

    def request_json(self, method: str, path: str, body: dict[str, object] | None = None) -> object:
        _, data = self._gh.requester.requestJsonAndCheck(method, path, input=body)
        return data

    # -- internals ------------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        """What is sent: secrets redacted, controls made visible, mentions broken."""
        return neutralise(REDACTOR.redact(text))

    def _call(self, what: str, operation: Callable[[], T]) -> T:
        """Run one operation with retries; turn whatever escapes into GitHubError."""
        return self._retry.run(what, self.target.api_url, operation)


def _quote(login: str) -> str:
    return urllib.parse.quote(login, safe="")
