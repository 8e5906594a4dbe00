"""The forge: where the tool reads events' context and publishes its results (pull requests,
comments, the status comment, reactions, review threads, a CI run's artifacts and jobs, the
actors' permissions). Everything outside the forge's own module is typed on `Forge` and the
value types here, never on a forge's client: GitHub implements it in publish/github.py
(`GitHubPublisher`); a second forge is a new module implementing the same Protocol (see
docs/architecture.md, "A new forge").

The values are plain data, free of any client library's types. Review comments, artifacts and
jobs travel as the forge's JSON objects (`Json`): their consumers (sources/pull_tasks.py,
publish/ci_artifacts.py) read the few fields they need by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from codegen_ci.errors import GitHubError
from codegen_ci.security.untrusted import Untrusted

__all__ = [
    "Forge",
    "IssueInfo",
    "Json",
    "PullInfo",
    "PullRequestsNotPermitted",
]

Json = dict[
    str, Any
]  # one object of the forge's REST answers (a review comment, an artifact, a job)


@dataclass(frozen=True)
class PullInfo:
    number: int
    html_url: str
    title: Untrusted  # whoever opened the pull request wrote it
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
    title: Untrusted  # anyone who can open an issue wrote these
    body: Untrusted
    author: str
    html_url: str
    is_pull_request: bool
    labels: tuple[str, ...]


class PullRequestsNotPermitted(GitHubError):
    """The repository does not let the workflow token open pull requests; the branch is
    pushed, `compare_url` is where a person opens the pull request by hand."""

    def __init__(self, repository: str, compare_url: str) -> None:
        super().__init__(
            f"GitHub Actions may not create pull requests in {repository}; allow it under "
            "Settings > Actions > General > Workflow permissions, or use a token that may. "
            f"The branch is pushed; open the pull request by hand: {compare_url}"
        )
        self.compare_url = compare_url


class Forge(Protocol):
    """Every call the tool makes to its forge. Each method is one operation the
    implementation retries as a whole; a failure that survives surfaces as `GitHubError`
    (exit 3). Texts sent are redacted and neutralised by the implementation."""

    # -- reading --------------------------------------------------------------------------

    def permission(self, login: str) -> str:
        """The actor's role: admin, maintain, write, triage, read or none."""
        ...

    def user_type(self, login: str) -> str:
        """ "User", "Bot" or "Organization"."""
        ...

    def own_login(self) -> str:
        """Who the token writes as."""
        ...

    def default_branch(self) -> str: ...

    def get_issue(self, number: int) -> IssueInfo: ...

    def get_pull(self, number: int) -> PullInfo: ...

    def find_open_pr(self, head_branch: str) -> PullInfo | None:
        """The open pull request from `head_branch` (or `owner:branch`)."""
        ...

    def own_comment_with(self, issue_number: int, marker: str) -> str | None:
        """The body of the tool's own comment carrying `marker`, or None."""
        ...

    # -- issues and comments ----------------------------------------------------------------

    def react(self, comment_id: int, content: str = "eyes") -> None: ...

    def react_to_issue(self, issue_number: int, content: str = "eyes") -> None: ...

    def comment(self, issue_number: int, body: str) -> str:
        """Post a comment; returns its URL."""
        ...

    def upsert_status_comment(
        self, issue_number: int, body: str, marker: str, hidden: str = ""
    ) -> int:
        """Edit the tool's comment carrying `marker`, or create it; returns its id."""
        ...

    # -- pull requests ----------------------------------------------------------------------

    def open_or_update_pr(
        self,
        *,
        head: str,
        base: str,
        title: str | Untrusted,  # an issue's or a spec's title: the forge neutralises it
        body: str,
        draft: bool = False,
        labels: list[str] | tuple[str, ...] = (),
        reviewers: list[str] | tuple[str, ...] = (),
    ) -> PullInfo:
        """Open a pull request from `head` into `base`, or adopt and update the open one.
        Raises `PullRequestsNotPermitted` when the forge refuses pull requests."""
        ...

    # -- review threads ---------------------------------------------------------------------

    def pull_review_comments(self, number: int) -> list[Json]: ...

    def review_comments(self, number: int, review_id: int) -> list[Json]: ...

    def react_to_review_comment(self, comment_id: int, content: str = "eyes") -> None: ...

    def reply_in_thread(
        self, number: int, comment_id: int, body: str, existing: list[Json]
    ) -> None:
        """Reply to review comment `comment_id`, or edit the tool's earlier reply there."""
        ...

    # -- CI runs ----------------------------------------------------------------------------

    def run_artifacts(self, run_id: int) -> list[Json]: ...

    def artifact_zip(self, artifact: Mapping[str, Any], max_bytes: int) -> bytes: ...

    def run_jobs(self, run_id: int) -> list[Json]: ...

    def job_log(self, job: Mapping[str, Any], max_bytes: int) -> bytes: ...
