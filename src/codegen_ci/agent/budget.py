"""The whole-run budgets (tokens, billed tokens, cost, wall clock) and `LimitReached`, raised
when one is used up. Checked by the agent loop before every model call (and the wall clock
also before every tool call).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from codegen_ci.agent.context import CHARS_PER_TOKEN
from codegen_ci.agent.model import ModelReply, billed_tokens, cost_usd, price_for
from codegen_ci.errors import InputError
from codegen_ci.report import Reason, Usage
from codegen_ci.spec.model import Limits, ModelSettings


class LimitReached(Exception):
    """A budget (tokens, cost, wall clock) is used up; `reason` goes into the report."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class Budget:
    """The whole-run limits, checked before every model call against what the next request
    would add (its size in tokens estimated from characters). A resumed run starts its
    budgets afresh; `usage` (and so the report) stays cumulative."""

    limits: Limits
    model: ModelSettings
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self._tokens_before = self.usage.total_tokens
        self._cost_before = self.usage.cost_usd or 0.0
        self._billed_before = self.usage.billed_tokens
        if self.limits.max_cost_usd is not None and price_for(self.model) is None:
            raise InputError(
                f"limits.max_cost_usd needs prices for model {self.model.name!r}; "
                "set model.price: {prompt: ..., completion: ...} (US$ per million tokens)"
            )

    def remaining_s(self) -> float:
        """Seconds left of the wall-clock budget (a command's timeout is cut to it)."""
        return self.limits.timeout_minutes * 60 - (time.monotonic() - self.started)

    def clock_exceeded(self) -> LimitReached | None:
        if self.remaining_s() > 0:
            return None
        minutes = (time.monotonic() - self.started) / 60
        limit = self.limits.timeout_minutes
        return LimitReached(
            Reason.BUDGET, f"wall clock limit of {limit:g} min reached ({minutes:.1f} min)"
        )

    def check(self, next_request_chars: int = 0, reused_chars: int = 0) -> None:
        """Raise `LimitReached` if the next request (of which `reused_chars` repeat the
        previous request's prefix, so a caching provider bills them as cached) would pass a
        budget."""
        if (over := self.clock_exceeded()) is not None:
            raise over
        next_tokens = next_request_chars // CHARS_PER_TOKEN
        next_cached = min(reused_chars, next_request_chars) // CHARS_PER_TOKEN
        used = self.usage.total_tokens - self._tokens_before
        if used + next_tokens > self.limits.max_tokens:
            raise LimitReached(
                Reason.BUDGET,
                f"token budget: {used} used, next request ~{next_tokens} "
                f"more, limit {self.limits.max_tokens}",
            )
        limit = self.limits.max_billed_tokens
        if limit is not None:
            billed = self.usage.billed_tokens - self._billed_before
            upcoming = billed_tokens(self.model, next_tokens, 0, next_cached)
            if billed + upcoming > limit:
                raise LimitReached(
                    Reason.BUDGET,
                    f"billed-token budget: {billed} used, next request ~{upcoming} more, "
                    f"limit {limit}",
                )
        if self.limits.max_cost_usd is not None:
            spent = (self.usage.cost_usd or 0.0) - self._cost_before
            upcoming_usd = cost_usd(self.model, next_tokens, 0, next_cached) or 0.0
            if spent + upcoming_usd > self.limits.max_cost_usd:
                raise LimitReached(
                    Reason.BUDGET,
                    f"cost budget: ${spent:.4f} used of ${self.limits.max_cost_usd:g}",
                )

    def add(self, reply: ModelReply) -> None:
        u = self.usage
        u.prompt_tokens += reply.prompt_tokens
        u.cached_tokens += reply.cached_tokens
        u.cache_write_tokens += reply.cache_write_tokens
        u.completion_tokens += reply.completion_tokens
        u.requests += 1
        tokens = (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.cache_write_tokens)
        u.cost_usd = cost_usd(self.model, *tokens)
        u.billed_tokens = billed_tokens(self.model, *tokens)
