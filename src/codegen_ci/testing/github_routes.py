"""Route handlers of the GitHub double: (double, path arguments, query, json body) -> reply."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codegen_ci.testing import github_shapes as shape
from codegen_ci.testing.github_state import (
    ACTIONS_FORBIDDEN,
    REACTIONS,
    REPO_PATH,
    ROLE_TO_PERMISSION,
    SEG,
    Args,
    Issue,
    Json,
    Pull,
    Query,
    Reply,
)

if TYPE_CHECKING:
    from codegen_ci.testing.github_data import GitHubData


def _get_repo(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    repo = d.repos.get(f"{a[0]}/{a[1]}")
    return (200, shape.repo_json(d, repo), {}) if repo else shape.error(404, "Not Found")


def _get_permission(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    login = a[2]
    if login not in d.users and login not in d.permissions:
        return shape.error(404, f"{login} is not a user")
    role = d.permissions.get(login, "none")
    permission = ROLE_TO_PERMISSION.get(role, "read" if role != "none" else "none")
    return 200, {"permission": permission, "role_name": role, "user": shape.user_json(d, login)}, {}


def _get_user(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    return (200, shape.user_json(d, a[0]), {}) if a[0] in d.users else shape.error(404, "Not Found")


def _get_authenticated_user(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    if d.users.get(d.actor) == "Bot":  # installation tokens, GITHUB_TOKEN among them
        return shape.error(403, "Resource not accessible by integration")
    return 200, shape.user_json(d, d.actor), {}


def _find_issue(d: GitHubData, number: str) -> Issue | None:
    return d.issues.get(int(number))


def _get_issue(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return (200, shape.issue_json(d, issue), {}) if issue else shape.error(404, "Not Found")


def _list_comments(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    if not _find_issue(d, a[2]):
        return shape.error(404, "Not Found")
    found = [shape.comment_json(d, c) for c in d.comments.values() if c.issue_number == int(a[2])]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/issues/{a[2]}/comments", q, found)


def _create_comment(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    if not _find_issue(d, a[2]):
        return shape.error(404, "Not Found")
    if not isinstance(b.get("body"), str):
        return shape.error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    return 201, shape.comment_json(d, d.add_comment(int(a[2]), b["body"], d.actor)), {}


def _get_comment(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    return (200, shape.comment_json(d, comment), {}) if comment else shape.error(404, "Not Found")


def _edit_comment(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    if not comment:
        return shape.error(404, "Not Found")
    comment.body = b.get("body", comment.body)
    return 200, shape.comment_json(d, comment), {}


def _react(d: GitHubData, reactions: list[str], content: Any) -> Reply:
    if content not in REACTIONS:
        return shape.error(
            422, "Validation Failed", errors=[{"field": "content", "code": "invalid"}]
        )
    status = 200 if content in reactions else 201  # GitHub answers 200 for a repeat
    if status == 201:
        reactions.append(content)
    reaction = {"id": d.next_id(), "content": content, "user": shape.user_json(d, d.actor)}
    return status, {**reaction, "node_id": "RE_1", "created_at": shape.STAMP}, {}


def _react_comment(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    comment = d.comments.get(int(a[2]))
    return (
        _react(d, comment.reactions, b.get("content")) if comment else shape.error(404, "Not Found")
    )


def _react_issue(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return _react(d, issue.reactions, b.get("content")) if issue else shape.error(404, "Not Found")


def _add_labels(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue:
        return shape.error(404, "Not Found")
    names = b if isinstance(b, list) else b.get("labels", [])  # GitHub accepts both forms
    issue.labels += [n for n in names if n not in issue.labels]
    return 200, shape.labels_json(d, issue.labels), {}


def _list_pulls(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    state = q.get("state", "open")
    found = [shape.pull_json(d, i) for i in d.pulls() if state in ("all", i.state)]
    found = [p for p in found if q.get("base", p["base"]["ref"]) == p["base"]["ref"]]
    found = [p for p in found if q.get("head", p["head"]["label"]) == p["head"]["label"]]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/pulls", q, found)


def _create_pull(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    if d.forbid_pull_creation:
        return shape.error(403, ACTIONS_FORBIDDEN)
    if not all(isinstance(b.get(k), str) for k in ("title", "head", "base")):
        return shape.error(
            422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "missing_field"}]
        )
    owner, _, ref = b["head"].rpartition(":")
    label = f"{owner or d.repo.full_name.split('/')[0]}:{ref}"
    for issue in d.pulls():
        same_head = shape.pull_json(d, issue)["head"]["label"] == label
        if issue.state == "open" and same_head and issue.pull and issue.pull.base_ref == b["base"]:
            message = f"A pull request already exists for {label}."
            errors = [{"resource": "PullRequest", "code": "custom", "message": message}]
            return shape.error(422, "Validation Failed", errors=errors)
    issue = d.add_issue(b["title"], b.get("body"), d.actor)
    issue.pull = Pull(ref, b["base"], d._head_repo(owner), draft=bool(b.get("draft")))
    return 201, shape.pull_json(d, issue), {}


def _get_pull(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    return (
        (200, shape.pull_json(d, issue), {})
        if issue and issue.pull
        else shape.error(404, "Not Found")
    )


def _edit_pull(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue or not issue.pull:
        return shape.error(404, "Not Found")
    issue.title = b.get("title", issue.title)
    issue.body = b.get("body", issue.body)
    issue.state = b.get("state", issue.state)
    issue.pull.base_ref = b.get("base", issue.pull.base_ref)
    return 200, shape.pull_json(d, issue), {}


def _request_reviewers(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    issue = _find_issue(d, a[2])
    if not issue or not issue.pull:
        return shape.error(404, "Not Found")
    reviewers = b.get("reviewers", [])
    if any(r not in d.permissions or r == issue.user for r in reviewers):
        return shape.error(
            422,
            "Reviews may only be requested from collaborators. One or more of the users or "
            f"teams you specified is not a collaborator of the {d.repo.full_name} repository.",
        )
    issue.pull.reviewers += [r for r in reviewers if r not in issue.pull.reviewers]
    issue.pull.team_reviewers += b.get("team_reviewers", [])
    return 201, shape.pull_json(d, issue), {}


ROUTES: list[tuple[str, str, Callable[[GitHubData, Args, Query, Json], Reply]]] = [
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
