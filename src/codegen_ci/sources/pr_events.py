"""Every event the action handles -> `EventTask` or `Ignore`: the review and CI events of the
pull request loop here, the rest in `github_event`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codegen_ci.sources.ci_failure_task import workflow_run_event
from codegen_ci.sources.event_task import EventTask, Ignore, TriggerRules
from codegen_ci.sources.github_event import decide
from codegen_ci.sources.review_task import review_comment_event, review_event


def decide_event(
    event_name: str, payload: Mapping[str, Any], rules: TriggerRules | None = None
) -> EventTask | Ignore:
    rules = rules or TriggerRules()
    if event_name == "pull_request_review_comment":
        return review_comment_event(payload, rules)
    if event_name == "pull_request_review":
        return review_event(payload, rules)
    if event_name == "workflow_run":
        return workflow_run_event(payload, rules)
    return decide(event_name, payload, rules)
