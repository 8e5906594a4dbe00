"""How a compaction shrinks the conversation: the system prompt and the task stay, every
harness message (reflections, notes) stays word for word, the most recent steps stay whole
(except outputs a later identical call or a later write superseded), older steps keep their
calls with arguments and outputs elided, and steps older still become a one-line note.

Used only when `context.ContextWindow` compacts; between compactions requests only append.
"""

from __future__ import annotations

import json
from typing import Any

ELIDE_OVER_CHARS = 300
SUPERSEDED = "[output superseded by a later identical call or a later write; see the newer one]"
# Calls whose output a later identical call makes stale.
REPEATABLE = {"read_file", "list_files", "search_files", "run_command"}

Message = dict[str, Any]


def compact(messages: list[Message], keep_full: int, keep_masked: int) -> list[Message]:
    """The messages with all but the `keep_full` latest steps masked and all but the
    `keep_masked` steps before those dropped behind a note."""
    head, groups = _groups(messages)
    steps = [i for i, g in enumerate(groups) if g[0]["role"] == "assistant"]
    full = set(steps[-keep_full:]) if keep_full else set()
    masked = set(steps[-(keep_full + keep_masked) :]) - full
    dropped = [groups[i] for i in steps if i not in full and i not in masked]
    stale = _superseded(groups)
    out = list(head)
    if dropped:
        out.append({"role": "user", "content": _dropped_note(dropped)})
    for i, group in enumerate(groups):
        if i in full or group[0]["role"] != "assistant":
            out.extend(_mark_stale(group, stale))
        elif i in masked:
            out.extend(_mask(group))
    return out


def _groups(messages: list[Message]) -> tuple[list[Message], list[list[Message]]]:
    """(system + task, then groups: an assistant message with its tool results, or a note)."""
    head = messages[:2]
    groups: list[list[Message]] = []
    for message in messages[2:]:
        if message["role"] == "tool" and groups and groups[-1][0]["role"] == "assistant":
            groups[-1].append(message)
        else:
            groups.append([message])
    return head, groups


def _superseded(groups: list[list[Message]]) -> set[str]:
    """Ids of tool calls repeated later with the same arguments, and reads of a file that a
    later write_file replaced."""
    latest: dict[str, str] = {}
    stale: set[str] = set()
    for group in groups:
        for tool_call in group[0].get("tool_calls") or []:
            function = tool_call.get("function") or {}
            name = function.get("name", "")
            args = _arguments(function.get("arguments"))
            keys = [_key(name, args)] if name in REPEATABLE else []
            if name == "write_file" and isinstance(args, dict):
                keys.append(_key("read_file", {"path": args.get("path")}))
            for key in keys:
                if key in latest:
                    stale.add(latest.pop(key))
            if name in REPEATABLE:
                latest[keys[0]] = tool_call["id"]
    return stale


def _arguments(raw: str | None) -> object:
    try:
        return json.loads(raw or "{}")
    except (json.JSONDecodeError, RecursionError):  # the tool reports it to the model
        return raw


def _key(name: str, args: object) -> str:
    try:
        return name + ":" + json.dumps(args, sort_keys=True)
    except (RecursionError, TypeError, ValueError):  # nested too deeply: never a repeat
        return f"{name}:<{id(args)}>"


def _mark_stale(group: list[Message], stale: set[str]) -> list[Message]:
    out = []
    for message in group:
        content = str(message.get("content") or "")
        if message.get("tool_call_id") in stale and len(content) > ELIDE_OVER_CHARS:
            message = {**message, "content": SUPERSEDED}
        out.append(message)
    return out


def _mask(group: list[Message]) -> list[Message]:
    assistant = dict(group[0])
    if assistant.get("tool_calls"):
        assistant["tool_calls"] = [_mask_call(c) for c in assistant["tool_calls"]]
    out: list[Message] = [assistant]
    for message in group[1:]:
        content = str(message.get("content") or "")
        if len(content) > ELIDE_OVER_CHARS:
            first = content.splitlines()[0][:120] if content else ""
            content = f"[older output elided ({len(content)} chars): {first} ...; re-run if needed]"
        out.append({**message, "content": content})
    return out


def _mask_call(tool_call: Message) -> Message:
    function = dict(tool_call["function"])
    try:
        args = json.loads(function.get("arguments") or "{}")
    except (json.JSONDecodeError, RecursionError):
        args = None
    if isinstance(args, dict):
        shortened = {
            k: (v if not isinstance(v, str) or len(v) <= ELIDE_OVER_CHARS else "[elided]")
            for k, v in args.items()
        }
        function["arguments"] = json.dumps(shortened)
    elif len(function.get("arguments") or "") > ELIDE_OVER_CHARS:
        function["arguments"] = "{}"
    return {**tool_call, "function": function}


def _dropped_note(dropped: list[list[Message]]) -> str:
    names: list[str] = []
    for group in dropped:
        for tool_call in group[0].get("tool_calls") or []:
            names.append(tool_call["function"]["name"])
    recent = ", ".join(names[-12:])
    return (
        f"[{len(dropped)} earlier steps ({len(names)} tool calls, latest: {recent}) were removed "
        "to save space. The files on disk are current; re-read what you need.]"
    )
