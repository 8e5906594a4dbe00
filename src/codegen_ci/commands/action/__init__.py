"""`codegen-ci action`: the entrypoint GitHub Actions runs.

event -> decide (task or ignore) -> who may trigger -> strip checkout credentials -> spec
(event > inputs > default branch's `.codegen.yml` > environment) -> worktree -> pipeline ->
publish (branch, pull request, status comment) -> outputs and job summary.

Exit codes as everywhere: 0 success, ignored or refused; 1 the task failed; 2 bad input;
3 GitHub, git or the model service failed. Whatever happens, the outputs get written (`ActionRun`'s
endings). The pull request loop (review threads, failing CI, the run history) is
`pr_loop`.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from codegen_ci.commands.action import pr_loop as loop
from codegen_ci.errors import CodegenError, GitHubError
from codegen_ci.progress import Progress
from codegen_ci.publish import remote
from codegen_ci.publish.actions import (
    ActionsIO,
    mask_secrets,
    report_path,
    untrusted_output,
    write_outputs,
)
from codegen_ci.publish.flow import Published, Publishing, fork_refusal
from codegen_ci.publish.forge import Forge, PullInfo
from codegen_ci.publish.github import GitHubPublisher, GitHubTarget
from codegen_ci.publish.markdown import code_block, escape_md
from codegen_ci.publish.report_text import summary_markdown
from codegen_ci.publish.run_history import memory_text, render_history
from codegen_ci.publish.status import StatusComment, StatusProgress
from codegen_ci.report import Report, Status
from codegen_ci.security.inert_text import for_terminal
from codegen_ci.security.redact import REDACTOR
from codegen_ci.sources.authorize import refusal
from codegen_ci.sources.events import (
    CommentTask,
    EventTask,
    ReviewCommentTask,
    Skip,
    TriggerRules,
    decide_event,
    load_event,
)
from codegen_ci.sources.settings_blocks import parse_settings
from codegen_ci.sources.task_spec import branch_for, issue_title, resolve_event_spec
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.spec.layers import deep_merge
from codegen_ci.workspace import git


def action_command() -> int:
    io = ActionsIO(
        output_file=_env_path("GITHUB_OUTPUT"),
        summary_file=_env_path("GITHUB_STEP_SUMMARY"),
    )
    REDACTOR.add_from_env(os.environ)
    run = ActionRun(io)
    try:
        run.settings = ActionSettings.from_env()
        for secret in run.settings.secrets:
            REDACTOR.add_secret(secret)
        mask_secrets(io)
        return run.start()
    except CodegenError as exc:
        return run.fail(exc)
    except Exception as exc:  # a bug of ours: still write the outputs and close the comment
        traceback.print_exc()
        return run.fail(CodegenError(f"internal error: {type(exc).__name__}: {exc}"))


class ActionRun:
    """One invocation: its state (settings, GitHub client, status comment, report, output
    folder, what was published), the sequence from the event to the published result, and
    how it ends: skipped (exit 0), finished (report, job summary, outputs; exit 0 or 1) or
    failed (the error on the status comment; exit 2 or 3)."""

    def __init__(self, io: ActionsIO) -> None:
        self.io = io
        self.settings = ActionSettings()
        self.publisher: Forge | None = None
        self.status: StatusComment | None = None
        self.report: Report | None = None
        self.out: Path | None = None
        self.published = Published()
        self.loop = loop.PullLoop()
        self.ignored: tuple[str, ...] = ()  # settings the event may not set

    def github(self) -> Forge:
        if self.publisher is None:
            target = GitHubTarget.from_env(os.environ)
            backoff = float(os.environ.get("CODEGEN_RETRY_BACKOFF") or "1.0")
            self.publisher = GitHubPublisher(target, backoff=backoff)
        return self.publisher

    def status_comment(self, issue_number: int | None) -> StatusComment:
        assert issue_number is not None
        self.status = StatusComment(
            self.github(), issue_number, self.settings.run_url, self.io.warning
        )
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

    # -- the sequence ---------------------------------------------------------------------

    def start(self) -> int:
        s = self.settings
        payload = load_event(s.event_path)
        decision = decide_event(s.event_name or "", payload, TriggerRules.from_settings(s))
        if isinstance(decision, Skip):
            return self.skip(decision.reason)
        for notice in decision.notices:
            self.io.notice(notice)
        if decision.kind == "ci_failure":  # nobody's request: the branch is the gate (loop)
            if isinstance(found := loop.find_ci_pull(self.github(), decision), Skip):
                return self.skip(found.reason)
            decision = found
        elif reason := refusal(decision, s, self.github()):
            return self.skip(reason)
        decision = self.with_settings(decision)  # event YAML is parsed only from here on
        root = git.repo_root((s.workspace or Path.cwd()) / (s.working_directory or Path()))
        if removed := remote.strip_checkout_credentials(root):
            self.io.log(f"removed credentials left in .git/config: {', '.join(removed)}")
        if s.openai_api_key:
            os.environ["OPENAI_API_KEY"] = s.openai_api_key  # read by the model adapter
        pull = self.github().get_pull(decision.pr_number) if decision.pr_number else None
        if pull is not None and pull.is_fork:
            self.status_comment(decision.issue_number).post(fork_refusal(pull))
            return self.skip(f"pull request #{pull.number} comes from a fork")
        if pull is not None and pull.state != "open":
            return self.skip(f"pull request #{pull.number} is {pull.state}")
        self.loop.history = loop.load_history(self.github(), decision)
        if pull is not None:
            prepared = loop.prepare(self.github(), decision, pull, self.loop, s, root)
            if isinstance(prepared, Skip):
                if self.loop.give_up:
                    self.status_comment(decision.issue_number).post(self.loop.give_up)
                return self.skip(prepared.reason)
            decision = prepared
        self.acknowledge(decision)
        return self.work(decision, payload, root, pull)

    def work(
        self, task: EventTask, payload: dict[str, Any], root: Path, pull: PullInfo | None
    ) -> int:
        # Imported here: an ignored or refused event need not load the model client.
        from codegen_ci.publish.flow import NewBranch, publish_new_branch, publish_on_pull
        from codegen_ci.run.attempt import new_run_id
        from codegen_ci.run.directory import make_output_dir
        from codegen_ci.run.start import RunRequest, start

        gh, token = self.github(), self.settings.github_token
        default = gh.default_branch()
        default_sha = remote.fetch_branch(root, default, token)
        if default_sha is None:
            raise GitHubError(f"origin has no branch {default} (the default branch)")
        base = default_sha
        if pull is not None:
            base = remote.fetch_branch(root, pull.head_ref, token) or ""
            if not base:
                raise GitHubError(f"the branch {pull.head_ref} of #{pull.number} is gone")
        spec = resolve_event_spec(
            task, self.settings, root, config_commit=default_sha, base=base, notice=self.io.warning
        )
        run_id = new_run_id(spec)
        title = issue_title(payload) or spec.title or task.title
        if pull is not None:
            branch = f"codegen/pr-{pull.number}"
        else:
            branch = branch_for(task, title, spec, root, token)
        self.out = make_output_dir(self.output_dir(root, run_id))
        request = RunRequest(
            spec,
            root,
            self.out,
            run_id,
            progress=self.progress(),
            branch=branch,
            # The maintainers' instructions come from the default branch, not the pull request.
            instructions_at=default_sha,
            memory=memory_text(self.loop.history),
        )
        shown = for_terminal(spec.title, one_line=True) if spec.title else spec.slug
        with self.io.group(f"codegen-ci: {shown}"), untrusted_output(self.io):
            self.report = start(request)
        loop.remember(self.status, self.loop, self.report, task, self.settings.run_url)
        ctx = Publishing(root, token, gh, self.status, self.settings.run_url, self.io.warning)
        if pull is not None:
            self.published = publish_on_pull(ctx, self.report, pull, branch)
            loop.reply(gh, task, self.loop, self.report, pull, ctx.run_link(), self.io.warning)
        else:
            target = NewBranch(
                branch, default, title, task.issue_number, self.settings.draft_on_failure
            )
            self.published = publish_new_branch(ctx, self.report, spec, target)
        return self.finish()

    # -- pieces ---------------------------------------------------------------------------

    def with_settings(self, task: EventTask) -> EventTask:
        overrides, notices = parse_settings(task.settings)
        self.ignored = notices
        for notice in notices:
            self.io.warning(notice)
        return replace(task, spec_overrides=deep_merge(task.spec_overrides, overrides))

    def acknowledge(self, task: EventTask) -> None:
        """👀 on what triggered the run, and the status comment saying work has begun."""
        if task.issue_number is None:
            return
        try:
            match task:
                case CommentTask():
                    self.github().react(task.comment_id, "eyes")
                case ReviewCommentTask():
                    self.github().react_to_review_comment(task.review_comment_id)
                case _:
                    self.github().react_to_issue(task.issue_number, "eyes")
        except GitHubError as exc:
            self.io.warning(f"could not add a reaction: {exc.message}")
        self.status_comment(task.issue_number).working("it", notes=self.ignored)

    # -- endings --------------------------------------------------------------------------

    def skip(self, reason: str) -> int:
        self.io.notice(f"codegen-ci skipped this event: {reason}")
        self.io.append_summary(f"## codegen-ci skipped\n\n{escape_md(reason, 2000)}\n")
        self._outputs("skipped")
        return 0

    def finish(self) -> int:
        from codegen_ci.run.start import exit_code

        report = self.report
        assert report is not None and self.out is not None
        report.pr_url = self.published.pr_url or None
        report.branch = self.published.branch or report.branch
        report.write(self.out)
        summary = summary_markdown(report, run_url=self.settings.run_url)
        if self.published.compare_url:
            summary += f"\nOpen the pull request by hand: {self.published.compare_url}\n"
        self.io.append_summary(summary)
        if report.status != Status.SUCCESS:
            self.io.error(f"codegen-ci {report.status}: {report.reason or report.error or ''}")
        self._outputs(report.status)
        return exit_code(report)

    def fail(self, exc: CodegenError) -> int:
        self.io.error(exc.message, title="codegen-ci")
        if self.status is not None:
            self.status.post(
                f"⚠️ **codegen-ci** stopped with an error:\n\n"
                f"{code_block(exc.message)}\n{self.status.run_link()}"
            )
        if self.report is None and self.out is not None and (self.out / "report.json").exists():
            self.report = Report.read(self.out)
        if self.report is not None:
            self.io.append_summary(summary_markdown(self.report, run_url=self.settings.run_url))
        self._outputs("error")
        return exc.exit_code

    def _outputs(self, status: str) -> None:
        path = report_path(self.out, self.settings.workspace)
        write_outputs(
            self.io,
            status,
            self.report,
            pr_url=self.published.pr_url,
            branch=self.published.branch,
            report_path=path,
        )


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value) if value else None
