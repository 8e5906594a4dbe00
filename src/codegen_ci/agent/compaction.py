"""How a compaction shrinks the conversation: the system prompt and the task stay, every
harness message (reflections, notes) stays word for word, the most recent steps stay whole
(except outputs a later call superseded: the same call again, a later read of the same file
that covers the same lines, or a write or edit of that file), older steps keep their calls
with arguments and outputs elided, and steps older still become a one-line note. An earlier
note of the changed files' current text (`current_files_note`, which the agent adds after
every compaction) is reduced to one line: a fresh one follows.

Used only when `context.ContextWindow` compacts; between compactions requests only append.
"""

from __future__ import annotations

import json
from typing import Any

ELIDE_OVER_CHARS = 300
SUPERSEDED = (
    "[output superseded by a later identical call, a later read of the same lines or a later "
    "change of the file; see the newer one]"
)
# Calls whose output a later identical call makes stale.
REPEATABLE = {"read_file", "list_files", "search_files", "run_command"}
WRITES = {"write_file", "edit_file"}
READ_WINDOW = 400  # lines a read_file without end_line shows (read_tools.MAX_READ_LINES)
CURRENT_FILES = "[The files you changed, as they are now"
OLD_CURRENT_FILES = CURRENT_FILES + ": an older copy, replaced by a newer one below]"

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
        if _is_current_files(group[0]) and i < len(groups) - 1:
            out.append({**group[0], "content": OLD_CURRENT_FILES})
        elif i in full or group[0]["role"] != "assistant":
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
    """Ids of tool calls repeated later with the same arguments, reads of a file that a later
    read of it covers (the same lines or more), and reads of a file written or edited later."""
    latest: dict[str, str] = {}
    reads: dict[str, list[tuple[str, int, int]]] = {}  # path -> (call id, first, last line)
    stale: set[str] = set()
    for group in groups:
        for tool_call in group[0].get("tool_calls") or []:
            function = tool_call.get("function") or {}
            name = function.get("name", "")
            args = _arguments(function.get("arguments"))
            if name in REPEATABLE:
                key = _key(name, args)
                if key in latest:
                    stale.add(latest.pop(key))
                latest[key] = tool_call["id"]
            if not isinstance(args, dict) or not isinstance(args.get("path"), str):
                continue
            path = args["path"]
            earlier = reads.pop(path, [])
            if name in WRITES:
                stale.update(call_id for call_id, _, _ in earlier)
            elif name == "read_file":
                first, last = _lines(args)
                covered = [r for r in earlier if first <= r[1] and r[2] <= last]
                stale.update(call_id for call_id, _, _ in covered)
                reads[path] = [r for r in earlier if r not in covered]
                reads[path].append((tool_call["id"], first, last))
            else:
                reads[path] = earlier
    return stale


def _lines(args: dict[str, Any]) -> tuple[int, int]:
    """The lines a read_file call asks for (without end_line: one window)."""
    first, last = args.get("start_line"), args.get("end_line")
    first = first if isinstance(first, int) and first > 0 else 1
    last = last if isinstance(last, int) and last >= first else first + READ_WINDOW - 1
    return first, last


def _is_current_files(message: Message) -> bool:
    return message.get("role") == "user" and str(message.get("content") or "").startswith(
        CURRENT_FILES
    )


def changed_paths(messages: list[Message]) -> list[str]:
    """Paths the model wrote or edited with the file tools, in the order first changed."""
    paths: dict[str, None] = {}
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function") or {}
            if function.get("name") in WRITES:
                args = _arguments(function.get("arguments"))
                if isinstance(args, dict) and isinstance(args.get("path"), str):
                    paths[args["path"]] = None
    return list(paths)


def current_files_note(texts: dict[str, str]) -> str:
    """The harness note of the changed files' current text (`texts`: path -> the text as a
    read_file shows it, already fenced as data)."""
    body = "\n\n".join(f"{path}:\n{text}" for path, text in texts.items())
    return f"{CURRENT_FILES} (older reads of them were elided to save space)]\n\n{body}"


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
