"""The agent loop: one model turn is a series of steps (model call, then its tool calls) that
ends when the model answers without tool calls or the step limit (tool calls per turn) is
reached. Budgets are checked before every model call, and the wall clock also before every
tool call; reaching one raises `LimitReached`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codegen_ci.context import CHARS_PER_TOKEN, MAX_REQUEST_CHARS, ContextWindow, size_of
from codegen_ci.errors import InputError
from codegen_ci.llm import Model, ModelReply
from codegen_ci.pricing import billed_tokens, cost_usd, price_for
from codegen_ci.report import Round, Usage
from codegen_ci.spec import Limits, ModelSettings
from codegen_ci.tools import Toolbox


class LimitReached(Exception):
    """A budget (tokens, cost, wall clock) is used up; `reason` goes into the report."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class AgentObserver(Protocol):
    def model_call(self, step: int) -> None: ...
    def tool_call(self, name: str, arguments: str, result: str) -> None: ...


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
        return LimitReached("budget", f"wall clock limit of {self.limits.timeout_minutes:g} "
                            f"min reached ({minutes:.1f} min)")  # fmt: skip

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
                "budget",
                f"token budget: {used} used, next request ~{next_tokens} "
                f"more, limit {self.limits.max_tokens}",
            )
        limit = self.limits.max_billed_tokens
        if limit is not None:
            billed = self.usage.billed_tokens - self._billed_before
            upcoming = billed_tokens(self.model, next_tokens, 0, next_cached)
            if billed + upcoming > limit:
                raise LimitReached(
                    "budget",
                    f"billed-token budget: {billed} used, next request ~{upcoming} more, "
                    f"limit {limit}",
                )
        if self.limits.max_cost_usd is not None:
            spent = (self.usage.cost_usd or 0.0) - self._cost_before
            upcoming_usd = cost_usd(self.model, next_tokens, 0, next_cached) or 0.0
            if spent + upcoming_usd > self.limits.max_cost_usd:
                raise LimitReached(
                    "budget", f"cost budget: ${spent:.4f} used of ${self.limits.max_cost_usd:g}"
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


class Conversation:
    """All messages, appended to `transcript.jsonl` as they happen (redacted)."""

    def __init__(
        self,
        transcript: Path,
        redact: Callable[[str], str],
        messages: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.messages: list[dict[str, Any]] = list(messages)
        self._transcript = transcript
        self._redact = redact
        transcript.parent.mkdir(parents=True, exist_ok=True)

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        line = json.dumps({"ts": round(time.time(), 3), **message}, ensure_ascii=False)
        with self._transcript.open("a", encoding="utf-8") as f:
            f.write(self._redact(line) + "\n")

    @classmethod
    def load(cls, transcript: Path, redact: Callable[[str], str]) -> Conversation:
        messages = []
        for line in transcript.read_text(encoding="utf-8").splitlines():
            if line.strip():
                data = json.loads(line)
                data.pop("ts", None)
                messages.append(data)
        return cls(transcript, redact, _complete_steps(messages))

    def resume_note(self, last_rounds: Sequence[Round] = ()) -> None:
        """Tell the model the run was stopped, and what the last validation round found."""
        lines = ["[The run was stopped and is now resumed. The files on disk are current; "
                 "continue the task.]"]  # fmt: skip
        for rnd in last_rounds:
            if not rnd.passed and rnd.failures:
                lines.append(f"Validation round {rnd.iteration} failed:")
                lines += [f"- {f.id}: {f.message[:300]}" for f in rnd.failures[:20]]
        self.add({"role": "user", "content": "\n".join(lines)})


def _complete_steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop a trailing assistant step whose tool results were cut off by an interruption."""
    for i in range(len(messages) - 1, -1, -1):
        calls = messages[i].get("tool_calls")
        if messages[i]["role"] == "assistant" and calls:
            answered = {m.get("tool_call_id") for m in messages[i + 1 :] if m["role"] == "tool"}
            if not {c["id"] for c in calls} <= answered:
                return messages[:i]
            break
    return messages


@dataclass
class Agent:
    model: Model
    toolbox: Toolbox
    conversation: Conversation
    budget: Budget
    observer: AgentObserver
    redact: Callable[[str], str]
    max_steps: int = 60
    window: ContextWindow = field(default_factory=ContextWindow)
    _last_size: int = field(default=0, init=False)  # chars of the previous request

    def turn(self) -> int:
        """Let the model work until it answers without tool calls; returns the tool calls run.
        `max_steps` bounds the tool calls of the turn, however many one reply asks for."""
        tools = self.toolbox.schemas()
        steps = requests = 0
        while steps < self.max_steps:
            requests += 1
            view = self.window.view(self.conversation.messages)
            size = size_of(view)
            if size > MAX_REQUEST_CHARS:
                detail = f"the next request ({size} chars) would not fit the context window"
                raise LimitReached("budget", detail + ", even with old outputs elided")
            # between compactions the request starts with the previous one, byte for byte
            reused = 0 if self.window.compacted_now else self._last_size
            self.budget.check(size, reused)
            if self.window.compacted_now:
                self.budget.usage.compactions += 1
            self._last_size = size
            self.observer.model_call(requests)
            reply = self.model.complete(view, tools)
            self.budget.add(reply)
            message = reply.as_message()
            if message.get("content"):
                message["content"] = self.redact(message["content"])
            self.conversation.add(message)
            if not reply.tool_calls:
                return steps
            steps = self._run_tools(reply, steps)
        self.conversation.add(
            {
                "role": "user",
                "content": f"[step limit of {self.max_steps} tool-call steps reached for this "
                "round; the harness now runs validation]",
            }
        )
        return steps

    def _run_tools(self, reply: ModelReply, steps: int) -> int:
        """Run the reply's tool calls while the step and wall-clock budgets allow; every call
        gets a result (the API wants one per call), those not run say why."""
        stop: LimitReached | None = None
        for tool_call in reply.tool_calls:
            stop = stop or self.budget.clock_exceeded()
            if stop is not None:
                result = f"Not run: {stop.detail}; the run stops."
            elif steps >= self.max_steps:
                result = (f"Not run: the step limit of {self.max_steps} tool calls for this "
                          "round was reached; validation runs next.")  # fmt: skip
            else:
                steps += 1
                result = self.redact(self.toolbox.call(tool_call.name, tool_call.arguments))
                self.observer.tool_call(tool_call.name, tool_call.arguments, result)
            self.conversation.add({"role": "tool", "tool_call_id": tool_call.id,
                                   "content": result})  # fmt: skip
        if stop is not None:
            raise stop
        return steps
