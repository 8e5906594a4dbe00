"""The GitHub double's Actions routes: a workflow run's artifacts (zip archives), its jobs and
their logs. Downloads answer, as GitHub does, with a redirect to storage (`/_blobs/...`, a
signed URL that needs no token). Seed with `add_workflow_run`."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from codegen_ci.testing import github_shapes as shape
from codegen_ci.testing.github_state import (
    REPO_PATH,
    Args,
    Json,
    Query,
    Reply,
    WorkflowJob,
    WorkflowRun,
)

if TYPE_CHECKING:
    from codegen_ci.testing.github_data import GitHubData

Route = tuple[str, str, Callable[["GitHubData", Args, Query, Json], Reply]]


def add_workflow_run(
    d: GitHubData,
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


def _artifacts(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
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


def _redirect(d: GitHubData, data: bytes) -> Reply:
    key = secrets.token_hex(8)
    d.blobs[key] = data
    return 302, None, {"Location": f"{d.url}/_blobs/{key}?sig=short-lived"}


def _artifact_zip(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    for run in d.workflow_runs.values():
        if int(a[2]) in run.artifact_ids:
            return _redirect(d, run.artifacts[run.artifact_ids[int(a[2])]])
    return shape.error(404, "Not Found")


def _jobs(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
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


def _job_logs(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    for run in d.workflow_runs.values():
        for job in run.jobs:
            if job.id == int(a[2]):
                return _redirect(d, job.log)
    return shape.error(404, "Not Found")


def _blob(d: GitHubData, a: Args, q: Query, b: Json) -> Reply:
    data = d.blobs.get(a[0])
    return (200, data, {}) if data is not None else shape.error(404, "Not Found")


RUN_ROUTES: list[Route] = [
    ("GET", rf"{REPO_PATH}/actions/runs/(\d+)/artifacts", _artifacts),
    ("GET", rf"{REPO_PATH}/actions/artifacts/(\d+)/zip", _artifact_zip),
    ("GET", rf"{REPO_PATH}/actions/runs/(\d+)/jobs", _jobs),
    ("GET", rf"{REPO_PATH}/actions/jobs/(\d+)/logs", _job_logs),
    ("GET", r"/_blobs/([0-9a-f]+)", _blob),
]
