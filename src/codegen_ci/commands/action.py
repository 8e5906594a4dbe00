"""`codegen-ci action`: the entrypoint GitHub Actions runs.

event -> decide (task or ignore) -> who may trigger -> strip checkout credentials -> spec
(event > inputs > default branch's `.codegen.yml` > environment) -> worktree -> pipeline ->
publish (branch, pull request, status comment) -> outputs and job summary.

Exit codes as everywhere: 0 success, ignored or refused; 1 the task failed; 2 bad input;
3 GitHub, git or the model service failed. Whatever happens, the outputs get written (the run's
state and its endings are in `action_state`).
"""

from __future__ import annotations

import os
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from codegen_ci.agent.briefing import Briefing
from codegen_ci.agent.instructions import read_instructions
from codegen_ci.commands import action_pr_loop as loop
from codegen_ci.commands.action_state import ActionState
from codegen_ci.errors import CodegenError, GitHubError
from codegen_ci.publish import remote
from codegen_ci.publish.actions import ActionsIO
from codegen_ci.publish.flow import Publishing, fork_refusal
from codegen_ci.publish.github_types import PullInfo
from codegen_ci.publish.outputs import mask_secrets, untrusted_output
from codegen_ci.publish.review_threads import react_to_review_comment
from codegen_ci.publish.run_history import memory_text
from codegen_ci.security.redact import REDACTOR
from codegen_ci.sources.authorize import refusal
from codegen_ci.sources.github_event import EventTask, Ignore, TriggerRules, load_event
from codegen_ci.sources.pr_events import decide_event
from codegen_ci.sources.settings_blocks import parse_settings
from codegen_ci.sources.task_spec import branch_for, issue_title, resolve_event_spec
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.spec.layers import deep_merge
from codegen_ci.workspace import git


def action_command() -> int:
    io = ActionsIO(
        output_file=_env_path("GITHUB_OUTPUT"), summary_file=_env_path("GITHUB_STEP_SUMMARY"),
        redact=REDACTOR.redact,
    )  # fmt: skip
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


class ActionRun(ActionState):
    """One invocation: the sequence from the event to the published result."""

    # -- the sequence ---------------------------------------------------------------------

    def start(self) -> int:
        s = self.settings
        payload = load_event(s.event_path)
        decision = decide_event(s.event_name or "", payload, TriggerRules.from_settings(s))
        if isinstance(decision, Ignore):
            return self.skip(decision.notice)
        for notice in decision.notices:
            self.io.notice(notice)
        if decision.kind == "ci_failure":  # nobody's request: the branch is the gate (loop)
            if isinstance(found := loop.find_ci_pull(self.github(), decision), str):
                return self.skip(found)
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
            if isinstance(prepared, str):
                if self.loop.give_up:
                    self.status_comment(decision.issue_number).post(self.loop.give_up)
                return self.skip(prepared)
            decision = prepared
        self.acknowledge(decision)
        return self.work(decision, payload, root, pull)

    def work(
        self, task: EventTask, payload: dict[str, Any], root: Path, pull: PullInfo | None
    ) -> int:
        # Imported here: an ignored or refused event need not load the model client.
        from codegen_ci.commands.run import new_run_id, prepare_worktree, run_pipeline
        from codegen_ci.commands.run_dir import make_output_dir
        from codegen_ci.publish.flow import NewBranch, publish_new_branch, publish_on_pull

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
        spec = resolve_event_spec(task, self.settings, root, config_commit=default_sha,
                                  base=base, notice=self.io.warning)  # fmt: skip
        run_id = new_run_id(spec)
        title = issue_title(payload) or spec.title or task.title
        if pull is not None:
            branch = f"codegen/pr-{pull.number}"
        else:
            branch = branch_for(task, title, spec, root, token)
        self.out = make_output_dir(self.output_dir(root, run_id))
        progress = self.progress()
        briefing = Briefing(read_instructions(root, default_sha, spec.instructions),
                            memory_text(self.loop.history))  # fmt: skip
        with self.io.group(f"codegen-ci: {spec.title or spec.slug}"), untrusted_output(self.io):
            if spec.candidates.count > 1:
                from codegen_ci.commands.run_candidates import start

                self.report = start(spec, root, self.out, run_id, briefing=briefing, sources={},
                                    progress=progress, branch=branch)  # fmt: skip
            else:
                worktree = prepare_worktree(root, spec, run_id, branch=branch, reset=True)
                self.report = run_pipeline(spec, root, self.out, run_id, worktree,
                                           progress=progress, briefing=briefing)  # fmt: skip
        loop.remember(self.status, self.loop, self.report, task, self.settings.run_url)
        ctx = Publishing(root, token, gh, self.status, self.settings.run_url, self.io.warning)
        if pull is not None:
            self.published = publish_on_pull(ctx, self.report, pull, branch)
            loop.reply(gh, task, self.loop, self.report, pull, ctx.run_link(), self.io.warning)
        else:
            target = NewBranch(branch, default, title, task.issue_number,
                               self.settings.draft_on_failure)  # fmt: skip
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
            if task.comment_id is not None:
                self.github().react(task.comment_id, "eyes")
            elif task.review_comment_id is not None:
                react_to_review_comment(self.github(), task.review_comment_id)
            else:
                self.github().react_to_issue(task.issue_number, "eyes")
        except GitHubError as exc:
            self.io.warning(f"could not add a reaction: {exc.message}")
        self.status_comment(task.issue_number).working("it", notes=self.ignored)


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value) if value else None
