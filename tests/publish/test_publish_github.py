"""GitHubPublisher, driving the real PyGithub client against the GitHub double over HTTP."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from codegen_ci.errors import GitHubError, InputError
from codegen_ci.publish.github import (
    PR_MARKER,
    GitHubPublisher,
    GitHubTarget,
    PullRequestsNotPermitted,
)
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.testing.github_double import GitHubDouble

SERVER = "https://github.example"
MARKER = "<!-- codegen-ci:status -->"


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble("octo-org/hello", server_url=SERVER, token="t0k") as double:
        yield double


def publisher(gh: GitHubDouble, **kwargs: Any) -> GitHubPublisher:
    target = GitHubTarget(
        api_url=gh.url, repository="octo-org/hello", token="t0k", server_url=SERVER
    )
    kwargs.setdefault("backoff", 0.0)
    return GitHubPublisher(target, **kwargs)


# -- reading ------------------------------------------------------------------------------


def test_default_branch_with_the_token_sent() -> None:
    with GitHubDouble(default_branch="trunk", api_prefix="/api/v3", token="t0k") as gh:
        assert publisher(gh).default_branch() == "trunk"
        assert gh.requests[-1].headers["authorization"] == "token t0k"


@pytest.mark.parametrize("role", ["admin", "maintain", "write", "triage", "read", "none"])
def test_permission_reports_the_role(gh: GitHubDouble, role: str) -> None:
    gh.add_user("alice", role=role)
    assert publisher(gh).permission("alice") == role


def test_permission_of_a_custom_role_falls_back_to_its_base_permission(gh: GitHubDouble) -> None:
    gh.add_user("sec", role="security-manager")
    assert publisher(gh).permission("sec") == "read"


def test_permission_lookup_failure_is_a_github_error(gh: GitHubDouble) -> None:
    gh.inject("GET", "/repos/*/collaborators/*/permission", 500, times=None)
    with pytest.raises(GitHubError, match=r"permission of alice failed \(3 attempts\): HTTP 500"):
        publisher(gh, retries=2).permission("alice")
    assert len(gh.requests) == 3


def test_unknown_user_is_not_retried(gh: GitHubDouble) -> None:
    with pytest.raises(GitHubError, match=r"\(1 attempt\): HTTP 404: ghost is not a user"):
        publisher(gh).permission("ghost")
    assert len(gh.requests) == 1


def test_user_type_tells_bots_from_users(gh: GitHubDouble) -> None:
    gh.add_user("dependabot[bot]", "Bot")
    gh.add_user("alice")
    pub = publisher(gh)
    assert (pub.user_type("dependabot[bot]"), pub.user_type("alice")) == ("Bot", "User")


def test_get_issue(gh: GitHubDouble) -> None:
    issue = gh.add_issue("Reset patch", "bump_minor must reset patch", user="alice")
    issue.labels.append("codegen")
    gh.add_pull("codegen/x")
    pub = publisher(gh)
    info = pub.get_issue(1)
    assert (info.number, info.title, info.body, info.author) == (
        1,
        Untrusted("Reset patch"),  # whoever opened the issue wrote it
        Untrusted("bump_minor must reset patch"),
        "alice",
    )
    assert info.html_url == f"{SERVER}/octo-org/hello/issues/1"
    assert info.labels == ("codegen",)
    assert not info.is_pull_request
    assert pub.get_issue(2).is_pull_request


def test_get_pull_of_own_branch_and_of_forks(gh: GitHubDouble) -> None:
    gh.add_fork("contrib/hello")
    gh.add_pull("codegen/x")
    gh.add_pull("contrib:feature")
    gh.add_pull("gone:feature")  # a fork deleted since
    pub = publisher(gh)
    own = pub.get_pull(1)
    assert (own.head_ref, own.head_repo, own.base_ref, own.is_fork) == (
        "codegen/x",
        "octo-org/hello",
        "main",
        False,
    )
    assert own.html_url == f"{SERVER}/octo-org/hello/pull/1"
    fork = pub.get_pull(2)
    assert (fork.head_repo, fork.is_fork) == ("contrib/hello", True)
    assert (pub.get_pull(3).head_repo, pub.get_pull(3).is_fork) == (None, True)


def test_find_open_pr(gh: GitHubDouble) -> None:
    gh.add_pull("codegen/old").state = "closed"
    gh.add_pull("codegen/x")
    pub = publisher(gh)
    found = pub.find_open_pr("codegen/x")
    assert found is not None and found.number == 2
    assert pub.find_open_pr("codegen/old") is None
    assert gh.writes() == []


# -- writing ------------------------------------------------------------------------------


def test_react_to_a_comment_and_an_issue(gh: GitHubDouble) -> None:
    issue = gh.add_issue("Fix it")
    comment = gh.add_comment(1, "/codegen fix it")
    pub = publisher(gh)
    pub.react(comment.id)
    pub.react(comment.id)  # a re-delivered event
    pub.react_to_issue(1, "rocket")
    assert (comment.reactions, issue.reactions) == (["eyes"], ["rocket"])


def test_comment_is_redacted_and_returns_its_url(gh: GitHubDouble) -> None:
    gh.add_issue("Fix it")
    secret = f"sk-secret-{uuid.uuid4().hex}"  # registered like the action's own secrets
    REDACTOR.add_secret(secret)
    pub = publisher(gh)
    url = pub.comment(1, f"leaked {secret} here")
    (comment,) = gh.comments.values()
    assert comment.body == "leaked *** here"
    assert url == f"{SERVER}/octo-org/hello/issues/1#issuecomment-{comment.id}"
    assert all("sk-secret" not in str(r.body) for r in gh.requests)


def test_status_comment_is_created_once_then_edited(gh: GitHubDouble) -> None:
    gh.add_issue("Fix it")
    for n in range(40):  # the status comment lands on the second page
        gh.add_comment(1, f"chatter {n}")
    pub = publisher(gh)
    first = pub.upsert_status_comment(1, "Running…", MARKER)
    second = pub.upsert_status_comment(1, "Failed: 2 tests", MARKER)
    assert first == second
    status = [c for c in gh.comments.values() if MARKER in c.body]
    assert [c.body for c in status] == [f"{MARKER}\nFailed: 2 tests"]
    writes = len(gh.writes())
    pub.upsert_status_comment(1, "Failed: 2 tests", MARKER)
    assert len(gh.writes()) == writes  # an unchanged status is not rewritten


def test_open_pr_creates_with_labels_and_reviewers(gh: GitHubDouble) -> None:
    gh.add_user("rev", role="write")
    pub = publisher(gh)
    pull = pub.open_or_update_pr(
        head="codegen/reset-patch",
        base="main",
        title="Reset patch",
        body="Closes #1",
        draft=True,
        labels=["codegen"],
        reviewers=["rev", "octo-org/core"],
    )
    (issue,) = gh.pulls()
    assert pull.number == issue.number
    assert pull.html_url == f"{SERVER}/octo-org/hello/pull/{issue.number}"
    assert (pull.head_ref, pull.base_ref, pull.draft, pull.is_fork) == (
        "codegen/reset-patch",
        "main",
        True,
        False,
    )
    assert issue.labels == ["codegen"]
    assert issue.pull is not None
    assert (issue.pull.reviewers, issue.pull.team_reviewers) == (["rev"], ["core"])


def test_an_untrusted_title_is_posted_neutralised(gh: GitHubDouble) -> None:
    title = Untrusted("Fix \u202eevil\u202c for @acme/security-team")
    publisher(gh).open_or_update_pr(head="codegen/x", base="main", title=title, body="b")
    (issue,) = gh.pulls()
    assert issue.title == "Fix [U+202E]evil[U+202C] for @\u200dacme/security-team"


def test_open_pr_twice_updates_the_same_pr(gh: GitHubDouble) -> None:
    pub = publisher(gh)
    for title, body in (("First", "one"), ("Second", "two")):
        pull = pub.open_or_update_pr(
            head="codegen/x", base="main", title=title, body=body, labels=["codegen"]
        )
        assert (pull.number, pull.title) == (1, Untrusted(title))
    (issue,) = gh.pulls()
    assert (issue.title, issue.body) == ("Second", f"{PR_MARKER}\ntwo")
    creations = [
        r for r in gh.requests if (r.method, r.path) == ("POST", "/repos/octo-org/hello/pulls")
    ]
    assert len(creations) == 1
    assert issue.labels == ["codegen"]


def test_open_pr_adopts_the_pr_github_says_already_exists(gh: GitHubDouble) -> None:
    existing = gh.add_pull("codegen/x", title="Old title")
    # The lookup misses it (a concurrent run opened it a moment ago); creation then says 422.
    gh.inject("GET", "/repos/octo-org/hello/pulls", 200, body=[])
    pull = publisher(gh).open_or_update_pr(
        head="codegen/x", base="main", title="New title", body="b", draft=False
    )
    assert pull.number == existing.number
    assert existing.title == "New title"
    assert len(gh.pulls()) == 1


def test_open_pr_forbidden_for_actions_carries_a_compare_link(gh: GitHubDouble) -> None:
    gh.forbid_pull_creation = True
    with pytest.raises(PullRequestsNotPermitted) as caught:
        publisher(gh).open_or_update_pr(
            head="codegen/x", base="main", title="T", body="B", draft=False
        )
    assert caught.value.compare_url == f"{SERVER}/octo-org/hello/compare/main...codegen/x?expand=1"
    assert caught.value.exit_code == 3
    assert isinstance(caught.value, GitHubError)
    assert caught.value.compare_url in caught.value.message
    assert gh.pulls() == []


def test_reviewer_who_is_no_collaborator_does_not_sink_the_pr(
    gh: GitHubDouble, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        pull = publisher(gh).open_or_update_pr(
            head="codegen/x", base="main", title="T", body="B", reviewers=["stranger"]
        )
    assert pull.number == 1
    assert "stranger" in caplog.text and "collaborators" in caplog.text


def test_pr_title_and_body_are_redacted(gh: GitHubDouble) -> None:
    secret = f"hunter2-{uuid.uuid4().hex}"
    REDACTOR.add_secret(secret)
    pub = publisher(gh)
    pub.open_or_update_pr(head="codegen/x", base="main", title=secret, body=f"pw {secret}")
    (issue,) = gh.pulls()
    assert (issue.title, issue.body) == ("***", f"{PR_MARKER}\npw ***")
    assert all("hunter2" not in str(r.body) for r in gh.requests)


# -- retries ------------------------------------------------------------------------------


def test_transient_5xx_are_retried(gh: GitHubDouble) -> None:
    gh.inject("GET", "/repos/octo-org/hello", 502, times=2)
    assert publisher(gh).default_branch() == "main"
    assert len(gh.requests) == 3


def test_html_gateway_errors_are_retried(gh: GitHubDouble) -> None:
    gh.inject("GET", "/repos/octo-org/hello", 502, body="<html>502 Bad Gateway</html>")
    assert publisher(gh).default_branch() == "main"


def test_persistent_5xx_gives_up_with_a_clear_error(gh: GitHubDouble) -> None:
    gh.inject("POST", "/repos/*/pulls", 500, {"message": "Server Error"}, times=None)
    with pytest.raises(GitHubError) as caught:
        publisher(gh, retries=3).open_or_update_pr(
            head="codegen/x", base="main", title="T", body="B"
        )
    assert caught.value.message == (
        "GitHub API: opening a pull request from codegen/x into main failed (4 attempts): "
        "HTTP 500: Server Error"
    )
    assert caught.value.exit_code == 3


def test_secondary_rate_limit_honours_retry_after(gh: GitHubDouble) -> None:
    gh.add_issue("Fix it")
    gh.inject_secondary_rate_limit("POST", "/repos/*/issues/1/comments", retry_after=1)
    started = time.monotonic()
    publisher(gh).comment(1, "hello")
    assert time.monotonic() - started >= 0.9
    assert [c.body for c in gh.comments.values()] == ["hello"]


def test_a_wait_longer_than_max_wait_fails_at_once(gh: GitHubDouble) -> None:
    gh.inject_secondary_rate_limit("GET", "/repos/octo-org/hello", retry_after=3600)
    with pytest.raises(GitHubError, match=r"\(1 attempt\): HTTP 403: You have exceeded"):
        publisher(gh, max_wait=5).default_branch()


def test_primary_rate_limit_waits_for_the_reset_or_fails_fast(gh: GitHubDouble) -> None:
    body = {"message": "API rate limit exceeded for installation ID 1."}
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) - 5)}
    gh.inject("GET", "/repos/octo-org/hello", 403, body, reset)
    assert publisher(gh).default_branch() == "main"  # the reset has passed: one short wait
    later = {**reset, "x-ratelimit-reset": str(int(time.time()) + 3600)}
    gh.inject("GET", "/repos/octo-org/hello", 403, body, later)
    with pytest.raises(GitHubError, match=r"\(1 attempt\): HTTP 403: API rate limit exceeded"):
        publisher(gh).default_branch()


def test_unreachable_api_is_a_github_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = GitHubTarget(f"http://127.0.0.1:{port}", "octo-org/hello", "t0k")
    with pytest.raises(GitHubError, match=r"\(2 attempts\): cannot reach http://127.0.0.1"):
        GitHubPublisher(target, retries=1, backoff=0).default_branch()


# -- target -------------------------------------------------------------------------------


def test_target_from_the_actions_environment() -> None:
    env = {
        "GITHUB_API_URL": "https://ghe.example/api/v3",
        "GITHUB_SERVER_URL": "https://ghe.example",
        "GITHUB_REPOSITORY": "octo-org/hello",
        "GITHUB_RUN_ID": "42",
        "GITHUB_TOKEN": "from-env",
        "INPUT_GITHUB-TOKEN": "from-input",
    }
    target = GitHubTarget.from_env(env)
    assert (target.api_url, target.token) == ("https://ghe.example/api/v3", "from-input")
    assert target.run_url == "https://ghe.example/octo-org/hello/actions/runs/42"
    assert "from-input" not in repr(target)
    with pytest.raises(InputError, match="github-token"):
        GitHubTarget.from_env({"GITHUB_REPOSITORY": "octo-org/hello"})
