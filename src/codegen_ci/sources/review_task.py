"""Review events -> a task on the pull request's own branch.

`pull_request_review_comment` (created) whose text starts with the trigger phrase: that comment
with its file, line range, diff hunk and the rest of its thread. `pull_request_review`
(submitted) whose body starts with the phrase: every comment of that review, in one run.

The payload settles the trigger and who asked; the thread and the review's comments come from
the API afterwards (`review_thread_task`, `whole_review_task`), so a reply written after the
delivery is seen. The requester's own words are the instruction; everybody else's comments
and the code are quoted as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codegen_ci.security.untrusted import clean_untrusted, fence
from codegen_ci.sources.event_task import EventTask, Ignore, TriggerRules
from codegen_ci.sources.github_event import MARKER, _is_self, _refuse_bot, _short
from codegen_ci.sources.markdown import find_trigger
from codegen_ci.sources.payload_fields import field, int_field, user_of

Comment = Mapping[str, Any]


def review_comment_event(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    if payload.get("action") != "created":
        return Ignore(f"review comment {payload.get('action')}: only a new one triggers a run")
    comment = field(payload, "comment")
    comment_id = int_field(payload, "comment", "id")
    return _review_event(payload, rules, comment, "review_comment", comment_id)


def review_event(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    if payload.get("action") != "submitted":
        return Ignore(f"review {payload.get('action')}: only a submitted review triggers a run")
    review = field(payload, "review")
    return _review_event(payload, rules, review, "review", int_field(payload, "review", "id"))


def _review_event(payload: Mapping[str, Any], rules: TriggerRules, item: Mapping[str, Any],
                  kind: str, item_id: int) -> EventTask | Ignore:  # fmt: skip
    actor, actor_type = user_of(item.get("user"))
    body = clean_untrusted(str(item.get("body") or ""))
    if MARKER in str(item.get("body") or "") or _is_self(actor, rules):
        return Ignore("written by codegen-ci itself")
    instruction = find_trigger(body, rules.phrase)
    if instruction is None:
        return Ignore(f"no line starts with the trigger phrase {rules.phrase!r}")
    if refusal := _refuse_bot(actor, actor_type, rules):
        return refusal
    number = int_field(payload, "pull_request", "number")
    title = clean_untrusted(str(payload["pull_request"].get("title") or ""))
    return EventTask(
        kind="review_comment" if kind == "review_comment" else "review",
        task=instruction, title=_short(instruction.splitlines()[0] if instruction else title),
        issue_number=number, pr_number=number, comment_id=None, actor=actor,
        actor_type=actor_type, spec_overrides={}, spec_path=None, delivery_key=f"pr-{number}",
        review_comment_id=item_id if kind == "review_comment" else None,
        review_id=item_id if kind == "review" else None,
    )  # fmt: skip


def thread_of(comment_id: int, comments: Sequence[Comment]) -> list[Comment]:
    """The review thread `comment_id` belongs to, oldest first (replies name the root)."""
    by_id = {int(c["id"]): c for c in comments}
    start = by_id.get(comment_id, {})
    root = int(start.get("in_reply_to_id") or comment_id)
    found = [c for c in comments if int(c["id"]) == root or c.get("in_reply_to_id") == root]
    return sorted(found, key=lambda c: int(c["id"]))


def review_thread_task(task: EventTask, comments: Sequence[Comment], where: str) -> str:
    """The task for one review comment: instruction, then where and its thread as data."""
    assert task.review_comment_id is not None
    thread = thread_of(task.review_comment_id, comments)
    asked = next((c for c in thread if int(c["id"]) == task.review_comment_id), None)
    instruction = task.task or "Do what this review thread asks."
    parts = [instruction, f"This request was made in a review comment on {where}."]
    if asked is not None:
        parts.append(_location(asked))
    others = [c for c in thread if int(c["id"]) != task.review_comment_id]
    if others:
        parts.append(fence("the rest of the review thread, oldest first", _quote(others)))
    return "\n\n".join(parts)


def whole_review_task(task: EventTask, review_comments: Sequence[Comment],
                      comments: Sequence[Comment], where: str) -> str:  # fmt: skip
    """The task for a submitted review: its body, then each of its comments in turn."""
    instruction = task.task or "Address every comment of this review."
    parts = [instruction, f"This review of {where} has {len(review_comments)} comment(s); "
             "address each of them in this one change."]  # fmt: skip
    for n, comment in enumerate(review_comments, start=1):
        body = clean_untrusted(str(comment.get("body") or "")).strip()
        parts.append(f"### Review comment {n}\n\n{body}\n\n{_location(comment)}")
        others = [c for c in thread_of(int(comment["id"]), comments)
                  if int(c["id"]) != int(comment["id"])]  # fmt: skip
        if others:
            parts.append(fence(f"the rest of the thread of comment {n}", _quote(others)))
    return "\n\n".join(parts)


def _location(comment: Comment) -> str:
    path = str(comment.get("path") or "?")
    end = comment.get("line") or comment.get("original_line")
    start = comment.get("start_line") or comment.get("original_start_line")
    lines = f"lines {start}-{end}" if start and start != end else f"line {end}"
    text = f"File {path}, {lines}" if end else f"File {path}"
    hunk = str(comment.get("diff_hunk") or "")
    return text + (":\n" + fence(f"diff hunk of {path}", hunk) if hunk else ".")


def _quote(comments: Sequence[Comment]) -> str:
    return "\n\n".join(
        f"@{user_of(c.get('user'))[0]}: {clean_untrusted(str(c.get('body') or '')).strip()}"
        for c in comments
    )
