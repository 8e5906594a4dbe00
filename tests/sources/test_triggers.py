"""Which text starts a run, decided from real webhook payloads alone (no action, no process):
only a line of prose that starts with the trigger phrase counts, whichever event carries it.
Code (indented or fenced), quotes, HTML comments and hidden elements never do. The end-to-end
tests in tests/e2e/action/test_triggers.py prove the action uses this decision."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from codegen_ci.security.untrusted import Untrusted
from codegen_ci.sources.events import (
    CommentTask,
    EventTask,
    ReviewCommentTask,
    ReviewTask,
    Skip,
    TriggerRules,
    decide_event,
)

EVENTS = Path(__file__).parents[1] / "fixtures" / "github-events"
OCTOKIT = EVENTS / "octokit-webhooks" / "api.github.com"

# trigger -> (event name, payload file, the object whose `body` carries the text, kind of task)
TRIGGERS = {
    "comment on an issue": (
        "issue_comment",
        OCTOKIT / "issue_comment" / "created.payload.json",
        "comment",
        "issue_comment",
    ),
    "comment on a pull request": (
        "issue_comment",
        EVENTS / "go-playground-webhooks" / "pull-request-issue-comment.json",
        "comment",
        "pr_comment",
    ),
    "review comment": (
        "pull_request_review_comment",
        OCTOKIT / "pull_request_review_comment" / "created.payload.json",
        "comment",
        "review_comment",
    ),
    "review": (
        "pull_request_review",
        OCTOKIT / "pull_request_review" / "submitted.payload.json",
        "review",
        "review",
    ),
}

NOT_PROSE = {
    "indented code": "Steps:\n\n    /codegen fix it\n",
    "tab-indented code": "\t/codegen fix it",
    "indented code first": "    /codegen fix it",
    "fenced with backticks": "```\n/codegen fix it\n```",
    "fenced with tildes": "~~~\n/codegen fix it\n~~~",
    "quote": "> /codegen fix it",
    "html comment": "<!--\n/codegen fix it\n-->",
    "hidden element": "<div hidden>\n\n/codegen fix it\n\n</div>",
    "mid-sentence": "Let me try /codegen fix it",
    "another phrase": "/codegenx fix it",
}

PROSE = {
    "first line": ("/codegen fix it", "fix it"),
    "after a greeting": ("Thanks!\n\n/codegen fix it", "fix it"),
    "indented less than four spaces": ("Thanks!\n\n   /codegen fix it", "fix it"),
    "after fenced code": ("```\n/codegen in code\n```\n/codegen fix it", "fix it"),
    "after an html comment": ("<!-- x -->\n/codegen fix it", "fix it"),
    "several lines": ("/codegen fix it\nin README.md", "fix it\nin README.md"),
}


def event_with(trigger: str, body: str) -> tuple[str, dict[str, Any]]:
    event, path, holder, _ = TRIGGERS[trigger]
    payload: dict[str, Any] = copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))
    payload[holder]["body"] = body
    payload[holder]["user"].update(login="alice", type="User")
    payload["sender"].update(login="alice", type="User")
    return event, payload


@pytest.mark.parametrize("case", list(NOT_PROSE))
@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_code_quotes_and_hidden_text_never_trigger(trigger: str, case: str) -> None:
    decision = decide_event(*event_with(trigger, NOT_PROSE[case]))

    assert isinstance(decision, Skip), decision
    assert "trigger phrase" in decision.reason


TASK_TYPES: dict[str, type[EventTask]] = {
    "issue_comment": CommentTask,
    "pr_comment": CommentTask,
    "review_comment": ReviewCommentTask,
    "review": ReviewTask,
}


def test_each_trigger_carries_what_its_kind_needs() -> None:
    body = "/codegen fix it"
    found = {}
    for trigger in TRIGGERS:
        decision = decide_event(*event_with(trigger, body))
        match decision:
            case CommentTask(comment_id=int(n)):
                found[trigger] = ("comment", n)
            case ReviewCommentTask(review_comment_id=int(n)):
                found[trigger] = ("review comment", n)
            case ReviewTask(review_id=int(n)):
                found[trigger] = ("review", n)
            case _:
                raise AssertionError(decision)
    assert {kind for kind, _ in found.values()} == {"comment", "review comment", "review"}


@pytest.mark.parametrize("case", list(PROSE))
@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_a_line_of_prose_that_starts_with_the_phrase_triggers(trigger: str, case: str) -> None:
    body, instruction = PROSE[case]

    decision = decide_event(*event_with(trigger, body))

    assert isinstance(decision, EventTask), decision
    assert decision.kind == TRIGGERS[trigger][3]
    assert isinstance(decision, TASK_TYPES[decision.kind])  # the kind is the type
    assert decision.task.startswith(instruction)
    assert decision.title == Untrusted(instruction.splitlines()[0])
    assert decision.actor == "alice"


@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_a_custom_phrase_replaces_the_default(trigger: str) -> None:
    rules = TriggerRules(phrase="@bot")
    event, payload = event_with(trigger, "@bot fix it\n\n/codegen not this")
    ignored_event, ignored = event_with(trigger, "/codegen fix it")

    decision = decide_event(event, payload, rules)
    assert isinstance(decision, EventTask) and decision.task.startswith("fix it\n")
    assert isinstance(decide_event(ignored_event, ignored, rules), Skip)
