"""Review threads through the REST API: a pull request's review comments, one review's
comments, a reaction on a review comment, and the tool's reply in a thread.

A reply carries a hidden marker naming the comment it answers, so a re-run or a re-delivered
event edits its earlier reply instead of adding another. Only a reply the tool's own identity
wrote counts, with the marker where the tool puts it (first): anyone can paste the marker into
a comment of theirs, and the tool must never edit someone else's words.
"""

from __future__ import annotations

from typing import Any

from codegen_ci.publish.github import GitHubPublisher
from codegen_ci.publish.github_rest import rest_json, rest_list
from codegen_ci.publish.neutral import with_markers


def reply_marker(comment_id: int) -> str:
    return f"<!-- codegen-ci:reply comment={comment_id} -->"


def pull_review_comments(gh: GitHubPublisher, number: int) -> list[dict[str, Any]]:
    path = f"/repos/{gh.target.repository}/pulls/{number}/comments"
    return rest_list(gh, f"reading the review comments of #{number}", path)


def review_comments(gh: GitHubPublisher, number: int, review_id: int) -> list[dict[str, Any]]:
    path = f"/repos/{gh.target.repository}/pulls/{number}/reviews/{review_id}/comments"
    return rest_list(gh, f"reading the comments of review {review_id}", path)


def react_to_review_comment(gh: GitHubPublisher, comment_id: int, content: str = "eyes") -> None:
    path = f"/repos/{gh.target.repository}/pulls/comments/{comment_id}/reactions"
    rest_json(gh, f"reacting to review comment {comment_id}", "POST", path, {"content": content})


def reply_in_thread(gh: GitHubPublisher, number: int, comment_id: int, body: str,
                    existing: list[dict[str, Any]]) -> None:  # fmt: skip
    """Reply to review comment `comment_id`, or edit the reply an earlier run left there
    (`existing`: the pull request's review comments, read before the run)."""
    marker = reply_marker(comment_id)
    text = with_markers(gh.clean(body), head=[marker])
    repo = gh.target.repository
    earlier = next((c for c in existing if _own_reply(gh, c, marker)), None)
    if earlier is not None:
        path = f"/repos/{repo}/pulls/comments/{earlier['id']}"
        rest_json(gh, "editing the reply in a review thread", "PATCH", path, {"body": text})
        return
    path = f"/repos/{repo}/pulls/{number}/comments/{comment_id}/replies"
    rest_json(gh, f"replying to review comment {comment_id}", "POST", path, {"body": text})


def _own_reply(gh: GitHubPublisher, comment: dict[str, Any], marker: str) -> bool:
    author = str((comment.get("user") or {}).get("login") or "")
    body = str(comment.get("body") or "")
    return body.startswith(marker + "\n") and author.casefold() == gh.own_login().casefold()
