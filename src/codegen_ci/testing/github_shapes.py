"""JSON shapes of the GitHub double.

The subset of GitHub's fields PyGithub and our publisher read.
"""

from __future__ import annotations

import urllib.parse
import zlib
from typing import TYPE_CHECKING

from codegen_ci.testing.github_state import DOCS, Comment, Issue, Json, Reply, Repo

if TYPE_CHECKING:
    from codegen_ci.testing.github_data import GitHubData


def error(status: int, message: str, **extra: Json) -> Reply:
    body = {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
    return status, body, {}


STAMP = "2024-05-01T12:00:00Z"
# Fields of the shapes below that GitHub's REST schema (or a webhook schema) marks nullable.
NULLABLE = frozenset({"body", "requested_reviewers", "requested_teams", "assignees", "assignee",
                      "milestone", "labels", "description", "closed_at", "merged_at",
                      "active_lock_reason", "auto_merge", "user"})  # fmt: skip
# Always present, as GitHub sends them: nothing assigned, no milestone, not closed.
UNSET: dict[str, Json] = {"assignee": None, "assignees": [], "milestone": None, "closed_at": None,
         "active_lock_reason": None}  # fmt: skip


def with_nulls(data: Json) -> Json:
    """`data` with null for every nullable field that has no value ([], "", or null)."""
    if isinstance(data, list):
        return [with_nulls(item) for item in data]
    if isinstance(data, dict):
        return {key: None if key in NULLABLE and value in ("", [], None) else with_nulls(value)
                for key, value in data.items()}  # fmt: skip
    return data


def num(name: str) -> int:
    """A stable numeric id for a name (hash() is salted per process)."""
    return zlib.crc32(name.encode()) % 10**8


def user_json(d: GitHubData, login: str) -> Json:
    return {
        "login": login,
        "id": num(login),
        "node_id": f"U_{login}",
        "type": d.users.get(login, "User"),
        "site_admin": False,
        "url": f"{d.url}/users/{urllib.parse.quote(login)}",
        "html_url": f"{d.server_url}/{login}",
    }


def repo_json(d: GitHubData, repo: Repo) -> Json:
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


def labels_json(d: GitHubData, names: list[str]) -> Json:
    base = f"{d.url}/repos/{d.repo.full_name}/labels"
    return [{"id": num(n), "name": n, "color": "ededed", "url": f"{base}/{n}", "description": ""}
            for n in names]  # fmt: skip


def issue_json(d: GitHubData, issue: Issue) -> Json:
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


def comment_json(d: GitHubData, comment: Comment) -> Json:
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


def branch_json(d: GitHubData, ref: str, sha: str, repo_name: str | None) -> Json:
    repo = d.repos.get(repo_name or "")
    owner = (repo_name or "ghost/x").split("/")[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(d, owner),
        "repo": repo_json(d, repo) if repo else None,
    }


def pull_json(d: GitHubData, issue: Issue) -> Json:
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


def page(d: GitHubData, path: str, query: dict[str, str], items: list[Json]) -> Reply:
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
