"""The GitHub double's review-thread routes: a pull request's review comments, one review's
comments, replies in a thread, edits and reactions. Seed with `add_review_comment`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codegen_ci.testing import github_shapes as shape
from codegen_ci.testing.github_state import (
    REACTIONS,
    REPO_PATH,
    Args,
    Json,
    Query,
    Reply,
    ReviewComment,
)

if TYPE_CHECKING:
    from codegen_ci.testing.github_data import GitHubData

Route = tuple[str, str, Callable[["GitHubData", Args, Query, Json], Reply]]


def add_review_comment(
    d: GitHubData,
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


def review_comment_json(d: GitHubData, c: ReviewComment) -> Json:
    api = f"{d.url}/repos/{d.repo.full_name}"
    data: dict[str, Any] = {
        "id": c.id,
        "node_id": f"PRRC_{c.id}",
        "pull_request_review_id": c.review_id,
        "diff_hunk": c.diff_hunk,
        "path": c.path,
        "commit_id": "0" * 40,
        "original_commit_id": "0" * 40,
        "user": shape.user_json(d, c.user),
        "body": c.body,
        "created_at": shape.STAMP,
        "updated_at": shape.STAMP,
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


def _list(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c) for c in d.review_comments.values() if c.pull_number == int(a[2])
    ]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/comments", q, found)


def _of_review(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c)
        for c in d.review_comments.values()
        if c.pull_number == int(a[2]) and c.review_id == int(a[3])
    ]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/reviews/{a[3]}/comments", q, found)


def _reply(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    parent = d.review_comments.get(int(a[3]))
    if parent is None or parent.pull_number != int(a[2]):
        return shape.error(404, "Not Found")
    if not isinstance(b.get("body"), str):
        return shape.error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
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


def _edit(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    comment = d.review_comments.get(int(a[2]))
    if comment is None:
        return shape.error(404, "Not Found")
    comment.body = b.get("body", comment.body)
    return 200, review_comment_json(d, comment), {}


def _react(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    comment = d.review_comments.get(int(a[2]))
    if comment is None:
        return shape.error(404, "Not Found")
    if b.get("content") not in REACTIONS:
        return shape.error(422, "Validation Failed")
    status = 200 if b["content"] in comment.reactions else 201
    if status == 201:
        comment.reactions.append(b["content"])
    return (
        status,
        {"id": d.next_id(), "content": b["content"], "user": shape.user_json(d, d.actor)},
        {},
    )


REVIEW_ROUTES: list[Route] = [
    ("GET", rf"{REPO_PATH}/pulls/(\d+)/comments", _list),
    ("GET", rf"{REPO_PATH}/pulls/(\d+)/reviews/(\d+)/comments", _of_review),
    ("POST", rf"{REPO_PATH}/pulls/(\d+)/comments/(\d+)/replies", _reply),
    ("PATCH", rf"{REPO_PATH}/pulls/comments/(\d+)", _edit),
    ("POST", rf"{REPO_PATH}/pulls/comments/(\d+)/reactions", _react),
]
