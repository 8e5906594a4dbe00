"""A GitHub REST API double over real HTTP on 127.0.0.1, for tests and benchmarks.

It speaks the JSON shapes of the endpoints codegen-ci uses, well enough for the real PyGithub
client. State lives in plain attributes (`issues`, `comments`, `permissions`, ...) that tests
seed and inspect; every request is recorded in `requests` so a test can assert that nothing
was written. `inject()` queues canned responses (502s, a secondary rate limit, ...) for a
method and path pattern, consumed before the normal handler answers. `send_nulls = True` makes
it send `null` for every field GitHub's schema lets be null and that has no value (a pull
request's `requested_reviewers`, `requested_teams`, `body`, ...), as GitHub may.

    with GitHubDouble() as gh:
        gh.permissions["alice"] = "write"
        ...  # point GITHUB_API_URL at gh.url
        assert gh.writes() == []
"""

from __future__ import annotations

import fnmatch
import json
import re
import secrets
import threading
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Json = Any
Reply = tuple[int, Json, dict[str, str]]
Args = list[str]  # a route's captured path segments
Query = dict[str, str]
Route = tuple[str, str, Callable[["GitHubDouble", Args, Query, Json], Reply]]
SEG = r"/([^/]+)"  # one path segment, captured
REPO_PATH = rf"/repos{SEG}{SEG}"
DOCS = "https://docs.github.com/rest"
ROLE_TO_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read"}
REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
ACTIONS_FORBIDDEN = "GitHub Actions is not permitted to create or approve pull requests."
SECONDARY_RATE_LIMIT = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the API prefix and query string
    query: dict[str, str]
    body: Json
    headers: dict[str, str]  # lower-cased names


@dataclass
class Canned:
    status: int
    body: Json
    headers: dict[str, str]


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: str
    reactions: list[str] = field(default_factory=list)


@dataclass
class Pull:
    head_ref: str
    base_ref: str
    head_repo: str | None  # full name; None when the fork was deleted
    head_sha: str = "0" * 40
    draft: bool = False
    reviewers: list[str] = field(default_factory=list)
    team_reviewers: list[str] = field(default_factory=list)


@dataclass
class Issue:
    number: int
    title: str
    body: str | None
    user: str
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)
    pull: Pull | None = None


@dataclass
class Repo:
    full_name: str
    default_branch: str = "main"
    fork: bool = False
    private: bool = False


@dataclass
class ReviewComment:
    id: int
    pull_number: int
    body: str
    user: str
    path: str
    line: int | None
    diff_hunk: str
    start_line: int | None = None
    in_reply_to_id: int | None = None
    review_id: int | None = None
    reactions: list[str] = field(default_factory=list)


@dataclass
class WorkflowJob:
    id: int
    name: str
    conclusion: str
    log: bytes = b""


@dataclass
class WorkflowRun:
    id: int
    head_branch: str
    artifacts: dict[str, bytes] = field(default_factory=dict)  # name -> zip archive
    jobs: list[WorkflowJob] = field(default_factory=list)
    artifact_ids: dict[int, str] = field(default_factory=dict)  # id -> name


