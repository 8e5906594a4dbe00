"""What the GitHub double holds: its records and the constants GitHub answers with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = Any
Reply = tuple[int, Json, dict[str, str]]
Args = list[str]  # a route's captured path segments
Query = dict[str, str]
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
