"""The full task of a pull request event, from what the API returns after it: the review
thread of a review comment, every comment of a submitted review, the failing tests of a failed
CI run.

The payload settled the trigger and who asked (`events`); the thread and the review's comments
are read afterwards, so a reply written after the delivery is seen. The requester's own words
are the instruction; everybody else's comments, the code and CI output (written by the code
under test) reach the model fenced as data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codegen_ci.security.untrusted import Untrusted, clean_untrusted, fence
from codegen_ci.sources.events import CiRun, ReviewCommentTask, ReviewTask, user_of
from codegen_ci.spec.action_inputs import bot_key

MAX_FAILURES = 30
MAX_MESSAGE = 1500

Comment = Mapping[str, Any]


@dataclass(frozen=True)
class CiFailures:
    """What a failed run left to go on: failing tests from its JUnit artifacts, or else the
    tails of its failed jobs' logs."""

    tests: tuple[tuple[Untrusted, Untrusted], ...] = ()  # (test id, message)
    logs: tuple[tuple[Untrusted, Untrusted], ...] = ()  # (job name, log tail)

    def signature(self) -> str:
        """A hash of the failing tests (or jobs), to tell a new CI failure from the same."""
        names = [test for test, _ in self.tests] or [job for job, _ in self.logs]
        keys = sorted(name.raw_for("matching") for name in names)
        return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]

    def summary(self) -> Untrusted:
        names = [t for t, _ in self.tests] or [Untrusted("job ") + job for job, _ in self.logs]
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        return Untrusted.join(", ", names[:5]) + Untrusted(more)


def ci_task_text(ci: CiRun, failures: CiFailures, where: str) -> str:
    # The workflow's name and the branch's are whoever pushed the branch's words: data.
    run = Untrusted("workflow: ") + ci.name + Untrusted("\nbranch: ") + ci.head_branch
    parts = [
        f"The CI workflow failed on {where} (commit {ci.head_sha[:12]}). Make the failing "
        "checks pass with the smallest correct change to the code; do not weaken or skip the "
        "tests. The workflow and the branch:\n" + fence("the failed CI run", run),
    ]
    if failures.tests:
        listed = Untrusted.join(
            "\n\n",
            (
                (test + Untrusted("\n") + message.map(lambda m: m[:MAX_MESSAGE])).map(str.strip)
                for test, message in failures.tests[:MAX_FAILURES]
            ),
        )
        more = len(failures.tests) - MAX_FAILURES
        parts.append(
            f"Failing tests from the run's JUnit reports ({len(failures.tests)}):\n"
            + fence("failing tests reported by CI", listed)
            + (f"\n({more} more not shown)" if more > 0 else "")
        )
    for n, (job, tail) in enumerate(failures.logs, start=1):
        parts.append(
            f"The run left no JUnit report; failed job {n}, its name and the end of its log:\n"
            + fence(f"CI job {n}: name and log tail", job + Untrusted("\n\n") + tail)
        )
    return "\n\n".join(parts)


def branch_prefixes(git_branch: str) -> tuple[str, ...]:
    """The prefixes of branches codegen-ci pushes: `codegen/`, and the spec's own."""
    own = git_branch.split("{", 1)[0]
    return tuple(dict.fromkeys(p for p in ("codegen/", own) if p and p.endswith("/")))


def thread_of(comment_id: int, comments: Sequence[Comment]) -> list[Comment]:
    """The review thread `comment_id` belongs to, oldest first (replies name the root)."""
    by_id = {int(c["id"]): c for c in comments}
    start = by_id.get(comment_id, {})
    root = int(start.get("in_reply_to_id") or comment_id)
    found = [c for c in comments if int(c["id"]) == root or c.get("in_reply_to_id") == root]
    return sorted(found, key=lambda c: int(c["id"]))


def with_title(task_text: str, where: str, title: Untrusted) -> str:
    """A pull request's task followed by its title, as data (anyone who can open one wrote it)."""
    if not title:
        return task_text
    title = title.map(clean_untrusted)
    return f"{task_text}\n\nThe title of {where}:\n" + fence(f"title of {where}", title)


def comment_body(comment: Comment) -> Untrusted:
    """A review comment's words as a reader of the pull request sees them (hidden HTML and
    invisible characters removed): its author's, data. The one reader of a comment's body."""
    return Untrusted(str(comment.get("body") or "")).map(lambda body: clean_untrusted(body).strip())


def review_thread_task(task: ReviewCommentTask, comments: Sequence[Comment], where: str) -> str:
    """The task for one review comment: instruction, then where and its thread as data."""
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


def whole_review_task(
    task: ReviewTask, review_comments: Sequence[Comment], comments: Sequence[Comment], where: str
) -> str:
    """The task for a submitted review: its body, then each of its comments in turn."""
    instruction = task.task or "Address every comment of this review."
    parts = [
        instruction,
        f"This review of {where} has {len(review_comments)} comment(s); "
        "address each of them in this one change.",
    ]
    for n, comment in enumerate(review_comments, start=1):
        body = _requesters_words(task, comment)
        if body is None:  # not the requester's: data, as the rest of its thread is
            body = fence(f"review comment {n}", comment_body(comment)).rstrip("\n")
        parts.append(f"### Review comment {n}\n\n{body}\n\n{_location(comment)}")
        others = [
            c for c in thread_of(int(comment["id"]), comments) if int(c["id"]) != int(comment["id"])
        ]
        if others:
            parts.append(fence(f"the rest of the thread of comment {n}", _quote(others)))
    return "\n\n".join(parts)


def _requesters_words(task: ReviewTask, comment: Comment) -> str | None:
    """A comment of the review, when the requester wrote it: their instruction, as the
    review's own trigger line is. None for anyone else's words."""
    author, _ = user_of(comment.get("user"))
    if not author or bot_key(author) != bot_key(task.actor):
        return None
    return comment_body(comment).raw_for("instruction")


def _location(comment: Comment) -> str:
    """Where the comment points and the diff hunk it is on, fenced: the path is the pull
    request's as much as the hunk is (a file's name may hold a newline or a forged fence)."""
    path = str(comment.get("path") or "?")
    end = comment.get("line") or comment.get("original_line")
    start = comment.get("start_line") or comment.get("original_start_line")
    lines = f"lines {start}-{end}" if start and start != end else f"line {end}"
    text = f"File {path}, {lines}" if end else f"File {path}"
    hunk = str(comment.get("diff_hunk") or "")
    where = Untrusted(text + (":\n" + hunk if hunk else "")).map(clean_untrusted)
    return fence("the file, lines and diff hunk the comment is on", where)


def _quote(comments: Sequence[Comment]) -> Untrusted:
    return Untrusted.join(
        "\n\n", (Untrusted(f"@{user_of(c.get('user'))[0]}: ") + comment_body(c) for c in comments)
    )
