"""The GitHub double, spoken to over plain HTTP the way any client would."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from codegen_ci.testing.github_double import GitHubDouble


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble("octo-org/hello", token="t0k") as double:
        yield double


def call(
    gh: GitHubDouble, method: str, path: str, body: Any = None, token: str = "t0k"
) -> tuple[int, Any, dict[str, str]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(gh.url + path, data=data, method=method)
    request.add_header("Authorization", f"token {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = raw.decode()
        return error.code, payload, dict(error.headers)


def test_repository_shape(gh: GitHubDouble) -> None:
    status, repo, _ = call(gh, "GET", "/repos/octo-org/hello")
    assert status == 200
    assert repo["full_name"] == "octo-org/hello"
    assert repo["default_branch"] == "main"
    assert repo["fork"] is False
    assert repo["owner"]["login"] == "octo-org"
    assert repo["html_url"] == "https://github.com/octo-org/hello"


def test_unknown_route_and_bad_token_answer_like_github(gh: GitHubDouble) -> None:
    status, body, _ = call(gh, "GET", "/repos/octo-org/hello/nothing-here")
    assert (status, body["message"]) == (404, "Not Found")
    status, body, _ = call(gh, "GET", "/repos/octo-org/hello", token="wrong")
    assert (status, body["message"]) == (401, "Bad credentials")


def test_every_request_is_recorded_with_body_and_headers(gh: GitHubDouble) -> None:
    gh.add_issue("Fix it")
    call(gh, "GET", "/repos/octo-org/hello/issues/1")
    assert gh.writes() == []
    call(gh, "POST", "/repos/octo-org/hello/issues/1/comments", {"body": "hi"})
    (write,) = gh.writes()
    assert (write.method, write.path, write.body) == (
        "POST",
        "/repos/octo-org/hello/issues/1/comments",
        {"body": "hi"},
    )
    assert write.headers["authorization"] == "token t0k"


def test_comment_lists_paginate_with_link_headers(gh: GitHubDouble) -> None:
    gh.add_issue("Busy issue")
    for n in range(35):
        gh.add_comment(1, f"comment {n}")
    status, first, headers = call(gh, "GET", "/repos/octo-org/hello/issues/1/comments")
    assert (status, len(first)) == (200, 30)
    assert 'rel="next"' in headers["Link"] and 'rel="last"' in headers["Link"]
    _, second, headers = call(gh, "GET", "/repos/octo-org/hello/issues/1/comments?page=2")
    assert [c["body"] for c in second] == [f"comment {n}" for n in range(30, 35)]
    assert "Link" not in headers


def test_injected_faults_are_consumed_in_order(gh: GitHubDouble) -> None:
    gh.inject("GET", "/repos/*/hello", 502, times=2)
    codes = [call(gh, "GET", "/repos/octo-org/hello")[0] for _ in range(3)]
    assert codes == [502, 502, 200]


def test_fault_forever_and_secondary_rate_limit(gh: GitHubDouble) -> None:
    gh.inject_secondary_rate_limit("GET", "/users/*", retry_after=7)
    status, body, headers = call(gh, "GET", "/users/alice")
    assert status == 403
    assert body["message"].startswith("You have exceeded a secondary rate limit")
    assert headers["Retry-After"] == "7"
    gh.inject("GET", "/repos/octo-org/hello", 500, times=None)
    assert [call(gh, "GET", "/repos/octo-org/hello")[0] for _ in range(3)] == [500] * 3


def test_html_bodies_can_be_injected(gh: GitHubDouble) -> None:
    gh.inject("GET", "/repos/octo-org/hello", 502, body="<html>Bad gateway</html>")
    assert call(gh, "GET", "/repos/octo-org/hello")[:2] == (502, "<html>Bad gateway</html>")


def test_permission_reports_role_and_legacy_permission(gh: GitHubDouble) -> None:
    gh.add_user("maya", role="maintain")
    gh.add_user("nobody")
    _, body, _ = call(gh, "GET", "/repos/octo-org/hello/collaborators/maya/permission")
    assert (body["permission"], body["role_name"], body["user"]["login"]) == (
        "write",
        "maintain",
        "maya",
    )
    _, body, _ = call(gh, "GET", "/repos/octo-org/hello/collaborators/nobody/permission")
    assert body["permission"] == "none"
    status, _, _ = call(gh, "GET", "/repos/octo-org/hello/collaborators/ghost/permission")
    assert status == 404


def test_bot_users_are_found_by_quoted_login(gh: GitHubDouble) -> None:
    gh.add_user("renovate[bot]", "Bot")
    _, user, _ = call(gh, "GET", "/users/renovate%5Bbot%5D")
    assert (user["login"], user["type"]) == ("renovate[bot]", "Bot")


def test_creating_a_second_pull_for_a_head_fails_like_github(gh: GitHubDouble) -> None:
    new = {"title": "T", "head": "codegen/x", "base": "main", "body": "B"}
    status, pull, _ = call(gh, "POST", "/repos/octo-org/hello/pulls", new)
    assert status == 201
    assert pull["html_url"] == f"https://github.com/octo-org/hello/pull/{pull['number']}"
    assert pull["head"]["repo"]["full_name"] == "octo-org/hello"
    status, body, _ = call(gh, "POST", "/repos/octo-org/hello/pulls", new)
    assert status == 422
    assert body["message"] == "Validation Failed"
    assert body["errors"] == [
        {
            "resource": "PullRequest",
            "code": "custom",
            "message": "A pull request already exists for octo-org:codegen/x.",
        }
    ]


def test_pull_creation_can_be_forbidden_for_actions(gh: GitHubDouble) -> None:
    gh.forbid_pull_creation = True
    new = {"title": "T", "head": "codegen/x", "base": "main"}
    status, body, _ = call(gh, "POST", "/repos/octo-org/hello/pulls", new)
    assert status == 403
    assert body["message"] == "GitHub Actions is not permitted to create or approve pull requests."
    assert gh.pulls() == []


def test_pull_list_filters_by_head_base_and_state(gh: GitHubDouble) -> None:
    gh.add_fork("contrib/hello")
    gh.add_pull("codegen/a")
    gh.add_pull("contrib:feature")
    gh.add_pull("codegen/b", base="release").state = "closed"
    path = "/repos/octo-org/hello/pulls"
    assert [p["number"] for p in call(gh, "GET", path)[1]] == [1, 2]
    assert [p["number"] for p in call(gh, "GET", f"{path}?head=contrib:feature")[1]] == [2]
    assert [p["number"] for p in call(gh, "GET", f"{path}?state=all&base=release")[1]] == [3]
    fork_pull = call(gh, "GET", f"{path}/2")[1]
    assert fork_pull["head"]["repo"]["fork"] is True
    assert fork_pull["head"]["label"] == "contrib:feature"


def test_reactions_labels_and_reviewers_change_state(gh: GitHubDouble) -> None:
    gh.add_user("rev", role="write")
    issue = gh.add_pull("codegen/a")
    comment = gh.add_comment(issue.number, "/codegen please")
    base = "/repos/octo-org/hello"
    react = f"{base}/issues/comments/{comment.id}/reactions"
    assert call(gh, "POST", react, {"content": "eyes"})[0] == 201
    assert call(gh, "POST", react, {"content": "eyes"})[0] == 200  # a repeat is no new reaction
    assert call(gh, "POST", f"{base}/issues/1/reactions", {"content": "nope"})[0] == 422
    call(gh, "POST", f"{base}/issues/1/labels", {"labels": ["codegen"]})
    call(gh, "POST", f"{base}/pulls/1/requested_reviewers", {"reviewers": ["rev"]})
    assert comment.reactions == ["eyes"]
    assert issue.labels == ["codegen"]
    assert issue.pull is not None and issue.pull.reviewers == ["rev"]
    status, body, _ = call(gh, "POST", f"{base}/pulls/1/requested_reviewers", {"reviewers": ["x"]})
    assert status == 422 and "collaborators" in body["message"]


def test_issue_of_a_pull_request_carries_pull_request_key(gh: GitHubDouble) -> None:
    gh.add_issue("Plain")
    gh.add_pull("codegen/a")
    assert "pull_request" not in call(gh, "GET", "/repos/octo-org/hello/issues/1")[1]
    assert call(gh, "GET", "/repos/octo-org/hello/issues/2")[1]["pull_request"]["html_url"] == (
        "https://github.com/octo-org/hello/pull/2"
    )


def test_api_prefix_like_github_enterprise() -> None:
    with GitHubDouble(api_prefix="/api/v3") as gh:
        assert gh.url.endswith("/api/v3")
        assert call(gh, "GET", "/repos/octo-org/hello")[0] == 200
        assert gh.requests[0].path == "/repos/octo-org/hello"
