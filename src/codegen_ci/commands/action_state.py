"""What one run of `codegen-ci action` keeps, and how it ends.

`ActionState` holds the run's state (settings, GitHub client, status comment, report, output
folder, what was published), builds the client and the comment on demand, and ends the run:
skipped (exit 0), finished (report, job summary, outputs; exit 0 or 1) or failed (the error on
the status comment; exit 2 or 3). `action.ActionRun` adds the sequence from event to result.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from codegen_ci.commands import action_pr_loop as loop
from codegen_ci.errors import CodegenError
from codegen_ci.progress import Progress
from codegen_ci.publish.actions import ActionsIO, report_path, write_outputs
from codegen_ci.publish.flow import Published
from codegen_ci.publish.github import GitHubPublisher, GitHubTarget
from codegen_ci.publish.markdown import code_block, escape_md
from codegen_ci.publish.report_text import summary_markdown
from codegen_ci.publish.run_history import render_history
from codegen_ci.publish.status import StatusComment, StatusProgress
from codegen_ci.report import Report
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.workspace import git

EXIT_FAILED = 1


class ActionState:
    """One invocation's state, its GitHub client and comment, and the endings."""

    def __init__(self, io: ActionsIO) -> None:
        self.io = io
        self.settings = ActionSettings()
        self.publisher: GitHubPublisher | None = None
        self.status: StatusComment | None = None
        self.report: Report | None = None
        self.out: Path | None = None
        self.published = Published()
        self.loop = loop.PullLoop()
        self.ignored: tuple[str, ...] = ()  # settings the event may not set

    def github(self) -> GitHubPublisher:
        if self.publisher is None:
            target = GitHubTarget.from_env(os.environ)
            backoff = float(os.environ.get("CODEGEN_RETRY_BACKOFF") or "1.0")
            self.publisher = GitHubPublisher(target, backoff=backoff)
        return self.publisher

    def status_comment(self, issue_number: int | None) -> StatusComment:
        assert issue_number is not None
        self.status = StatusComment(self.github(), issue_number, self.settings.run_url,
                                    self.io.warning)  # fmt: skip
        self.status.footer = render_history(self.loop.history)
        return self.status

    def progress(self) -> Progress:
        if self.status is None:
            return Progress(stream=sys.stdout)
        return StatusProgress(self.status, stream=sys.stdout)

    def output_dir(self, root: Path, run_id: str) -> Path:
        s = self.settings
        if s.output_dir:
            return ((s.workspace or Path.cwd()) / s.output_dir).resolve()
        if s.workspace == Path("/github/workspace"):  # RUNNER_TEMP is not mounted in Docker
            return git.common_dir(root) / "codegen" / "runs" / run_id
        return s.default_output_dir or git.common_dir(root) / "codegen" / "runs" / run_id

    # -- endings --------------------------------------------------------------------------

    def skip(self, reason: str) -> int:
        self.io.notice(f"codegen-ci skipped this event: {reason}")
        self.io.append_summary(f"## codegen-ci skipped\n\n{escape_md(reason, 2000)}\n")
        self._outputs("skipped")
        return 0

    def finish(self) -> int:
        report = self.report
        assert report is not None and self.out is not None
        report.pr_url = self.published.pr_url or None
        report.branch = self.published.branch or report.branch
        report.write(self.out)
        summary = summary_markdown(report, run_url=self.settings.run_url)
        if self.published.compare_url:
            summary += f"\nOpen the pull request by hand: {self.published.compare_url}\n"
        self.io.append_summary(summary)
        if report.status != "success":
            self.io.error(f"codegen-ci {report.status}: {report.reason or report.error or ''}")
        self._outputs(report.status)
        return 0 if report.status == "success" else EXIT_FAILED

    def fail(self, exc: CodegenError) -> int:
        self.io.error(exc.message, title="codegen-ci")
        if self.status is not None:
            self.status.post(f"⚠️ **codegen-ci** stopped with an error:\n\n"
                             f"{code_block(exc.message)}\n{self.status.run_link()}")  # fmt: skip
        if self.report is None and self.out is not None and (self.out / "report.json").exists():
            self.report = Report.read(self.out)
        if self.report is not None:
            self.io.append_summary(summary_markdown(self.report, run_url=self.settings.run_url))
        self._outputs("error")
        return exc.exit_code

    def _outputs(self, status: str) -> None:
        path = report_path(self.out, self.settings.workspace)
        write_outputs(self.io, status, self.report, pr_url=self.published.pr_url,
                      branch=self.published.branch, report_path=path)  # fmt: skip
