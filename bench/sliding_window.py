"""The previous context policy, kept only so bench/cache_cost.py can compare billed input
against it; not used by the tool.

It was a sliding window: on every step, the latest `keep_full` steps in full, the
`keep_masked` before them with their outputs masked, older ones behind a one-line note,
shrinking until the request fits `max_chars`. The masking itself is exactly what
`codegen_ci.agent.context.compact` does today (the new policy runs it only when a request
passes its threshold), so the old policy is that function applied on every step.
"""

from __future__ import annotations

import json
from typing import Any

from codegen_ci.agent.context import compact

KEEP_FULL_STEPS = 6
KEEP_MASKED_STEPS = 24
MAX_REQUEST_CHARS = 360_000  # ~90k tokens, as the old policy had it

Message = dict[str, Any]


def request_view(
    messages: list[Message],
    *,
    keep_full: int = KEEP_FULL_STEPS,
    keep_masked: int = KEEP_MASKED_STEPS,
    max_chars: int = MAX_REQUEST_CHARS,
) -> list[Message]:
    """The messages to send, shrinking until the request fits `max_chars` (or until there is
    nothing left to shrink: then the caller sees a request larger than `max_chars`)."""
    while True:
        view = compact(messages, keep_full, keep_masked)
        if keep_full == 0 or size_of(view) <= max_chars:
            return view
        keep_full //= 2  # 6 -> 3 -> 1 -> 0
        keep_masked = max(4, keep_masked // 2)


def size_of(messages: list[Message]) -> int:
    return len(json.dumps(messages, ensure_ascii=False))
