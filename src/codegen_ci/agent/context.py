"""What the model is sent: an append-only conversation, compacted in one move when it grows
past a threshold.

Providers cache request prefixes and bill cached input at a fraction of the price, but only a
prefix byte-identical to an earlier request's. So between compactions every request is the
previous request plus the new messages: nothing in it changes, nothing is masked. When a
request would grow past `compact_at` characters of messages beyond the system prompt and task
(the head), the conversation is compacted once (`compact`: head, harness
messages and the latest steps kept, older outputs elided, the oldest steps reduced to a note)
down to about `compact_to`, and requests append again from there. A request is therefore
bounded by the head plus `compact_at` plus one step's output, at any number of steps.

The compaction points are a function of the messages alone (checked before every model step,
i.e. at every assistant message), so a resumed run replays the same ones. The stored
conversation (and the transcript) keep everything.

How a compaction shrinks the conversation (`compact`): the system prompt and the task stay,
every harness message (reflections, notes) stays word for word, the most recent steps stay
whole (except outputs a later call superseded: the same call again, a later read of the same
file that covers the same lines, or a write or edit of that file), older steps keep their calls
with arguments and outputs elided, and steps older still become a one-line note. An earlier
note of the changed files' current text (`current_files_note`, which the agent adds after every
compaction) is reduced to one line: a fresh one follows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

COMPACT_AT = 56_000  # at most: chars of messages beyond the head that trigger a compaction
COMPACT_TO = 20_000  # at most: what a compaction aims to leave beyond the head
# Both scale with the conversation's growth per step (chars per model step beyond the head):
# a compaction pays once to re-send what it leaves, a longer tail pays on every request.
STEPS_TO_COMPACT_AT = 12  # 42,000 for steps of 3.5 KB, 13,200 for steps of 1.1 KB
MIN_COMPACT_AT = 12_000
# (whole steps, masked steps) kept, tried in turn until the compacted form fits; the last
# rung applies whatever the size (a huge latest step or reflection)
KEEP_LADDER = ((6, 24), (6, 12), (4, 8), (3, 4), (1, 4))
CHARS_PER_TOKEN = 4  # rough, on the safe side for code and English
MAX_REQUEST_CHARS = 360_000  # ~90k tokens: fits every current tool-calling model's window
HEAD = 2  # system prompt and task

Message = dict[str, Any]


def size_of(messages: list[Message]) -> int:
    return len(json.dumps(messages, ensure_ascii=False))


class ContextWindow:
    """The request view of a growing conversation. Feed it the same (growing) list each step;
    a list that is not an extension of the last one is replayed from the start, with the same
    result."""

    def __init__(self, *, compact_at: int = COMPACT_AT, compact_to: int = COMPACT_TO) -> None:
        self.compact_at = compact_at
        self.compact_to = compact_to
        self.compacted_now = False  # whether the last `view` compacted
        self._reset()

    def _reset(self) -> None:
        self._last: Message | None = None  # the last message seen, to tell a new list
        self._sizes: list[int] = []  # json size of each message seen
        self._base: list[Message] = []  # what stands for messages[: self._cut]
        self._base_size = 0
        self._cut = 0
        self._settled = -1
        self.compactions = 0  # compaction points in the conversation so far

    def view(self, messages: list[Message]) -> list[Message]:
        seen = len(self._sizes)
        if len(messages) < seen or (seen and messages[seen - 1] is not self._last):
            self._reset()
        for i in range(len(self._sizes), len(messages)):
            if messages[i].get("role") == "assistant":
                self._settle(messages, i)  # a model step was sent on messages[:i]
            self._sizes.append(len(json.dumps(messages[i], ensure_ascii=False)))
        if messages:
            self._last = messages[-1]
        self.compacted_now = self._settle(messages, len(messages))
        return self._base + messages[self._cut :]

    def _settle(self, messages: list[Message], end: int) -> bool:
        """Compact messages[:end] if the request made on them passes the threshold."""
        if end == self._settled or end <= HEAD:
            return False
        self._settled = end
        # after a compaction that could not get down to `compact_to` (a huge latest step or
        # reflection), allow the same growth again rather than compacting on every step
        left = self._tail_size(self._cut) if self._cut else 0
        at, to = self._thresholds(messages, end)
        if self._tail_size(end) <= max(at, left + at - to):
            return False
        self._base = self._compacted(messages[:end], to)
        self._base_size = _joined(len(json.dumps(m, ensure_ascii=False)) for m in self._base)
        self._cut = end
        self.compactions += 1
        return True

    def _thresholds(self, messages: list[Message], end: int) -> tuple[int, int]:
        """(compact at, compact to) for messages[:end]: `STEPS_TO_COMPACT_AT` steps of the
        average growth so far, within [`MIN_COMPACT_AT`, `compact_at`], and `compact_to`
        scaled alike."""
        steps = sum(1 for m in messages[HEAD:end] if m.get("role") == "assistant")
        growth = sum(self._sizes[HEAD:end]) / max(1, steps)
        at = min(self.compact_at, max(MIN_COMPACT_AT, round(STEPS_TO_COMPACT_AT * growth)))
        return at, round(self.compact_to * at / self.compact_at)

    def _tail_size(self, end: int) -> int:
        """Chars of the view of messages[:end] beyond the head (separators included)."""
        if self._cut:
            base = self._base_size
            rest = self._sizes[self._cut : end]
        else:
            base, rest = 0, self._sizes[:end]
        return base + sum(rest) + 2 * len(rest) - sum(self._sizes[:HEAD]) - 2 * HEAD

    def _compacted(self, messages: list[Message], compact_to: int) -> list[Message]:
        """`compact` with ever fewer whole steps until it fits `compact_to` beyond the head
        (the latest step always stays whole)."""
        head = sum(self._sizes[:HEAD]) + 2 * HEAD
        parts = _parts(messages)  # the same for every rung: grouped and read once
        for keep_full, keep_masked in KEEP_LADDER:
            view = _compact(parts, keep_full, keep_masked)
            if size_of(view) - head <= compact_to:
                return view
        return view


def _joined(sizes: Iterable[int]) -> int:
    values = list(sizes)
    return sum(values) + 2 * len(values)


def request_view(messages: list[Message]) -> list[Message]:
    """The view of `messages` replayed from the start (tests and tools that hold no window)."""
    return ContextWindow().view(messages)


# --- compaction ----------------------------------------------------------------------------

ELIDE_OVER_CHARS = 300
SUPERSEDED = (
    "[output superseded by a later identical call, a later read of the same lines or a later "
    "change of the file; see the newer one]"
)
# Calls whose output a later identical call makes stale.
REPEATABLE = {"read_file", "list_files", "search_files", "run_command"}
WRITES = {"write_file", "edit_file"}
READ_WINDOW = 400  # lines a read_file without end_line shows (tools.MAX_READ_LINES)
CURRENT_FILES = "[The files you changed, as they are now"
OLD_CURRENT_FILES = CURRENT_FILES + ": an older copy, replaced by a newer one below]"


def compact(messages: list[Message], keep_full: int, keep_masked: int) -> list[Message]:
    """The messages with all but the `keep_full` latest steps masked and all but the
    `keep_masked` steps before those dropped behind a note."""
    return _compact(_parts(messages), keep_full, keep_masked)


# (head, groups, superseded call ids) of a conversation: what `compact` needs of it whatever
# it keeps, so that trying several rungs of `KEEP_LADDER` reads the tool calls once
_Parts = tuple[list[Message], list[list[Message]], set[str]]


def _parts(messages: list[Message]) -> _Parts:
    head, groups = _groups(messages)
    return head, groups, _superseded(groups)


def _compact(parts: _Parts, keep_full: int, keep_masked: int) -> list[Message]:
    head, groups, stale = parts
    steps = [i for i, g in enumerate(groups) if g[0]["role"] == "assistant"]
    full = set(steps[-keep_full:]) if keep_full else set()
    masked = set(steps[-(keep_full + keep_masked) :]) - full
    dropped = [groups[i] for i in steps if i not in full and i not in masked]
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