class GitHubDouble:
    """One base repository (`owner/name`) plus any forks added with `add_fork`, served over
    HTTP on 127.0.0.1."""

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
        self.review_comments: dict[int, ReviewComment] = {}  # add_review_comment
        self.workflow_runs: dict[int, WorkflowRun] = {}  # add_workflow_run
        self.blobs: dict[str, bytes] = {}  # what a download redirects to
        self.forbid_pull_creation = False  # the repository setting that blocks GITHUB_TOKEN
        self._ids = 1000
        self._lock = threading.RLock()
        self.send_nulls = False  # null, not [] or "", for nullable fields without a value
        self.requests: list[RecordedRequest] = []
        self._faults: list[tuple[str, str, Canned, int | None]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API base URL, as GitHub puts it in GITHUB_API_URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.api_prefix}"

    def start(self) -> GitHubDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> GitHubDouble:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- seeding -------------------------------------------------------------------------

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

    # -- inspection -----------------------------------------------------------------------

    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method != "GET"]

    def inject(
        self,
        method: str,
        pattern: str,
        status: int,
        body: Json = None,
        headers: dict[str, str] | None = None,
        times: int | None = 1,
    ) -> None:
        """Answer the next `times` requests matching (method, glob over the path) with a
        canned response; `times=None` answers all of them."""
        body = {"message": f"HTTP {status}"} if body is None else body
        self._faults.append((method, pattern, Canned(status, body, headers or {}), times))

    def inject_secondary_rate_limit(self, method: str, pattern: str, retry_after: int = 1) -> None:
        body = {"message": SECONDARY_RATE_LIMIT, "documentation_url": f"{DOCS}/rate-limit"}
        self.inject(method, pattern, 403, body, {"Retry-After": str(retry_after)})

    # -- request dispatch -----------------------------------------------------------------

    def handle(self, method: str, raw_path: str, body: Json, headers: dict[str, str]) -> Reply:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path.removeprefix(self.api_prefix) or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self._lock:
            self.requests.append(RecordedRequest(method, path, query, body, headers))
            canned = self._take_fault(method, path)
            if canned is not None:
                return canned.status, canned.body, canned.headers
            signed = path.startswith("/_blobs/")  # storage behind a download: a signed URL
            if (
                self.token is not None
                and not signed
                and headers.get("authorization")
                not in (
                    f"token {self.token}",
                    f"Bearer {self.token}",
                )
            ):
                return error(401, "Bad credentials")
            for verb, pattern, handler in [*ROUTES, *REVIEW_ROUTES, *RUN_ROUTES]:
                match = re.fullmatch(pattern, path)
                if verb == method and match:
                    args = [urllib.parse.unquote(a) for a in match.groups()]
                    try:
                        return handler(self, args, query, body or {})
                    except Exception as exc:  # a bug in the double must not hang the client
                        return error(500, f"github double: {exc!r}")
            return error(404, "Not Found")

    def _take_fault(self, method: str, path: str) -> Canned | None:
        for index, (verb, pattern, canned, times) in enumerate(self._faults):
            if verb == method and fnmatch.fnmatchcase(path, pattern):
                if times is not None:
                    if times <= 1:
                        del self._faults[index]
                    else:
                        self._faults[index] = (verb, pattern, canned, times - 1)
                return canned
        return None


# -- seeding what only some tests need ---------------------------------------------------------


def add_review_comment(
    d: GitHubDouble,
    pull_number: int,
    body: str,
    *,
    user: str = "alice",
    path: str = "README.md",
    line: int | None = 1,
    diff_hunk: str = "",
    start_line: int | None = None,
    in_reply_to: int | None = None,
    review_id: int | None = None,
) -> ReviewComment:
    with d._lock:
        d.users.setdefault(user, "User")
        comment = ReviewComment(
            d.next_id(),
            pull_number,
            body,
            user,
            path,
            line,
            diff_hunk,
            start_line,
            in_reply_to,
            review_id or d.next_id(),
        )
        d.review_comments[comment.id] = comment
        return comment


def add_workflow_run(
    d: GitHubDouble,
    head_branch: str,
    *,
    artifacts: dict[str, bytes] | None = None,
    jobs: list[tuple[str, str, bytes]] | None = None,
) -> WorkflowRun:
    """`artifacts`: name -> zip bytes; `jobs`: (name, conclusion, log)."""
    with d._lock:
        run = WorkflowRun(d.next_id(), head_branch)
        for name, data in (artifacts or {}).items():
            run.artifacts[name] = data
            run.artifact_ids[d.next_id()] = name
        run.jobs = [WorkflowJob(d.next_id(), n, c, log) for n, c, log in jobs or []]
        d.workflow_runs[run.id] = run
        return run


# -- JSON shapes: the subset of GitHub's fields PyGithub and our publisher read ----------------


