"""Payloads of the pull request loop (review comments, reviews, failed workflow runs), built
from the real octokit-webhooks fixtures, and a world whose origin has a pull request."""

from __future__ import annotations

import hashlib
import io
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from action_env import OCTOKIT, REPOSITORY, ActionWorld, _fixture
from sample_repo import PYTEST, SampleRepo

from codegen_ci.testing.github_double import ReviewComment, add_review_comment

HUNK = (
    '@@ -14,4 +14,4 @@ class Version:\n     def bump_minor(self) -> "Version":\n'
    "-        return Version(self.major, self.minor + 1, self.patch)\n"
)


def _retarget(payload: dict[str, Any]) -> dict[str, Any]:
    owner, name = REPOSITORY.split("/")
    payload["repository"].update(full_name=REPOSITORY, name=name, default_branch="main")
    payload["repository"]["owner"]["login"] = owner
    return payload


def _pull_part(world: ActionWorld, payload: dict[str, Any], number: int) -> None:
    issue = world.github.issues[number]
    assert issue.pull is not None
    payload["pull_request"].update(number=number, title=issue.title, body=issue.body)
    payload["pull_request"]["head"].update(ref=issue.pull.head_ref, sha=issue.pull.head_sha)
    payload["pull_request"]["head"]["repo"]["full_name"] = REPOSITORY


def review_comment_payload(
    world: ActionWorld, comment: ReviewComment, user_type: str = "User"
) -> dict[str, Any]:
    payload = _fixture(OCTOKIT / "pull_request_review_comment" / "created.payload.json")
    _pull_part(world, payload, comment.pull_number)
    payload["comment"].update(
        id=comment.id,
        body=comment.body,
        path=comment.path,
        line=comment.line,
        diff_hunk=comment.diff_hunk,
        pull_request_review_id=comment.review_id,
    )
    if comment.in_reply_to_id:
        payload["comment"]["in_reply_to_id"] = comment.in_reply_to_id
    payload["comment"]["user"].update(login=comment.user, type=user_type)
    payload["sender"].update(login=comment.user, type=user_type)
    return _retarget(payload)


def review_payload(
    world: ActionWorld, number: int, review_id: int, body: str, user: str = "alice"
) -> dict[str, Any]:
    payload = _fixture(OCTOKIT / "pull_request_review" / "submitted.payload.json")
    _pull_part(world, payload, number)
    payload["review"].update(id=review_id, body=body, state="commented")
    payload["review"]["user"].update(login=user, type="User")
    payload["sender"].update(login=user, type="User")
    return _retarget(payload)


def workflow_run_payload(
    world: ActionWorld,
    run_id: int,
    branch: str,
    pr: int | None,
    conclusion: str = "failure",
    head_repo: str = REPOSITORY,
) -> dict[str, Any]:
    payload = _fixture(OCTOKIT / "workflow_run" / "completed.payload.json")
    run = payload["workflow_run"]
    run.update(
        id=run_id,
        name="CI",
        head_branch=branch,
        conclusion=conclusion,
        event="push",
        html_url=f"https://github.com/{REPOSITORY}/actions/runs/{run_id}",
    )
    run["head_repository"]["full_name"] = head_repo
    run["pull_requests"] = [] if pr is None else [{"number": pr, "head": {"ref": branch}}]
    return _retarget(payload)


def seed_comment(world: ActionWorld, number: int, body: str, **kw: Any) -> ReviewComment:
    kw.setdefault("path", "src/semver/version.py")
    kw.setdefault("line", 15)
    kw.setdefault("diff_hunk", HUNK)
    return add_review_comment(world.github, number, body, **kw)


# JUnit reports by the content of the suite that wrote them: the sample's suite is the same in
# every world, so its pytest (~0.3 CPU-s a start) runs once a session, not once a workflow run
_REPORTS: dict[str, bytes] = {}


def junit_zip(sample: SampleRepo, out: Path) -> bytes:
    """A real pytest JUnit report of the sample's failing suite, zipped as upload-artifact does
    (the report is run once per content of the sample's working tree, then reused)."""
    key = _suite_key(sample.path)
    if key not in _REPORTS:
        xml = out / "junit.xml"
        subprocess.run(
            f"{PYTEST} --junitxml={xml}",
            shell=True,
            cwd=sample.path,
            capture_output=True,
            check=False,
        )
        _REPORTS[key] = xml.read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("reports/junit.xml", _REPORTS[key])
    return buffer.getvalue()


def _suite_key(root: Path) -> str:
    """A digest of every file under `root` pytest could read (all but git's and caches)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.is_file() and ".git" not in parts and "__pycache__" not in parts:
            digest.update(f"{'/'.join(parts)}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()
