"""A deterministic in-process model: the `Model` Protocol (agent/model.py) answered from a
list of scripted replies, with every request recorded (like mini-swe-agent's
DeterministicModel). Tests hand it to a run through `RunRequest.model_factory` (`run.start`,
`run.resume`, `batch_command`) or `RunContext.model_factory` (`pipeline.execute`); nothing is
patched and no process or socket is involved. When the script runs out it answers with plain
text and no tool calls, which ends the model's turn (as `scripted_model`'s server does).

    model = DeterministicModel([step(call("edit_file", path=..., old_text=..., new_text=...)),
                                step("done")])
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from codegen_ci.agent.model import ModelReply, ToolCall


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """One tool call of a scripted step."""
    return name, arguments


def step(
    content: str | None = None, *calls: tuple[str, dict[str, Any]], prompt_tokens: int = 100
) -> ModelReply:
    """A scripted reply: text and/or tool calls (ids are numbered when answered)."""
    tool_calls = [ToolCall("", name, json.dumps(args)) for name, args in calls]
    return ModelReply(content, tool_calls, prompt_tokens=prompt_tokens, completion_tokens=20)


@dataclass
class DeterministicModel:
    """Answers `complete` with the next scripted reply; `requests` holds every request's
    messages as sent (copied), so a test can read what the model was told."""

    script: list[ModelReply]
    name: str = "deterministic"
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ModelReply:
        self.requests.append(copy.deepcopy(messages))
        n = len(self.requests)
        if not self.script:
            return ModelReply("(script done)", [], prompt_tokens=100, completion_tokens=5)
        reply = self.script.pop(0)
        calls = [
            ToolCall(f"call_{n}_{i}", c.name, c.arguments) for i, c in enumerate(reply.tool_calls)
        ]
        return ModelReply(
            reply.content,
            calls,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cached_tokens=reply.cached_tokens,
            cache_write_tokens=reply.cache_write_tokens,
        )

    @property
    def calls(self) -> int:
        return len(self.requests)