def error(status: int, message: str, **extra: Json) -> Reply:
    body = {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
    return status, body, {}


STAMP = "2024-05-01T12:00:00Z"
# Fields of the shapes below that GitHub's REST schema (or a webhook schema) marks nullable.
NULLABLE = frozenset(
    {
        "body",
        "requested_reviewers",
        "requested_teams",
        "assignees",
        "assignee",
        "milestone",
        "labels",
        "description",
        "closed_at",
        "merged_at",
        "active_lock_reason",
        "auto_merge",
        "user",
    }
)
# Always present, as GitHub sends them: nothing assigned, no milestone, not closed.
UNSET: dict[str, Json] = {
    "assignee": None,
    "assignees": [],
    "milestone": None,
    "closed_at": None,
    "active_lock_reason": None,
}


def with_nulls(data: Json) -> Json:
    """`data` with null for every nullable field that has no value ([], "", or null)."""
    if isinstance(data, list):
        return [with_nulls(item) for item in data]
    if isinstance(data, dict):
        return {
            key: None if key in NULLABLE and value in ("", [], None) else with_nulls(value)
            for key, value in data.items()
        }
    return data


def num(name: str) -> int:
    """A stable numeric id for a name (hash() is salted per process)."""
    return zlib.crc32(name.encode()) % 10**8


def user_json(d: GitHubDouble, login: str) -> Json:
    return {
        "login": login,
        "id": num(login),
        "node_id": f"U_{login}",
        "type": d.users.get(login, "User"),
        "site_admin": False,
        "url": f"{d.url}/users/{urllib.parse.quote(login)}",
        "html_url": f"{d.server_url}/{login}",
    }


def repo_json(d: GitHubDouble, repo: Repo) -> Json:
    owner, name = repo.full_name.split("/")
    return {
        "id": num(repo.full_name),
        "node_id": f"R_{repo.full_name}",
        "name": name,
        "full_name": repo.full_name,
        "owner": {**user_json(d, owner), "type": d.users.get(owner, "Organization")},
        "private": repo.private,
        "fork": repo.fork,
        "default_branch": repo.default_branch,
        "url": f"{d.url}/repos/{repo.full_name}",
        "html_url": f"{d.server_url}/{repo.full_name}",
        "clone_url": f"{d.server_url}/{repo.full_name}.git",
    }


def labels_json(d: GitHubDouble, names: list[str]) -> Json:
    base = f"{d.url}/repos/{d.repo.full_name}/labels"
    return [
        {"id": num(n), "name": n, "color": "ededed", "url": f"{base}/{n}", "description": ""}
        for n in names
    ]


def issue_json(d: GitHubDouble, issue: Issue) -> Json:
    api = f"{d.url}/repos/{d.repo.full_name}"
    kind = "pull" if issue.pull else "issues"
    data = {
        "id": issue.number * 7919,
        "node_id": f"I_{issue.number}",
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "user": user_json(d, issue.user) if issue.user else None,  # "": a deleted account
        "state": issue.state,
        "labels": labels_json(d, issue.labels),
        **UNSET,
        "comments": sum(c.issue_number == issue.number for c in d.comments.values()),
        "url": f"{api}/issues/{issue.number}",
        "repository_url": api,
        "comments_url": f"{api}/issues/{issue.number}/comments",
        "html_url": f"{d.server_url}/{d.repo.full_name}/{kind}/{issue.number}",
        "created_at": STAMP,
        "updated_at": STAMP,
    }
    if issue.pull:
        data["pull_request"] = {
            "url": f"{api}/pulls/{issue.number}",
            "html_url": data["html_url"],
        }
    return data


def comment_json(d: GitHubDouble, comment: Comment) -> Json:
    api = f"{d.url}/repos/{d.repo.full_name}"
    issue = d.issues[comment.issue_number]
    kind = "pull" if issue.pull else "issues"
    return {
        "id": comment.id,
        "node_id": f"IC_{comment.id}",
        "body": comment.body,
        "user": user_json(d, comment.user),
        "url": f"{api}/issues/comments/{comment.id}",
        "issue_url": f"{api}/issues/{comment.issue_number}",
        "html_url": f"{d.server_url}/{d.repo.full_name}/{kind}/{issue.number}"
        f"#issuecomment-{comment.id}",
        "created_at": STAMP,
        "updated_at": STAMP,
    }


def branch_json(d: GitHubDouble, ref: str, sha: str, repo_name: str | None) -> Json:
    repo = d.repos.get(repo_name or "")
    owner = (repo_name or "ghost/x").split("/")[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(d, owner),
        "repo": repo_json(d, repo) if repo else None,
    }


def pull_json(d: GitHubDouble, issue: Issue) -> Json:
    assert issue.pull is not None
    pull = issue.pull
    api = f"{d.url}/repos/{d.repo.full_name}"
    return {
        "id": issue.number * 104729,
        "node_id": f"PR_{issue.number}",
        "number": issue.number,
        "state": issue.state,
        "title": issue.title,
        "body": issue.body,
        "draft": pull.draft,
        "merged": False,
        "merged_at": None,
        "auto_merge": None,
        **UNSET,
        "user": user_json(d, issue.user),
        "labels": labels_json(d, issue.labels),
        "url": f"{api}/pulls/{issue.number}",
        "issue_url": f"{api}/issues/{issue.number}",
        "html_url": f"{d.server_url}/{d.repo.full_name}/pull/{issue.number}",
        "head": branch_json(d, pull.head_ref, pull.head_sha, pull.head_repo),
        "base": branch_json(d, pull.base_ref, "1" * 40, d.repo.full_name),
        "requested_reviewers": [user_json(d, r) for r in pull.reviewers],
        "requested_teams": [{"slug": t, "name": t} for t in pull.team_reviewers],
        "created_at": STAMP,
        "updated_at": STAMP,
    }


def page(d: GitHubDouble, path: str, query: dict[str, str], items: list[Json]) -> Reply:
    """One page of a list with GitHub's Link header, which PaginatedList follows."""
    per_page = min(int(query.get("per_page", 30)), 100)
    page = int(query.get("page", 1))
    last = max(1, -(-len(items) // per_page))
    links = []
    for rel, number in (("next", page + 1), ("last", last)):
        if page < last:
            params = urllib.parse.urlencode({**query, "page": number, "per_page": per_page})
            links.append(f'<{d.url}{path}?{params}>; rel="{rel}"')
    headers = {"Link": ", ".join(links)} if links else {}
    return 200, items[(page - 1) * per_page : page * per_page], headers


# -- routes: (double, path arguments, query, json body) -> reply -------------------------------


def _get_repo(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    repo = d.repos.get(f"{a[0]}/{a[1]}")
    return (200, repo_json(d, repo), {}) if repo else error(404, "Not Found")


def _get_permission(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    login = a[2]
    if login not in d.users and login not in d.permissions:
        return error(404, f"{login} is not a user")
    role = d.permissions.get(login, "none")
    permission = ROLE_TO_PERMISSION.get(role, "read" if role != "none" else "none")
    return 200, {"permission": permission, "role_name": role, "user": user_json(d, login)}, {}


def _get_user(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    return (200, user_json(d, a[0]), {}) if a[0] in d.users else error(404, "Not Found")


def _get_authenticated_user(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    if d.users.get(d.actor) == "Bot":  # installation tokens, GITHUB_TOKEN among them
        return error(403, "Resource not accessible by integration")
    return 200, user_json(d, d.actor), {}


def _find_issue(d: GitHubDouble, number: str) -> Issue | None:
    return d.issues.get(int(number))


def _get_issue(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return (200, issue_json(d, issue), {}) if issue else error(404, "Not Found")


def _list_comments(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    if not _find_issue(d, a[2]):
        return error(404, "Not Found")
    found = [comment_json(d, c) for c in d.comments.values() if c.issue_number == int(a[2])]
    return page(d, f"/repos/{a[0]}/{a[1]}/issues/{a[2]}/comments", q, found)


def _create_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    if not _find_issue(d, a[2]):
        return error(404, "Not Found")
    if not isinstance(b.get("body"), str):
        return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    return 201, comment_json(d, d.add_comment(int(a[2]), b["body"], d.actor)), {}


def _get_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    return (200, comment_json(d, comment), {}) if comment else error(404, "Not Found")


def _edit_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    if not comment:
        return error(404, "Not Found")
    comment.body = b.get("body", comment.body)
    return 200, comment_json(d, comment), {}


def _react(d: GitHubDouble, reactions: list[str], content: Any) -> Reply:
    if content not in REACTIONS:
        return error(422, "Validation Failed", errors=[{"field": "content", "code": "invalid"}])
    status = 200 if content in reactions else 201  # GitHub answers 200 for a repeat
    if status == 201:
        reactions.append(content)
    reaction = {"id": d.next_id(), "content": content, "user": user_json(d, d.actor)}
    return status, {**reaction, "node_id": "RE_1", "created_at": STAMP}, {}


def _react_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    return _react(d, comment.reactions, b.get("content")) if comment else error(404, "Not Found")


def _react_issue(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return _react(d, issue.reactions, b.get("content")) if issue else error(404, "Not Found")


def _add_labels(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue:
        return error(404, "Not Found")
    names = b if isinstance(b, list) else b.get("labels", [])  # GitHub accepts both forms
    issue.labels += [n for n in names if n not in issue.labels]
    return 200, labels_json(d, issue.labels), {}


def _list_pulls(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    state = q.get("state", "open")
    found = [pull_json(d, i) for i in d.pulls() if state in ("all", i.state)]
    found = [p for p in found if q.get("base", p["base"]["ref"]) == p["base"]["ref"]]
    found = [p for p in found if q.get("head", p["head"]["label"]) == p["head"]["label"]]
    return page(d, f"/repos/{a[0]}/{a[1]}/pulls", q, found)


def _create_pull(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    if d.forbid_pull_creation:
        return error(403, ACTIONS_FORBIDDEN)
    if not all(isinstance(b.get(k), str) for k in ("title", "head", "base")):
        return error(
            422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "missing_field"}]
        )
    owner, _, ref = b["head"].rpartition(":")
    label = f"{owner or d.repo.full_name.split('/')[0]}:{ref}"
    for issue in d.pulls():
        same_head = pull_json(d, issue)["head"]["label"] == label
        if issue.state == "open" and same_head and issue.pull and issue.pull.base_ref == b["base"]:
            message = f"A pull request already exists for {label}."
            errors = [{"resource": "PullRequest", "code": "custom", "message": message}]
            return error(422, "Validation Failed", errors=errors)
    issue = d.add_issue(b["title"], b.get("body"), d.actor)
    issue.pull = Pull(ref, b["base"], d._head_repo(owner), draft=bool(b.get("draft")))
    return 201, pull_json(d, issue), {}


def _get_pull(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return (200, pull_json(d, issue), {}) if issue and issue.pull else error(404, "Not Found")


def _edit_pull(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue or not issue.pull:
        return error(404, "Not Found")
    issue.title = b.get("title", issue.title)
    issue.body = b.get("body", issue.body)
    issue.state = b.get("state", issue.state)
    issue.pull.base_ref = b.get("base", issue.pull.base_ref)
    return 200, pull_json(d, issue), {}


def _request_reviewers(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue or not issue.pull:
        return error(404, "Not Found")
    reviewers = b.get("reviewers", [])
    if any(r not in d.permissions or r == issue.user for r in reviewers):
        return error(
            422,
            "Reviews may only be requested from collaborators. One or more of the users or "
            f"teams you specified is not a collaborator of the {d.repo.full_name} repository.",
        )
    issue.pull.reviewers += [r for r in reviewers if r not in issue.pull.reviewers]
    issue.pull.team_reviewers += b.get("team_reviewers", [])
    return 201, pull_json(d, issue), {}


ROUTES: list[Route] = [
    ("GET", REPO_PATH, _get_repo),
    ("GET", rf"{REPO_PATH}/collaborators{SEG}/permission", _get_permission),
    ("GET", rf"/users{SEG}", _get_user),
    ("GET", r"/user", _get_authenticated_user),
    ("GET", rf"{REPO_PATH}/issues/(\d+)", _get_issue),
    ("GET", rf"{REPO_PATH}/issues/(\d+)/comments", _list_comments),
    ("POST", rf"{REPO_PATH}/issues/(\d+)/comments", _create_comment),
    ("GET", rf"{REPO_PATH}/issues/comments/(\d+)", _get_comment),
    ("PATCH", rf"{REPO_PATH}/issues/comments/(\d+)", _edit_comment),
    ("POST", rf"{REPO_PATH}/issues/comments/(\d+)/reactions", _react_comment),
    ("POST", rf"{REPO_PATH}/issues/(\d+)/reactions", _react_issue),
    ("POST", rf"{REPO_PATH}/issues/(\d+)/labels", _add_labels),
    ("GET", rf"{REPO_PATH}/pulls", _list_pulls),
    ("POST", rf"{REPO_PATH}/pulls", _create_pull),
    ("GET", rf"{REPO_PATH}/pulls/(\d+)", _get_pull),
    ("PATCH", rf"{REPO_PATH}/pulls/(\d+)", _edit_pull),
    ("POST", rf"{REPO_PATH}/pulls/(\d+)/requested_reviewers", _request_reviewers),
]


# -- review threads ----------------------------------------------------------------------------


def review_comment_json(d: GitHubDouble, c: ReviewComment) -> Json:
    api = f"{d.url}/repos/{d.repo.full_name}"
    data: dict[str, Any] = {
        "id": c.id,
        "node_id": f"PRRC_{c.id}",
        "pull_request_review_id": c.review_id,
        "diff_hunk": c.diff_hunk,
        "path": c.path,
        "commit_id": "0" * 40,
        "original_commit_id": "0" * 40,
        "user": user_json(d, c.user),
        "body": c.body,
        "created_at": STAMP,
        "updated_at": STAMP,
        "url": f"{api}/pulls/comments/{c.id}",
        "html_url": f"{d.server_url}/{d.repo.full_name}/pull/{c.pull_number}#discussion_r{c.id}",
        "pull_request_url": f"{api}/pulls/{c.pull_number}",
        "author_association": "MEMBER",
        "line": c.line,
        "original_line": c.line,
        "start_line": c.start_line,
        "original_start_line": c.start_line,
        "side": "RIGHT",
        "start_side": None,
        "subject_type": "line",
    }
    if c.in_reply_to_id is not None:
        data["in_reply_to_id"] = c.in_reply_to_id
    return data


def _list_review_comments(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c) for c in d.review_comments.values() if c.pull_number == int(a[2])
    ]
    return page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/comments", q, found)


def _review_comments_of_review(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c)
        for c in d.review_comments.values()
        if c.pull_number == int(a[2]) and c.review_id == int(a[3])
    ]
    return page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/reviews/{a[3]}/comments", q, found)


def _reply_in_thread(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    parent = d.review_comments.get(int(a[3]))
    if parent is None or parent.pull_number != int(a[2]):
        return error(404, "Not Found")
    if not isinstance(b.get("body"), str):
        return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    root = parent.in_reply_to_id or parent.id  # GitHub threads replies under the first comment
    made = add_review_comment(
        d,
        parent.pull_number,
        b["body"],
        user=d.actor,
        path=parent.path,
        line=parent.line,
        diff_hunk=parent.diff_hunk,
        in_reply_to=root,
    )
    return 201, review_comment_json(d, made), {}


def _edit_review_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.review_comments.get(int(a[2]))
    if comment is None:
        return error(404, "Not Found")
    comment.body = b.get("body", comment.body)
    return 200, review_comment_json(d, comment), {}


def _react_review_comment(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.review_comments.get(int(a[2]))
    if comment is None:
        return error(404, "Not Found")
    if b.get("content") not in REACTIONS:
        return error(422, "Validation Failed")
    status = 200 if b["content"] in comment.reactions else 201
    if status == 201:
        comment.reactions.append(b["content"])
    return (
        status,
        {"id": d.next_id(), "content": b["content"], "user": user_json(d, d.actor)},
        {},
    )


REVIEW_ROUTES: list[Route] = [
    ("GET", rf"{REPO_PATH}/pulls/(\d+)/comments", _list_review_comments),
    ("GET", rf"{REPO_PATH}/pulls/(\d+)/reviews/(\d+)/comments", _review_comments_of_review),
    ("POST", rf"{REPO_PATH}/pulls/(\d+)/comments/(\d+)/replies", _reply_in_thread),
    ("PATCH", rf"{REPO_PATH}/pulls/comments/(\d+)", _edit_review_comment),
    ("POST", rf"{REPO_PATH}/pulls/comments/(\d+)/reactions", _react_review_comment),
]


# -- Actions: artifacts and job logs, downloaded through a redirect to storage -----------------


def _artifacts(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    run = d.workflow_runs.get(int(a[2]))
    if run is None:
        return error(404, "Not Found")
    api = f"{d.url}/repos/{a[0]}/{a[1]}/actions/artifacts"
    items = [
        {
            "id": i,
            "node_id": f"MDg_{i}",
            "name": name,
            "size_in_bytes": len(run.artifacts[name]),
            "url": f"{api}/{i}",
            "archive_download_url": f"{api}/{i}/zip",
            "expired": False,
            "created_at": STAMP,
            "workflow_run": {"id": run.id, "head_branch": run.head_branch},
        }
        for i, name in run.artifact_ids.items()
    ]
    return 200, {"total_count": len(items), "artifacts": items}, {}


def _redirect(d: GitHubDouble, data: bytes) -> Reply:
    key = secrets.token_hex(8)
    d.blobs[key] = data
    return 302, None, {"Location": f"{d.url}/_blobs/{key}?sig=short-lived"}


def _artifact_zip(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    for run in d.workflow_runs.values():
        if int(a[2]) in run.artifact_ids:
            return _redirect(d, run.artifacts[run.artifact_ids[int(a[2])]])
    return error(404, "Not Found")


def _jobs(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    run = d.workflow_runs.get(int(a[2]))
    if run is None:
        return error(404, "Not Found")
    jobs = [
        {
            "id": j.id,
            "run_id": run.id,
            "name": j.name,
            "status": "completed",
            "conclusion": j.conclusion,
            "head_branch": run.head_branch,
        }
        for j in run.jobs
    ]
    return 200, {"total_count": len(jobs), "jobs": jobs}, {}


def _job_logs(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    for run in d.workflow_runs.values():
        for job in run.jobs:
            if job.id == int(a[2]):
                return _redirect(d, job.log)
    return error(404, "Not Found")


def _blob(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    data = d.blobs.get(a[0])
    return (200, data, {}) if data is not None else error(404, "Not Found")


RUN_ROUTES: list[Route] = [
    ("GET", rf"{REPO_PATH}/actions/runs/(\d+)/artifacts", _artifacts),
    ("GET", rf"{REPO_PATH}/actions/artifacts/(\d+)/zip", _artifact_zip),
    ("GET", rf"{REPO_PATH}/actions/runs/(\d+)/jobs", _jobs),
    ("GET", rf"{REPO_PATH}/actions/jobs/(\d+)/logs", _job_logs),
    ("GET", r"/_blobs/([0-9a-f]+)", _blob),
]


def _handler_for(double: GitHubDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small JSON answers must not wait for a delayed ACK

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip() else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = double.handle(self.command, self.path, body, headers)
            payload = with_nulls(payload) if double.send_nulls and status < 300 else payload
            # A str payload goes out as is: GitHub's proxies answer some 5xx with HTML.
            if isinstance(payload, bytes):  # a download: an artifact's zip, a job's log
                data, kind = payload, "application/octet-stream"
            else:
                text = payload if isinstance(payload, str) else json.dumps(payload)
                data = b"" if payload is None else text.encode()
                kind = "text/html" if isinstance(payload, str) else "application/json"
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
