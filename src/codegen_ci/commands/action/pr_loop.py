"""The action's pull request loop: review threads, failing CI, the run history.

`prepare` turns a review or CI event into its full task (the thread, the review's comments,
the failing tests) or a reason to stop; `reply` answers in the review threads once the result
is published. The run history in the status comment is read before the run (it is the
memory a later run is given, and it bounds CI-fix attempts) and extended after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codegen_ci.errors import GitHubError
from codegen_ci.publish import remote
from codegen_ci.publish.ci_artifacts import failed_run_leftovers
from codegen_ci.publish.forge import Forge, PullInfo
from codegen_ci.publish.markdown import code_span
from codegen_ci.publish.run_history import (
    RunRecord,
    history_marker,
    read_history,
    record_for,
    render_history,
)
from codegen_ci.publish.status import StatusComment, status_marker
from codegen_ci.report import Reason, Report, Status
from codegen_ci.sources.events import (
    CiFailureTask,
    EventTask,
    ReviewCommentTask,
    ReviewTask,
    Skip,
)
from codegen_ci.sources.pull_tasks import (
    CiFailures,
    branch_prefixes,
    ci_task_text,
    review_thread_task,
    whole_review_task,
    with_title,
)
from codegen_ci.sources.task_spec import default_branch_config
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.workspace import git

REVIEW_KINDS = ("review_comment", "review")


@dataclass
class PullLoop:
    """What the run keeps between preparing the task and publishing its result."""

    history: list[RunRecord] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    reply_to: list[int] = field(default_factory=list)  # review comments to answer
    ci_signature: str = ""
    give_up: str = ""  # set when a CI fix must not be attempted: what the comment says


def load_history(gh: Forge, task: EventTask) -> list[RunRecord]:
    if task.issue_number is None:
        return []
    return read_history(gh, task.issue_number, status_marker(task.issue_number))


def find_ci_pull(gh: Forge, task: EventTask) -> EventTask | Skip:
    """The workflow run's pull request: from the payload, else the open one for its branch."""
    if task.pr_number is not None or not isinstance(task, CiFailureTask):
        return task
    pull = gh.find_open_pr(task.ci_run.head_branch.raw_for("matching"))
    if pull is None:
        return Skip("no open pull request has the failed run's branch")
    return replace(task, pr_number=pull.number, issue_number=pull.number)


def prepare(
    gh: Forge,
    task: EventTask,
    pull: PullInfo,
    loop: PullLoop,
    settings: ActionSettings,
    root: Path,
) -> EventTask | Skip:
    """The full task, or why there is none."""
    where = f"pull request #{pull.number}"
    if isinstance(task, ReviewCommentTask):
        loop.review_comments = gh.pull_review_comments(pull.number)
        loop.reply_to = [task.review_comment_id]
        text = review_thread_task(task, loop.review_comments, where)
        return replace(task, task=with_title(text, where, pull.title))
    if isinstance(task, ReviewTask):
        loop.review_comments = gh.pull_review_comments(pull.number)
        own = gh.review_comments(pull.number, task.review_id)
        loop.reply_to = [int(c["id"]) for c in own]
        text = whole_review_task(task, own, loop.review_comments, where)
        return replace(task, task=with_title(text, where, pull.title))
    if isinstance(task, CiFailureTask):
        prepared = _prepare_ci(gh, task, pull, loop, settings, root, where)
        if isinstance(prepared, Skip):
            return prepared
        return replace(prepared, task=with_title(prepared.task, where, pull.title))
    return task


