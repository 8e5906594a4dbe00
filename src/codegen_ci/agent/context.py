"""What the model is sent: an append-only conversation, compacted in one move when it grows
past a threshold.

Providers cache request prefixes and bill cached input at a fraction of the price, but only a
prefix byte-identical to an earlier request's. So between compactions every request is the
previous request plus the new messages: nothing in it changes, nothing is masked. When a
request would grow past `compact_at` characters of messages beyond the system prompt and task
(the head), the conversation is compacted once (`context_compact.compact`: head, harness
messages and the latest steps kept, older outputs elided, the oldest steps reduced to a note)
down to about `compact_to`, and requests append again from there. A request is therefore
bounded by the head plus `compact_at` plus one step's output, at any number of steps.

The compaction points are a function of the messages alone (checked before every model step,
i.e. at every assistant message), so a resumed run replays the same ones. The stored
conversation (and the transcript) keep everything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from codegen_ci.agent.compaction import compact

COMPACT_AT = 56_000  # chars of messages beyond the head that trigger a compaction
COMPACT_TO = 20_000  # what a compaction aims to leave beyond the head
KEEP_FULL_STEPS = 6
KEEP_MASKED_STEPS = 24
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
        if self._tail_size(end) <= max(self.compact_at, left + self.compact_at - self.compact_to):
            return False
        self._base = self._compacted(messages[:end])
        self._base_size = _joined(len(json.dumps(m, ensure_ascii=False)) for m in self._base)
        self._cut = end
        self.compactions += 1
        return True

    def _tail_size(self, end: int) -> int:
        """Chars of the view of messages[:end] beyond the head (separators included)."""
        if self._cut:
            base = self._base_size
            rest = self._sizes[self._cut : end]
        else:
            base, rest = 0, self._sizes[:end]
        return base + sum(rest) + 2 * len(rest) - sum(self._sizes[:HEAD]) - 2 * HEAD

    def _compacted(self, messages: list[Message]) -> list[Message]:
        """`compact` with ever fewer whole steps until it fits `compact_to` beyond the head
        (the latest step always stays whole)."""
        head = sum(self._sizes[:HEAD]) + 2 * HEAD
        keep_full, keep_masked = KEEP_FULL_STEPS, KEEP_MASKED_STEPS
        while True:
            view = compact(messages, keep_full, keep_masked)
            if keep_full == 1 or size_of(view) - head <= self.compact_to:
                return view
            keep_full = max(1, keep_full // 2)  # 6 -> 3 -> 1
            keep_masked = max(4, keep_masked // 2)


def _joined(sizes: Iterable[int]) -> int:
    values = list(sizes)
    return sum(values) + 2 * len(values)


def request_view(messages: list[Message]) -> list[Message]:
    """The view of `messages` replayed from the start (tests and tools that hold no window)."""
    return ContextWindow().view(messages)
