"""The agent loop: one model turn is a series of steps (model call, then its tool calls) that
ends when the model answers without tool calls or the step limit (tool calls per turn) is
reached. Budgets are checked before every model call, and the wall clock also before every
tool call; reaching one raises `LimitReached`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from codegen_ci.agent.budget import Budget, LimitReached
from codegen_ci.agent.context import (
    MAX_REQUEST_CHARS,
    ContextWindow,
    changed_paths,
    current_files_note,
    size_of,
)
from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.model import Model, ModelReply
from codegen_ci.agent.tools import ReadFileArgs, Toolbox, ToolError
from codegen_ci.report import Reason
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted, fence
from codegen_ci.workspace.paths import PathRefused


class AgentObserver(Protocol):
    def model_call(self, step: int) -> None: ...
    def tool_call(self, name: str, arguments: str, result: str) -> None: ...


@dataclass
class Agent:
    model: Model
    toolbox: Toolbox
    conversation: Conversation
    budget: Budget
    observer: AgentObserver
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
            compacted = self.window.compacted_now
            if compacted and self._note_current_files():
                view = self.window.view(self.conversation.messages)
            size = size_of(view)
            if size > MAX_REQUEST_CHARS:
                detail = f"the next request ({size} chars) would not fit the context window"
                raise LimitReached(Reason.BUDGET, detail + ", even with old outputs elided")
            # between compactions the request starts with the previous one, byte for byte
            reused = 0 if compacted else self._last_size
            self.budget.check(size, reused)
            if compacted:
                self.budget.usage.compactions += 1
            self._last_size = size
            self.observer.model_call(requests)
            reply = self.model.complete(view, tools)
            self.budget.add(reply)
            message = reply.as_message()
            if message.get("content"):
                message["content"] = REDACTOR.redact(message["content"])
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

    def _note_current_files(self) -> bool:
        """After a compaction (which elides older reads of changed files), add the current
        text of every file the model changed, so that it never works from a stale copy.
        False when there is nothing to add."""
        messages = self.conversation.messages
        paths = changed_paths(messages)
        if not paths:
            return False
        texts: dict[str, str] = {}
        for path in paths:
            try:
                text = self.toolbox.read_file(ReadFileArgs(path=path))
            except (ToolError, PathRefused, OSError) as exc:
                text = f"(cannot be read now: {exc})"
            texts[path] = fence(f"file {path}", Untrusted(REDACTOR.redact(text)))
        self.conversation.add({"role": "user", "content": current_files_note(texts)})
        return True

    def _run_tools(self, reply: ModelReply, steps: int) -> int:
        """Run the reply's tool calls while the step and wall-clock budgets allow; every call
        gets a result (the API wants one per call), those not run say why."""
        stop: LimitReached | None = None
        for tool_call in reply.tool_calls:
            stop = stop or self.budget.clock_exceeded()
            if stop is not None:
                result = f"Not run: {stop.detail}; the run stops."
            elif steps >= self.max_steps:
                result = (
                    f"Not run: the step limit of {self.max_steps} tool calls for this "
                    "round was reached; validation runs next."
                )
            else:
                steps += 1
                result = REDACTOR.redact(self.toolbox.call(tool_call.name, tool_call.arguments))
                self.observer.tool_call(tool_call.name, tool_call.arguments, result)
            self.conversation.add({"role": "tool", "tool_call_id": tool_call.id, "content": result})
        if stop is not None:
            raise stop
        return steps