def _prepare_ci(
    gh: Forge,
    task: CiFailureTask,
    pull: PullInfo,
    loop: PullLoop,
    settings: ActionSettings,
    root: Path,
    where: str,
) -> EventTask | Skip:
    if reason := _not_ours(gh, task, pull, settings, root):
        return Skip(reason)
    tries = [r for r in loop.history if r.kind == "ci_failure"]
    if len(tries) >= settings.max_ci_fix_attempts:
        loop.give_up = (
            f"🛑 **codegen-ci** gives up on the failing CI of this pull request: "
            f"{len(tries)} attempt(s) made, the limit is "
            f"{settings.max_ci_fix_attempts} (input max-ci-fix-attempts)."
        )
        return Skip("the CI-fix attempts for this pull request are used up")
    leftovers = failed_run_leftovers(
        gh, task.ci_run.run_id, _artifact_dir(root, task.ci_run.run_id)
    )
    failures = CiFailures(tuple(leftovers.tests), tuple(leftovers.logs))
    if not failures.tests and not failures.logs:
        run_id = task.ci_run.run_id
        return Skip(f"the failed run {run_id} left no JUnit report and no failed job log")
    loop.ci_signature = failures.signature()
    if tries and tries[-1].ci_signature == loop.ci_signature:
        loop.give_up = (
            "🛑 **codegen-ci** gives up on the failing CI of this pull request: the "
            "same failures as before its last attempt "
            f"({code_span(failures.summary())})."
        )
        return Skip("the same CI failures repeat after the last attempt")
    return replace(task, task=ci_task_text(task.ci_run, failures, where))


def _not_ours(
    gh: Forge, task: EventTask, pull: PullInfo, settings: ActionSettings, root: Path
) -> str | None:
    if settings.max_ci_fix_attempts == 0:
        return "CI fixing is off (max-ci-fix-attempts is 0)"
    default = gh.default_branch()
    if pull.head_ref == default:
        return f"the branch {pull.head_ref} is the default branch"
    sha = remote.fetch_branch(root, default, settings.github_token)
    config = default_branch_config(root, sha) if sha else {}
    prefixes = branch_prefixes(str(config.get("git", {}).get("branch") or "codegen/{slug}"))
    if pull.head_ref.startswith(prefixes):
        return None
    label = settings.ci_fix_label
    if label and label in gh.get_issue(pull.number).labels:
        return None
    also = f" nor carries the label {label!r}" if label else ""
    return f"#{pull.number}'s branch {pull.head_ref} is not one codegen-ci pushed{also}"


def remember(
    status: StatusComment | None,
    loop: PullLoop,
    report: Report,
    task: EventTask,
    run_url: str | None,
) -> None:
    """The run joins the history kept under the status comment (posted with its next text)."""
    if status is None:
        return
    loop.history.append(
        record_for(report, task.kind, task.title.raw_for("run history"), loop.ci_signature, run_url)
    )
    status.footer = render_history(loop.history)
    status.hidden = history_marker(loop.history)


def reply(
    gh: Forge,
    task: EventTask,
    loop: PullLoop,
    report: Report,
    pull: PullInfo,
    run_link: str,
    warn: Any,
) -> None:
    """Answer each review comment the run was for, in its own thread."""
    if task.kind not in REVIEW_KINDS:
        return
    text = _reply_text(report, pull) + run_link
    for comment_id in loop.reply_to:
        try:
            gh.reply_in_thread(pull.number, comment_id, text, loop.review_comments)
        except GitHubError as exc:
            warn(f"could not reply in the review thread of comment {comment_id}: {exc.message}")


def _reply_text(report: Report, pull: PullInfo) -> str:
    if report.reason == Reason.NO_CHANGE:
        return (
            "**codegen-ci** changed nothing (`no_change`): validation passes as the code is, "
            f"so nothing was pushed to {code_span(pull.head_ref)}."
        )
    if report.status != Status.SUCCESS:
        return (
            "❌ **codegen-ci** could not make this change pass validation; nothing was "
            f"pushed to {code_span(pull.head_ref)}. The status comment on the pull request "
            "lists the failures."
        )
    files = ", ".join(code_span(f) for f in report.files_changed[:10]) or "no files"
    return (
        f"✅ **codegen-ci** pushed {(report.commit or '')[:12]} to {code_span(pull.head_ref)}: "
        f"changed {files}."
    )


def _artifact_dir(root: Path, run_id: int) -> Path:
    return git.common_dir(root) / "codegen" / "ci-artifacts" / str(run_id)  # never in the tree
