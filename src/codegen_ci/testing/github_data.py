"""The GitHub double's data: the repository, its users, issues, pulls, comments, reviews and
runs, and the seeding helpers tests use. The HTTP server (`github_double`) and the route
handlers (`github_routes`, `github_reviews`, `github_runs`) both work on a `GitHubData`, so the
handlers need nothing of the server."""

from __future__ import annotations

import threading
from typing import Any

from codegen_ci.testing.github_state import (
    Comment,
    Issue,
    Pull,
    Repo,
    ReviewComment,
    WorkflowRun,
)


class GitHubData:
    """One base repository (`owner/name`) plus any forks added with `add_fork`."""

    def __init__(
        self,
        repository: str = "octo-org/hello",
        *,
        default_branch: str = "main",
        server_url: str = "https://github.com",
        api_prefix: str = "",
        actor: str = "github-actions[bot]",
        token: str | None = None,
    ) -> None:
        self.repo = Repo(repository, default_branch)
        self.repos: dict[str, Repo] = {repository: self.repo}
        self.server_url = server_url
        self.api_prefix = api_prefix
        self.actor = actor  # the token's user: author of what the client creates
        self.token = token  # when set, other Authorization headers get 401 Bad credentials
        self.users: dict[str, str] = {actor: "Bot"}  # login -> "User" | "Bot" | "Organization"
        self.permissions: dict[str, str] = {}  # login -> role name (admin, maintain, write, ...)
        self.issues: dict[int, Issue] = {}
        self.comments: dict[int, Comment] = {}
        self.review_comments: dict[int, ReviewComment] = {}  # github_reviews
        self.workflow_runs: dict[int, WorkflowRun] = {}  # github_runs
        self.blobs: dict[str, bytes] = {}  # what a download redirects to
        self.forbid_pull_creation = False  # the repository setting that blocks GITHUB_TOKEN
        self._ids = 1000
        self._lock = threading.RLock()

    @property
    def url(self) -> str:
        """The API base URL, as GitHub puts it in GITHUB_API_URL (the server knows it)."""
        raise NotImplementedError

    # -- seeding and inspection -----------------------------------------------------------

    def add_user(self, login: str, kind: str = "User", role: str | None = None) -> None:
        self.users[login] = kind
        if role is not None:
            self.permissions[login] = role

    def add_fork(self, full_name: str) -> Repo:
        self.repos[full_name] = Repo(full_name, self.repo.default_branch, fork=True)
        return self.repos[full_name]

    def add_issue(self, title: str, body: str | None = "", user: str = "alice") -> Issue:
        with self._lock:
            number = len(self.issues) + 1
            self.users.setdefault(user, "User")
            self.issues[number] = Issue(number, title, body, user)
            return self.issues[number]

    def add_pull(
        self, head: str, title: str = "A change", base: str | None = None, **kw: Any
    ) -> Issue:
        """`head` is a branch of the base repository or `fork-owner:branch` of a fork."""
        issue = self.add_issue(title, kw.pop("body", ""), kw.pop("user", "alice"))
        owner, _, ref = head.rpartition(":")
        head_repo = self._head_repo(owner)
        issue.pull = Pull(ref, base or self.repo.default_branch, head_repo, **kw)
        return issue

    def add_comment(self, issue_number: int, body: str, user: str = "alice") -> Comment:
        with self._lock:
            self._ids += 1
            self.comments[self._ids] = Comment(self._ids, issue_number, body, user)
            return self.comments[self._ids]

    def pulls(self) -> list[Issue]:
        return [i for i in self.issues.values() if i.pull is not None]

    def _head_repo(self, owner: str) -> str | None:
        if not owner or owner == self.repo.full_name.split("/")[0]:
            return self.repo.full_name
        name = self.repo.full_name.split("/")[1]
        return f"{owner}/{name}" if f"{owner}/{name}" in self.repos else None

    def next_id(self) -> int:
        self._ids += 1
        return self._ids
