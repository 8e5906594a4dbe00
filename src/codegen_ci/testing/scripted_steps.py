"""The script of the scripted model server: its steps and the answers built from them.

A step is a `Reply` (text and/or tool calls, made with `call`), an `HttpError`, `Raw` bytes, a
`Hang` before answering, a `Drop`ped connection, or a callable that builds a step from the
request. `completion` turns a reply into a chat-completions answer; `load_script` reads steps
from JSON. The server itself is `scripted_model.ScriptedModelServer`, which re-exports these.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    prompt_tokens: int | None = None  # default: request bytes / 4
    completion_tokens: int = 20
    usage: dict[str, Any] | None = None  # sent as it is, instead of computed usage


@dataclass
class HttpError:
    status: int
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Raw:
    body: bytes
    status: int = 200


@dataclass
class Hang:
    """Sleep before answering with `then` (for client timeouts)."""

    seconds: float
    then: Any = None


@dataclass
class Drop:
    """Close the connection without answering (a proxy reset, a crashed server)."""


Step = Reply | HttpError | Raw | Hang | Drop | Callable[[dict[str, Any]], Any]


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return (name, arguments)


def error_body(message: str, code: str | None = None, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def completion(
    reply: Reply, request: dict[str, Any], size: int, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{i}_{int(time.monotonic() * 1e6) % 10**8}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(reply.tool_calls)
    ]
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else size // 4
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": usage
        or {
            "prompt_tokens": prompt,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": prompt + reply.completion_tokens,
        },
    }


def load_script(data: list[dict[str, Any]]) -> list[Step]:
    """Steps from JSON: {"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}
    or {"status": 429, "headers": {...}, "body": {...}}."""
    steps: list[Step] = []
    for item in data:
        if "status" in item:
            steps.append(HttpError(item["status"], item.get("body", {}), item.get("headers", {})))
        else:
            calls = [(c["name"], c.get("arguments", {})) for c in item.get("tool_calls", [])]
            steps.append(Reply(item.get("content"), calls))
    return steps
