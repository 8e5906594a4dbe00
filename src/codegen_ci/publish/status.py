"""The one status comment a run keeps on its issue or pull request, and the progress hooks
that edit it while the run goes on.

The comment carries a hidden marker naming the issue, so a re-run or a re-delivered event
edits the same comment instead of adding one. Failing to update it never fails the run: the
comment is a courtesy, the outputs and the job summary are the record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from codegen_ci.errors import GitHubError
from codegen_ci.progress import Progress
from codegen_ci.publish.forge import Forge
from codegen_ci.publish.markdown import code_span, escape_md
from codegen_ci.report import CommandResult, Round

UPDATE_EVERY_S = 20.0  # GitHub's secondary limits dislike bursts of edits


def status_marker(issue_number: int) -> str:
    return f"<!-- codegen-ci:status issue={issue_number} -->"


class StatusComment:
    def __init__(
        self,
        publisher: Forge,
        issue_number: int,
        run_url: str | None,
        warn: Callable[[str], None],
    ) -> None:
        self.publisher = publisher
        self.issue_number = issue_number
        self.run_url = run_url
        self.warn = warn
        self.comment_id: int | None = None
        self.footer = ""  # kept under every text posted: the run history (run_history)
        self.hidden = ""  # the history's records, a marker put last (run_history)

    def post(self, text: str) -> None:
        """Create or edit the status comment; a failure is a warning."""
        try:
            self.comment_id = self.publisher.upsert_status_comment(
                self.issue_number,
                text + self.footer,
                status_marker(self.issue_number),
                hidden=self.hidden,
            )
        except GitHubError as exc:
            self.warn(f"could not update the status comment on #{self.issue_number}: {exc}")

    def run_link(self) -> str:
        return f" ([workflow run]({self.run_url}))" if self.run_url else ""

    def working(self, what: str, *, notes: tuple[str, ...] = ()) -> None:
        """`notes`: what the run ignored from the event (settings it may not set)."""
        text = f"👀 **codegen-ci** is working on {what}…{self.run_link()}"
        self.post(text + "".join(f"\n\n⚠️ {escape_md(note, 600)}" for note in notes))


class StatusProgress(Progress):
    """Plain progress lines, plus a throttled edit of the status comment as rounds pass."""

    def __init__(
        self,
        status: StatusComment,
        *,
        stream: TextIO | None = None,
        every_s: float = UPDATE_EVERY_S,
    ) -> None:
        super().__init__(stream)
        self.status_comment = status
        self.every_s = every_s
        self.max_iterations = 0
        self.last_tests = ""
        self.refused = ""  # the last round's refusal: the tests the change did not keep
        self._posted_at: float | None = None

    def round_started(self, iteration: int, max_iterations: int) -> None:
        super().round_started(iteration, max_iterations)
        self.max_iterations = max_iterations
        if iteration > 1:  # the previous round ended with failures: say so
            self._update()

    def command_finished(self, result: CommandResult) -> None:
        super().command_finished(result)
        if result.kind == "test":
            self.last_tests = f"tests {code_span(result.command)} → {result.state}"

    def round_finished(self, rnd: Round) -> None:
        super().round_finished(rnd)
        removed = [f for f in rnd.failures if f.kind == "removed"]
        names = ", ".join(code_span(f.id) for f in removed[:5])
        more = f" and {len(removed) - 5} more" if len(removed) > 5 else ""
        self.refused = f"refused, existing test(s) not kept: {names}{more}" if removed else ""

    def _update(self) -> None:
        now = time.monotonic()
        if self._posted_at is not None and now - self._posted_at < self.every_s:
            return
        self._posted_at = now
        done = f" Round {self.round - 1} failed ({self.last_tests})." if self.last_tests else ""
        if self.refused:  # its commands may all have passed
            done = f" Round {self.round - 1} {self.refused}."
        self.status_comment.post(
            f"⏳ **codegen-ci** is on round {self.round} of {self.max_iterations}.{done}"
            f"{self.status_comment.run_link()}"
        )
