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
        for keep_full, keep_masked in KEEP_LADDER:
            view = compact(messages, keep_full, keep_masked)
            if size_of(view) - head <= compact_to:
                return view
        return view


def _joined(sizes: Iterable[int]) -> int:
    values = list(sizes)
    return sum(values) + 2 * len(values)


def request_view(messages: list[Message]) -> list[Message]:
    """The view of `messages` replayed from the start (tests and tools that hold no window)."""
    return ContextWindow().view(messages)
