"""A GitHub event payload -> what the action does: a task (`EventTask`) or nothing (`Ignore`).

The payload is the source of truth: an edit made after the triggering delivery is not seen.
Permission checks through the API are the caller's job; this module only refuses what the
payload alone settles (bots not in `allowed-bots`, the tool's own comments).

Settings in an issue or comment: a fenced block whose info string is `yaml codegen` (or
`yml codegen`) always holds spec fields (everything except `task`); a plain ```` ```yaml ````
block counts only when every top-level key is a spec field, so a YAML snippet quoted in a bug
report stays part of the task. Such blocks only count when written by the actor who triggered
the run, since they choose the commands that run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from codegen_ci.errors import InputError, SpecError, SpecProblem
from codegen_ci.settings import ActionSettings, bot_key
from codegen_ci.spec import RepoConfig, deep_merge, parse_layer_text
from codegen_ci.untrusted import clean_untrusted, fence

MARKER = "<!-- codegen-ci"
ACTIONS_BOT = "github-actions[bot]"
TITLE_MAX = 72

__all__ = ["EventTask", "Ignore", "TriggerRules", "decide", "find_trigger", "load_event"]


@dataclass(frozen=True)
class EventTask:
    kind: Literal["issue", "issue_comment", "pr_comment", "dispatch"]
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

    @classmethod
    def from_settings(cls, s: ActionSettings, *, self_logins: Iterable[str] = ()) -> TriggerRules:
        return cls(
            s.trigger_phrase, s.trigger_label, s.allowed_bots,
            frozenset(bot_key(x) for x in self_logins), s.task, s.spec,
        )  # fmt: skip


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        raise InputError("GITHUB_EVENT_PATH is not set: not running in GitHub Actions?")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the event payload {path}: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"event payload {path} is not a JSON object")
    return data


def find_trigger(body: str, phrase: str) -> str | None:
    """The instruction after `phrase` at the start of a line, or None when no line has it.

    Only prose counts: lines in fenced code (``` or ~~~), in quotes (`> /codegen`) and in HTML
    comments never trigger; the phrase must end at whitespace (`/codegenx` is not it). The
    instruction is the rest of that line and everything after it (people write the phrase,
    then a paragraph); "" when nothing follows, meaning "do what the issue says".
    """
    text = _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), body.replace("\r\n", "\n"))
    lines = text.split("\n")
    in_fence = _fence_lines(lines)
    start = re.compile(r"[ \t]*" + re.escape(phrase) + r"(?:[ \t]+(.*))?")
    for i, line in enumerate(lines):
        match = None if in_fence[i] else start.fullmatch(line)
        if match:
            return "\n".join([match.group(1) or "", *lines[i + 1 :]]).strip()
    return None


@dataclass(frozen=True)
class _Block:
    info: str
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line (the last line when unclosed)
    body: str


_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def _fenced_blocks(text: str) -> list[_Block]:
    lines = text.split("\n")
    blocks: list[_Block] = []
    opening: tuple[int, str, str] | None = None  # line index, fence, info string
    for i, line in enumerate(lines):
        match = _FENCE.fullmatch(line)
        if opening is None:
            if match and not (match[1][0] == "`" and "`" in match[2]):
                opening = (i, match[1], match[2].strip())
        elif match and match[1][0] == opening[1][0] and len(match[1]) >= len(opening[1]):
            if match[2].strip():  # a closing fence has no info string
                continue
            body = "\n".join(lines[opening[0] + 1 : i])
            blocks.append(_Block(opening[2], opening[0], i, body))
            opening = None
    if opening is not None:
        body = "\n".join(lines[opening[0] + 1 :])
        blocks.append(_Block(opening[2], opening[0], len(lines) - 1, body))
    return blocks


def _fence_lines(lines: list[str]) -> list[bool]:
    """Whether each line belongs to a fenced code block (fence lines included)."""
    flags = [False] * len(lines)
    for block in _fenced_blocks("\n".join(lines)):
        for i in range(block.start, block.end + 1):
            flags[i] = True
    return flags


def decide(
    event_name: str, payload: Mapping[str, Any], rules: TriggerRules | None = None
) -> EventTask | Ignore:
    rules = rules or TriggerRules()
    if event_name == "issues":
        return _issue(payload, rules)
    if event_name == "issue_comment":
        return _comment(payload, rules)
    if event_name == "workflow_dispatch":
        return _dispatch(payload, rules)
    if event_name == "schedule":
        return Ignore(
            "a schedule event runs specs in bulk: use `codegen-ci batch DIR --matrix` "
            "to plan a matrix job and `codegen-ci run SPEC` in each of its jobs"
        )
    return Ignore(f"event {event_name} is not handled")


def _issue(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    action = payload.get("action")
    if action == "labeled":
        label = str(_get(payload, "label", "name"))
        if label.casefold() != rules.label.casefold():
            return Ignore(f"label {label!r} is not the trigger label {rules.label!r}")
    elif action not in ("opened", "assigned"):
        return Ignore(f"issues event with action {action!r} is not handled")
    actor, actor_type = _user(payload.get("sender"))
    if refusal := _refuse_bot(actor, actor_type, rules):
        return refusal
    number = int(_get(payload, "issue", "number"))
    title = clean_untrusted(str(_get(payload, "issue", "title")))
    body, overrides, notices = _settings_blocks(payload["issue"], f"issue #{number} body", actor)
    author, _ = _user(payload["issue"].get("user"))
    if body and author.casefold() != actor.casefold():
        # A writer chose to run someone else's issue: its text says what is wanted, but it is
        # not the writer's own words, so it reaches the model fenced as data.
        body = fence(f"issue #{number} description by @{author}", body)
    return EventTask(
        kind="issue", task=_join(title, body), title=_short(title), issue_number=number,
        pr_number=None, comment_id=None, actor=actor, actor_type=actor_type,
        spec_overrides=overrides, spec_path=None, delivery_key=f"issue-{number}",
        notices=notices,
    )  # fmt: skip


def _comment(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    action = payload.get("action")
    if action != "created":
        return Ignore(f"comment {action}: only a new comment triggers a run")
    comment = _get(payload, "comment")
    actor, actor_type = _user(comment.get("user"))
    if MARKER in (comment.get("body") or "") or _is_self(actor, rules):
        return Ignore("comment written by codegen-ci itself")
    comment_id = int(_get(payload, "comment", "id"))
    rest, comment_overrides, _ = _settings_blocks(comment, f"comment {comment_id}", actor)
    instruction = find_trigger(rest, rules.phrase)
    if instruction is None:
        return Ignore(f"no line starts with the trigger phrase {rules.phrase!r}")
    if refusal := _refuse_bot(actor, actor_type, rules):
        return refusal
    issue = _get(payload, "issue")
    number = int(_get(payload, "issue", "number"))
    on_pr = bool(issue.get("pull_request"))
    where = f"pull request #{number}" if on_pr else f"issue #{number}"
    title = clean_untrusted(str(issue.get("title") or ""))
    body, overrides, notices = _settings_blocks(issue, f"{where} body", actor)
    return EventTask(
        kind="pr_comment" if on_pr else "issue_comment",
        task=_comment_task(instruction, where, title, body),
        title=_short(instruction.splitlines()[0] if instruction else title),
        issue_number=number, pr_number=number if on_pr else None, comment_id=comment_id,
        actor=actor, actor_type=actor_type,
        spec_overrides=deep_merge(overrides, comment_overrides), spec_path=None,
        delivery_key=f"pr-{number}" if on_pr else f"issue-{number}", notices=notices,
    )  # fmt: skip


def _comment_task(instruction: str, where: str, title: str, body: str) -> str:
    if not instruction:  # the phrase alone: the issue or pull request is the task
        return _join(title, body)
    context = fence(f"{where}: title and description", _join(title, body))
    return (
        f"{instruction}\n\nThis request was made in a comment on {where}; its title and "
        f"description follow as context.\n\n{context}"
    )


def _dispatch(payload: Mapping[str, Any], rules: TriggerRules) -> EventTask | Ignore:
    inputs = payload.get("inputs") or {}
    task = clean_untrusted(str(inputs.get("task") or "")).strip() or rules.task_input
    spec = str(inputs.get("spec") or "").strip() or rules.spec_input
    if not (task or spec):
        raise InputError("workflow_dispatch needs the input `task` or `spec`")
    actor, actor_type = _user(payload.get("sender"))
    if refusal := _refuse_bot(actor, actor_type, rules):
        return refusal
    digest = hashlib.sha256(f"{spec or ''}\0{task or ''}".encode()).hexdigest()[:12]
    return EventTask(
        kind="dispatch", task=task or "", title=_short((task or spec or "").splitlines()[0]),
        issue_number=None, pr_number=None, comment_id=None, actor=actor, actor_type=actor_type,
        spec_overrides={}, spec_path=spec, delivery_key=f"dispatch-{digest}",
    )  # fmt: skip


def _settings_blocks(
    item: Mapping[str, Any], name: str, actor: str
) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """Split an issue/comment body into its text and the settings its blocks hold."""
    text = (item.get("body") or "").replace("\r\n", "\n")
    author, _ = _user(item.get("user")) if item.get("user") else (actor, "")
    lines = text.split("\n")
    overrides: dict[str, Any] = {}
    notices: list[str] = []
    for block in reversed(_fenced_blocks(text)):  # bottom up, so deleting lines keeps indexes
        if not _is_settings_block(block.info, block.body):
            continue
        del lines[block.start : block.end + 1]
        if bot_key(author) != bot_key(actor):
            notices.append(
                f"ignored the settings block in {name}: written by {author}, not {actor}"
            )
            continue
        layer = _parse_block(clean_untrusted(block.body), name, first_line=block.start + 2)
        overrides = deep_merge(layer, overrides)
    return clean_untrusted("\n".join(lines)).strip(), overrides, tuple(notices)


def _is_settings_block(info: str, body: str) -> bool:
    words = info.lower().split()
    if not words or words[0] not in ("yaml", "yml"):
        return False
    if "codegen" in words[1:]:
        return True
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and bool(data) and set(data) <= set(RepoConfig.model_fields)


def _parse_block(text: str, name: str, *, first_line: int) -> dict[str, Any]:
    try:
        return parse_layer_text(text, name, is_spec=False)
    except SpecError as exc:  # lines count from the block; the user sees the whole body
        shift = first_line - 1
        raise SpecError(
            [SpecProblem(p.file, p.line + shift if p.line else None, p.key, p.message)
             for p in exc.problems]
        ) from None  # fmt: skip


def _refuse_bot(actor: str, actor_type: str, rules: TriggerRules) -> Ignore | None:
    if not actor:
        return Ignore("the event names no sender")
    if actor_type == "Bot" and bot_key(actor) not in rules.allowed_bots:
        return Ignore(f"{actor} is a bot that is not listed in allowed-bots")
    return None


def _is_self(login: str, rules: TriggerRules) -> bool:
    return bot_key(login) in {bot_key(ACTIONS_BOT), *rules.self_logins}


def _user(user: Any) -> tuple[str, str]:
    if not isinstance(user, Mapping):
        return "", ""
    return str(user.get("login") or ""), str(user.get("type") or "User")


def _get(payload: Mapping[str, Any], *keys: str) -> Any:
    value: Any = payload
    for key in keys:
        if not isinstance(value, Mapping) or value.get(key) is None:
            raise InputError(f"event payload has no {'.'.join(keys)}")
        value = value[key]
    return value


def _join(title: str, body: str) -> str:
    return f"{title}\n\n{body}".strip() if body else title


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1].rstrip() + "…"
