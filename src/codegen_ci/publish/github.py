"""The GitHub REST side of publishing; the only module of ours that imports PyGithub.

Every public method is one retried operation: on a 5xx, a rate limit or a dropped connection
the whole operation runs again (honouring Retry-After), which keeps retried writes idempotent
(a retried PR creation finds the PR the first attempt made). Any failure that survives the
retries, and any other API error, surfaces as `GitHubError` (exit 3), never as a PyGithub
exception. Every text sent to GitHub (titles, bodies, comments) first passes `redact`.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from github import Auth, Github, GithubException
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.Repository import Repository
from tenacity import RetryCallState, Retrying, stop_after_attempt

from codegen_ci.errors import GitHubError, InputError

log = logging.getLogger(__name__)
T = TypeVar("T")
ROLES = ("admin", "maintain", "write", "triage", "read", "none")


@dataclass(frozen=True)
class GitHubTarget:
    api_url: str
    repository: str  # "owner/name"
    token: str = field(repr=False)
    server_url: str = "https://github.com"
    run_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubTarget:
        """Read the target the way GitHub Actions sets it; the token from input
        `github-token` (either spelling) or GITHUB_TOKEN."""
        names = ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "GITHUB_TOKEN")
        token = next((env[n] for n in names if env.get(n)), "")
        repository = env.get("GITHUB_REPOSITORY", "")
        if not token or "/" not in repository:
            raise InputError("GitHub needs GITHUB_REPOSITORY=owner/name and a github-token")
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        run_id = env.get("GITHUB_RUN_ID")
        return cls(
            api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
            repository=repository,
            token=token,
            server_url=server,
            run_url=f"{server}/{repository}/actions/runs/{run_id}" if run_id else None,
        )


@dataclass(frozen=True)
class PullInfo:
    number: int
    html_url: str
    title: str
    state: str
    draft: bool
    head_ref: str
    head_sha: str
    head_repo: str | None  # full name; None when the fork was deleted
    base_ref: str
    is_fork: bool  # the head lives in another repository: never push there


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    author: str
    html_url: str
    is_pull_request: bool
    labels: tuple[str, ...]


class PullRequestsNotPermitted(GitHubError):
    """The repository does not let the workflow token open pull requests."""

    def __init__(self, repository: str, compare_url: str) -> None:
        super().__init__(
            f"GitHub Actions may not create pull requests in {repository}; allow it under "
            "Settings > Actions > General > Workflow permissions, or use a token that may. "
            f"The branch is pushed; open the pull request by hand: {compare_url}"
        )
        self.compare_url = compare_url


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
        self._retries = retries
        self._backoff = backoff
        self._max_wait = max_wait
        self._redact = redact
        self._gh = Github(
            base_url=target.api_url.rstrip("/"),
            auth=Auth.Token(target.token),
            retry=None,  # retries are ours (below), around whole operations
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
                author=issue.user.login,
                html_url=issue.html_url,
                is_pull_request=issue.pull_request is not None,
                labels=tuple(label.name for label in issue.labels),
            )

        return self._call(f"reading issue #{number}", run)

    def get_pull(self, number: int) -> PullInfo:
        pull = self._repo.get_pull(number)  # lazy: the GET happens inside the retried call
        return self._call(f"reading pull request #{number}", lambda: _pull_info(pull))

    def find_open_pr(self, head_branch: str) -> PullInfo | None:
        """The open pull request from `head_branch` of this repository (or `owner:branch`)."""

        def run() -> PullInfo | None:
            pull = self._open_pull(head_branch)
            return _pull_info(pull) if pull else None

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
            pull = self._open_pull(head) or self._create_pull(head, base, title, body, draft)
            if (pull.title, pull.body or "") != (title, body):  # an adopted PR
                pull.edit(title=title, body=body)
            present = {label.name for label in pull.labels}
            if missing := [name for name in labels if name not in present]:
                pull.add_to_labels(*missing)
            self._request_reviewers(pull, reviewers)
            return _pull_info(pull)

        return self._call(f"opening a pull request from {head} into {base}", run)

    # -- internals ------------------------------------------------------------------------

    def _open_pull(self, head: str) -> PullRequest | None:
        owner = self.target.repository.split("/")[0]
        label = head if ":" in head else f"{owner}:{head}"
        return next(iter(self._repo.get_pulls(state="open", head=label)), None)

    def _create_pull(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        try:
            return self._repo.create_pull(base=base, head=head, title=title, body=body, draft=draft)
        except GithubException as exc:
            if exc.status == 422 and "pull request already exists" in _describe(exc).lower():
                existing = self._open_pull(head)  # created by a concurrent or earlier attempt
                if existing is not None:
                    return existing
            if exc.status == 403 and "not permitted to create" in _describe(exc):
                quoted = urllib.parse.quote(f"{base}...{head}", safe="/:.")
                compare = f"{self.target.server_url}/{self.target.repository}/compare/{quoted}"
                raise PullRequestsNotPermitted(
                    self.target.repository, f"{compare}?expand=1"
                ) from exc
            raise

    def _request_reviewers(self, pull: PullRequest, reviewers: list[str] | tuple[str, ...]) -> None:
        asked = {u.login for u in pull.requested_reviewers}
        asked |= {f"{team.slug}" for team in pull.requested_teams}
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
            log.warning("could not request reviewers %s: %s", users + teams, _describe(exc))

    def _call(self, what: str, operation: Callable[[], T]) -> T:
        """Run one operation with retries; turn whatever escapes into GitHubError."""
        retrying = Retrying(
            stop=stop_after_attempt(self._retries + 1),
            retry=self._should_retry,
            wait=self._wait,
            reraise=True,
        )
        try:
            return retrying(operation)
        except GithubException as exc:
            tries = retrying.statistics.get("attempt_number", 1)
            message = f"GitHub API: {what} failed ({_tries(tries)}): {_describe(exc)}"
            raise GitHubError(message) from exc
        except OSError as exc:  # requests' connection errors and timeouts
            tries = retrying.statistics.get("attempt_number", 1)
            raise GitHubError(
                f"GitHub API: {what} failed ({_tries(tries)}): cannot reach "
                f"{self.target.api_url}: {exc}"
            ) from exc

    def _delay(self, exc: BaseException | None, attempt: int) -> float | None:
        """Seconds to wait before retrying after `exc`; None when retrying cannot help."""
        backoff = min(self._backoff * 2.0 ** (attempt - 1), 60.0)
        if isinstance(exc, OSError):
            return backoff
        if not isinstance(exc, GithubException):
            return None
        headers = {k.lower(): str(v) for k, v in (exc.headers or {}).items()}
        if "retry-after" in headers:
            return _float(headers["retry-after"], backoff)
        rate_limited = exc.status in (403, 429) and headers.get("x-ratelimit-remaining") == "0"
        if rate_limited and "x-ratelimit-reset" in headers:
            return max(0.0, _float(headers["x-ratelimit-reset"], 0.0) - time.time()) + 1
        if exc.status >= 500 or exc.status == 429 or _is_secondary_limit(exc):
            return backoff
        return None

    def _should_retry(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        delay = self._delay(exc, state.attempt_number)
        return delay is not None and delay <= self._max_wait

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self._delay(exc, state.attempt_number) or 0.0


def _pull_info(pull: PullRequest) -> PullInfo:
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


def _describe(exc: GithubException) -> str:
    """GitHub's own words: the message plus any per-field error messages."""
    data: Any = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message") or exc.message or "no message")]
    errors = data.get("errors") or []
    parts += [str(e.get("message")) for e in errors if isinstance(e, dict) and e.get("message")]
    return f"HTTP {exc.status}: " + "; ".join(parts)


def _is_secondary_limit(exc: GithubException) -> bool:
    message = str((exc.data or {}).get("message", "")) if isinstance(exc.data, dict) else ""
    return exc.status in (403, 429) and "rate limit" in message.lower()


def _quote(login: str) -> str:
    return urllib.parse.quote(login, safe="")


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def _tries(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"
