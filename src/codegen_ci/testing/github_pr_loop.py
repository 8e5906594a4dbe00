"""The GitHub double's routes for the pull request loop: review comments (list, a review's
own, replies, edits, reactions) and a workflow run's artifacts, jobs and logs, with the
downloads GitHub serves as a redirect to storage (`/_blobs/...`, which needs no token).

Seed with `add_review_comment` and `add_workflow_run`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codegen_ci.testing import github_shapes as shape
from codegen_ci.testing.github_state import (
    REACTIONS,
    Json,
    Reply,
    ReviewComment,
    WorkflowJob,
    WorkflowRun,
)

if TYPE_CHECKING:
    from codegen_ci.testing.github_double import GitHubDouble

Args = list[str]
Query = dict[str, str]


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


def _list(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c) for c in d.review_comments.values() if c.pull_number == int(a[2])
    ]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/comments", q, found)


def _of_review(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    found = [
        review_comment_json(d, c)
        for c in d.review_comments.values()
        if c.pull_number == int(a[2]) and c.review_id == int(a[3])
    ]
    return shape.page(d, f"/repos/{a[0]}/{a[1]}/pulls/{a[2]}/reviews/{a[3]}/comments", q, found)


def _reply(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
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


def _edit(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    comment = d.review_comments.get(int(a[2]))
    if comment is None:
        return shape.error(404, "Not Found")
    comment.body = b.get("body", comment.body)
    return 200, review_comment_json(d, comment), {}


def _react(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
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


def _artifacts(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    run = d.workflow_runs.get(int(a[2]))
    if run is None:
        return shape.error(404, "Not Found")
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
            "created_at": shape.STAMP,
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
    return shape.error(404, "Not Found")


def _jobs(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    run = d.workflow_runs.get(int(a[2]))
    if run is None:
        return shape.error(404, "Not Found")
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
    return shape.error(404, "Not Found")


def _blob(d: GitHubDouble, a: Args, q: Query, b: Json) -> Reply:
    data = d.blobs.get(a[0])
    return (200, data, {}) if data is not None else shape.error(404, "Not Found")


_SEG = r"/([^/]+)"
_REPO = rf"/repos{_SEG}{_SEG}"
PR_LOOP_ROUTES: list[tuple[str, str, Callable[[GitHubDouble, Args, Query, Json], Reply]]] = [
    ("GET", rf"{_REPO}/pulls/(\d+)/comments", _list),
    ("GET", rf"{_REPO}/pulls/(\d+)/reviews/(\d+)/comments", _of_review),
    ("POST", rf"{_REPO}/pulls/(\d+)/comments/(\d+)/replies", _reply),
    ("PATCH", rf"{_REPO}/pulls/comments/(\d+)", _edit),
    ("POST", rf"{_REPO}/pulls/comments/(\d+)/reactions", _react),
    ("GET", rf"{_REPO}/actions/runs/(\d+)/artifacts", _artifacts),
    ("GET", rf"{_REPO}/actions/artifacts/(\d+)/zip", _artifact_zip),
    ("GET", rf"{_REPO}/actions/runs/(\d+)/jobs", _jobs),
    ("GET", rf"{_REPO}/actions/jobs/(\d+)/logs", _job_logs),
    ("GET", r"/_blobs/([0-9a-f]+)", _blob),
]
