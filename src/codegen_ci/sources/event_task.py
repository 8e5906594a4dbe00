"""What an event decides: a task to run (`EventTask`) or nothing (`Ignore`), and the rules
it is decided by (`TriggerRules`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from codegen_ci.sources.settings_blocks import SettingsBlock
from codegen_ci.spec.action_inputs import ActionSettings, bot_key


@dataclass(frozen=True)
class EventTask:
    kind: Literal[
        "issue",
        "issue_comment",
        "pr_comment",
        "dispatch",
        "review_comment",
        "review",
        "ci_failure",
    ]
    task: str
    title: str
    issue_number: int | None
    pr_number: int | None
    comment_id: int | None
    actor: str
    actor_type: str
    spec_overrides: dict[str, Any]
    spec_path: str | None
    delivery_key: str
    notices: tuple[str, ...] = ()  # things the caller should print as notices
    review_comment_id: int | None = None  # a pull_request_review_comment's comment
    review_id: int | None = None  # a pull_request_review
    ci_run: CiRun | None = None  # a failed workflow_run
    # The actor's settings blocks, unparsed: `parse_settings` reads them after the
    # permission check, and their overrides join `spec_overrides`.
    settings: tuple[SettingsBlock, ...] = ()


@dataclass(frozen=True)
class CiRun:
    """The failed workflow run a `ci_failure` task is about."""

    run_id: int
    name: str
    head_branch: str
    head_sha: str
    html_url: str


@dataclass(frozen=True)
class Ignore:
    notice: str


@dataclass(frozen=True)
class TriggerRules:
    phrase: str = "/codegen"
    label: str = "codegen"
    allowed_bots: frozenset[str] = frozenset()  # as `bot_key` normalises them
    self_logins: frozenset[str] = frozenset()  # besides github-actions[bot]
    task_input: str | None = None  # the action's `task`, when a dispatch payload has none
    spec_input: str | None = None
    actor: str | None = None  # GITHUB_ACTOR: who a schedule run counts as (it has no sender)
    ci_fix_label: str = ""  # a pull request with this label gets its CI failures fixed too

    @classmethod
    def from_settings(cls, s: ActionSettings, *, self_logins: Iterable[str] = ()) -> TriggerRules:
        return cls(
            s.trigger_phrase, s.trigger_label, s.allowed_bots,
            frozenset(bot_key(x) for x in self_logins), s.task, s.spec, s.actor, s.ci_fix_label,
        )  # fmt: skip
