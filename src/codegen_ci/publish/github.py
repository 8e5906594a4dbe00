"""Every GitHub call of codegen-ci, through one `GitHubPublisher`: the reads (roles, users,
issues, pull requests, comments, review threads, a workflow run's artifacts, jobs and logs) and
the writes (comments, reactions, the status comment, the pull request, replies in review
threads); with github_retry, the only code of ours that imports PyGithub. It implements the
`Forge` Protocol (publish/forge.py): everything else is typed on that, and the values it takes
and returns (`GitHubTarget`, and forge.py's `PullInfo`, `IssueInfo`) are free of PyGithub types.

Every public method is one retried operation: on a 5xx, a rate limit or a dropped connection
the whole operation runs again (honouring Retry-After), which keeps retried writes idempotent
(a retried PR creation finds the PR the first attempt made). Any failure that survives the
retries, and any other API error, surfaces as `GitHubError` (exit 3), never as a PyGithub
exception. Every text sent to GitHub (titles, bodies, comments) first passes `REDACTOR`, then
`neutralise`; the tool's hidden markers are attached after that (`with_markers`).

What PyGithub has no method for (review threads and their replies, a workflow run's
artifacts, jobs and logs) goes through raw REST calls, retried the same way. Downloads (an
artifact's zip, a job's log) answer with a redirect to short-lived storage: the token goes
only to the API host, never along the redirect.

A reply in a review thread carries a hidden marker naming the comment it answers, so a re-run
or a re-delivered event edits its earlier reply instead of adding another. Only a comment or
reply the tool's own identity wrote counts, with the marker where the tool puts it: anyone can
paste the marker into a comment of theirs, and the tool must never edit someone else's words.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from github import Auth, BadAttributeException, Github, GithubException
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.Repository import Repository

from codegen_ci.errors import GitHubError, InputError
from codegen_ci.publish.forge import Forge, IssueInfo, Json, PullInfo, PullRequestsNotPermitted
from codegen_ci.publish.github_retry import RetryPolicy, describe
from codegen_ci.publish.markdown import neutralise, with_markers
from codegen_ci.security.inert_text import break_references
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted

__all__ = [
    "ACTIONS_BOT",
    "PR_MARKER",
    "ROLES",
    "GitHubPublisher",
    "GitHubTarget",
    "IssueInfo",
    "PullInfo",
    "PullRequestsNotPermitted",
    "reply_marker",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

ROLES = ("admin", "maintain", "write", "triage", "read", "none")
ACTIONS_BOT = "github-actions[bot]"
PR_MARKER = "<!-- codegen-ci -->"  # on every pull request body the tool writes
PAGE = 100
MAX_PAGES = 30


# -- the values the publisher takes and returns ----------------------------------------------


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


def reply_marker(comment_id: int) -> str:
    return f"<!-- codegen-ci:reply comment={comment_id} -->"


# -- the publisher ---------------------------------------------------------------------------


class GitHubPublisher(Forge):
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
                title=Untrusted(issue.title),
                body=Untrusted(issue.body or ""),
                author=issue.user.login if issue.user is not None else "",  # a deleted account
                html_url=issue.html_url,
                is_pull_request=issue.pull_request is not None,
                labels=tuple(label.name for label in _listed(lambda: issue.labels)),
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

    def own_comment_with(self, issue_number: int, marker: str) -> str | None:
        """The body of the first comment on the issue or PR that carries `marker` and that the
        tool's own identity wrote (anyone may paste the marker into a comment); None when
        there is none."""
        me = self.own_login().casefold()
        path = f"/repos/{self.target.repository}/issues/{issue_number}/comments"
        for comment in self._rest_list(f"reading the comments of #{issue_number}", path):
            body = str(comment.get("body") or "")
            if marker in body and _author(comment) == me:
                return body
        return None

    # -- issues and comments ----------------------------------------------------------------

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
        text = self._clean(body)
        issue = self._repo.get_issue(issue_number)
        return self._call(
            f"commenting on #{issue_number}", lambda: issue.create_comment(text).html_url
        )

    def upsert_status_comment(
        self, issue_number: int, body: str, marker: str, hidden: str = ""
    ) -> int:
        """Edit the comment that carries `marker` (a hidden `<!-- codegen-ci:... -->`), or
        create it, so re-runs keep one status comment; returns its id. Only a comment the
        token's own user wrote counts: anyone can paste the marker into a comment. `hidden`:
        one more marker of the tool's, put last (the run history's records).

        `body` is neutralised (no `<!--` of its own survives), then the markers are attached:
        text the body relays can never carry a marker into the comment."""
        tail = [REDACTOR.redact(hidden)] if hidden else []
        text = with_markers(self._clean(body), head=[marker], tail=tail)
        issue = self._repo.get_issue(issue_number)
        me = self.own_login().casefold()

        def run() -> int:
            found = next(
                (c for c in issue.get_comments() if marker in (c.body or "") and _login(c) == me),
                None,
            )
            if found is None:
                return issue.create_comment(text).id
            if found.body != text:
                found.edit(text)
            return found.id

        return self._call(f"updating the status comment on #{issue_number}", run)

    # -- pull requests ----------------------------------------------------------------------

    def open_or_update_pr(
        self,
        *,
        head: str,
        base: str,
        title: str | Untrusted,
        body: str,
        draft: bool = False,
        labels: list[str] | tuple[str, ...] = (),
        reviewers: list[str] | tuple[str, ...] = (),
    ) -> PullInfo:
        """Open a PR from `head` into `base`, or adopt the open one for `head` and update its
        title and body. Reviewers named `org/team` are requested as teams. A draft flag is
        applied only on creation (the REST API cannot convert an existing PR)."""
        # The title is the issue's: no reference in it links another issue's timeline.
        title = break_references(self._clean(title))
        body = with_markers(self._clean(body), head=[PR_MARKER])

        def run() -> PullInfo:
            pull = self._open_pull(head) or self._create_pull(head, base, title, body, draft)
            if (pull.title, pull.body or "") != (title, body):  # an adopted PR
                pull.edit(title=title, body=body)
            present = {label.name for label in _listed(lambda: pull.labels)}
            if missing := [name for name in labels if name not in present]:
                pull.add_to_labels(*missing)
            _request_reviewers(pull, reviewers)
            return _pull_info(pull)

        return self._call(f"opening a pull request from {head} into {base}", run)

    # -- review threads ---------------------------------------------------------------------

    def pull_review_comments(self, number: int) -> list[Json]:
        """Every review comment of pull request `number`."""
        path = f"/repos/{self.target.repository}/pulls/{number}/comments"
        return self._rest_list(f"reading the review comments of #{number}", path)

    def review_comments(self, number: int, review_id: int) -> list[Json]:
        """The comments of one review of pull request `number`."""
        path = f"/repos/{self.target.repository}/pulls/{number}/reviews/{review_id}/comments"
        return self._rest_list(f"reading the comments of review {review_id}", path)

    def react_to_review_comment(self, comment_id: int, content: str = "eyes") -> None:
        path = f"/repos/{self.target.repository}/pulls/comments/{comment_id}/reactions"
        what = f"reacting to review comment {comment_id}"
        self._rest_json(what, "POST", path, {"content": content})

    def reply_in_thread(
        self, number: int, comment_id: int, body: str, existing: list[Json]
    ) -> None:
        """Reply to review comment `comment_id`, or edit the reply an earlier run left there
        (`existing`: the pull request's review comments, read before the run)."""
        marker = reply_marker(comment_id)
        text = with_markers(self._clean(body), head=[marker])
        repo = self.target.repository
        earlier = next((c for c in existing if self._own_reply(c, marker)), None)
        if earlier is not None:
            path = f"/repos/{repo}/pulls/comments/{earlier['id']}"
            self._rest_json("editing the reply in a review thread", "PATCH", path, {"body": text})
            return
        path = f"/repos/{repo}/pulls/{number}/comments/{comment_id}/replies"
        what = f"replying to review comment {comment_id}"
        self._rest_json(what, "POST", path, {"body": text})

    # -- workflow runs ----------------------------------------------------------------------

    def run_artifacts(self, run_id: int) -> list[Json]:
        """The artifacts of workflow run `run_id` (expired ones included)."""
        path = f"/repos/{self.target.repository}/actions/runs/{run_id}/artifacts"
        return self._rest_list(f"listing the artifacts of run {run_id}", path, key="artifacts")

    def artifact_zip(self, artifact: Mapping[str, Any], max_bytes: int) -> bytes:
        """An artifact's zip (one item of `run_artifacts`), at most `max_bytes`."""
        path = f"/repos/{self.target.repository}/actions/artifacts/{artifact['id']}/zip"
        return self._download(f"downloading artifact {artifact.get('name')}", path, max_bytes)

    def run_jobs(self, run_id: int) -> list[Json]:
        """The jobs of workflow run `run_id`."""
        path = f"/repos/{self.target.repository}/actions/runs/{run_id}/jobs"
        return self._rest_list(f"listing the jobs of run {run_id}", path, key="jobs")

    def job_log(self, job: Mapping[str, Any], max_bytes: int) -> bytes:
        """A job's log (one item of `run_jobs`), at most `max_bytes`."""
        path = f"/repos/{self.target.repository}/actions/jobs/{job['id']}/logs"
        return self._download(f"downloading the log of job {job.get('name')}", path, max_bytes)

    # -- internals ------------------------------------------------------------------------

    def _clean(self, text: str | Untrusted) -> str:
        """What is sent: secrets redacted, controls made visible, mentions broken."""
        if isinstance(text, Untrusted):
            return neutralise(text.map(REDACTOR.redact))
        return neutralise(REDACTOR.redact(text))

    def _call(self, what: str, operation: Callable[[], T]) -> T:
        """Run one operation with retries; turn whatever escapes into GitHubError."""
        return self._retry.run(what, self.target.api_url, operation)

    def _own_reply(self, comment: Mapping[str, Any], marker: str) -> bool:
        body = str(comment.get("body") or "")
        return body.startswith(marker + "\n") and _author(comment) == self.own_login().casefold()

    def _open_pull(self, head: str) -> PullRequest | None:
        """The open pull request from `head`: a branch of the target or `owner:branch`."""
        owner = self.target.repository.split("/")[0]
        label = head if ":" in head else f"{owner}:{head}"
        return next(iter(self._repo.get_pulls(state="open", head=label)), None)

    def _create_pull(self, head: str, base: str, title: str, body: str, draft: bool) -> PullRequest:
        target = self.target
        try:
            return self._repo.create_pull(base=base, head=head, title=title, body=body, draft=draft)
        except GithubException as exc:
            if exc.status == 422 and "pull request already exists" in describe(exc).lower():
                existing = self._open_pull(head)  # created by a concurrent or earlier attempt
                if existing is not None:
                    return existing
            if exc.status == 403 and "not permitted to create" in describe(exc):
                quoted = urllib.parse.quote(f"{base}...{head}", safe="/:.")
                compare = f"{target.server_url}/{target.repository}/compare/{quoted}"
                raise PullRequestsNotPermitted(target.repository, f"{compare}?expand=1") from exc
            raise

    def _rest_json(
        self, what: str, method: str, path: str, body: dict[str, Any] | None = None
    ) -> Any:
        def run() -> Any:
            _, data = self._gh.requester.requestJsonAndCheck(method, path, input=body)
            return data

        return self._call(what, run)

    def _rest_list(self, what: str, path: str, key: str | None = None) -> list[Any]:
        """Every item of a paginated list (`key`: where the list sits in an object answer)."""
        items: list[Any] = []
        for page in range(1, MAX_PAGES + 1):
            sep = "&" if "?" in path else "?"
            data = self._rest_json(what, "GET", f"{path}{sep}per_page={PAGE}&page={page}")
            batch = data.get(key, []) if key and isinstance(data, dict) else data
            if not isinstance(batch, list):
                break
            items += batch
            if len(batch) < PAGE:
                break
        return items

    def _download(self, what: str, path: str, max_bytes: int) -> bytes:
        """The body of `path` (following GitHub's redirect without the token), at most
        `max_bytes`; a larger body is cut there."""
        url = self.target.api_url.rstrip("/") + path
        token = self.target.token

        def run() -> bytes:
            accept = {"Accept": "application/vnd.github+json"}
            request = urllib.request.Request(url, headers=accept)  # noqa: S310 (the API URL)
            request.add_unredirected_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 (the API URL)
                    return bytes(answer.read(max_bytes))
            except urllib.error.HTTPError as exc:  # as PyGithub's error: 4xx are not retried
                raise GithubException(exc.code, _error_body(exc), dict(exc.headers)) from None

        return self._call(what, run)


# -- PyGithub objects, read inside the publisher's retried operations ---------------------------


def _listed(read: Callable[[], Iterable[T] | None]) -> list[T]:
    """A list field GitHub's schema lets be null (`requested_reviewers`, `requested_teams`,
    `assignees`, ...): null, or left out, is no items. PyGithub cannot make a list of a null
    and raises BadAttributeException on reading it."""
    try:
        return list(read() or ())
    except BadAttributeException:
        return []


def _request_reviewers(pull: PullRequest, reviewers: list[str] | tuple[str, ...]) -> None:
    asked = {u.login for u in _listed(lambda: pull.requested_reviewers)}
    asked |= {f"{team.slug}" for team in _listed(lambda: pull.requested_teams)}
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


def _pull_info(pull: PullRequest) -> PullInfo:
    head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
    return PullInfo(
        number=pull.number,
        html_url=pull.html_url,
        title=Untrusted(pull.title or ""),
        state=pull.state,
        draft=bool(pull.draft),
        head_ref=pull.head.ref,
        head_sha=pull.head.sha,
        head_repo=head_repo,
        base_ref=pull.base.ref,
        is_fork=head_repo != pull.base.repo.full_name,
    )


def _login(comment: IssueComment) -> str:
    """The comment author's login, casefolded ("" for a deleted account)."""
    return comment.user.login.casefold() if comment.user is not None else ""


def _author(comment: Mapping[str, Any]) -> str:
    """A REST comment's author login, casefolded ("" for a deleted account)."""
    return str((comment.get("user") or {}).get("login") or "").casefold()


def _error_body(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read() or b"{}")
    except ValueError:
        return {"message": exc.reason}


def _quote(login: str) -> str:
    return urllib.parse.quote(login, safe="")
