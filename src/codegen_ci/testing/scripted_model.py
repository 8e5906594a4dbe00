"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests, benchmarks and newcomers drive the real openai SDK against it: each request to
`POST /v1/chat/completions` takes the next step of the script. A step is a `Reply` (text
and/or tool calls, made with `call`), an `HttpError`, `Raw` bytes, a `Hang` before answering,
a `Drop`ped connection, or a callable that builds a step from the request; `load_script` reads
steps from JSON. Every request body is recorded. When the script runs out the server answers
with plain text and no tool calls, which ends the model's turn. `add_for(model, ...)` gives one
model name its own script (several candidates, each with its own model, can then talk to one
server at once); requests for other models take the shared script.

With `cache=PromptCache()` the server reports usage as a caching provider does (prompt tokens
from the request's size, cached tokens from the longest block-aligned prefix shared with an
earlier request; see `provider_cache`), in `usage_style`'s field names ("openai",
"deepseek" or "anthropic"). `Reply.usage` replaces the usage of one answer outright.

    python -m codegen_ci.testing.scripted_model script.json   # prints the base URL, serves
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from codegen_ci.testing.provider_cache import PromptCache, UsageStyle, usage_fields


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


class ScriptedModelServer:
    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        host: str = "127.0.0.1",
        cache: PromptCache | None = None,
        usage_style: UsageStyle = "openai",
    ) -> None:
        self.script: list[Step] = list(script)
        self.scripts: dict[str, list[Step]] = {}  # per model name (`add_for`)
        self.cache = cache
        self.usage_style: UsageStyle = usage_style
        self.usages: list[dict[str, Any]] = []  # the usage of every completion sent
        self.requests: list[dict[str, Any]] = []
        self.request_sizes: list[int] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ScriptedModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def add(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def add_for(self, model: str, *steps: Step) -> None:
        """Steps only requests naming `model` take (its own script)."""
        with self._lock:
            self.scripts.setdefault(model, []).extend(steps)

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        """Requests that named `model` and offered tools: that model's conversation steps."""
        return [r for r in self.tool_requests if r.get("model") == model]

    @property
    def tool_requests(self) -> list[dict[str, Any]]:
        """Requests that offered tools: the conversation's model steps."""
        return [r for r in self.requests if r.get("tools")]

    def _next(self, body: dict[str, Any], size: int) -> Step:
        with self._lock:
            self.requests.append(body)
            self.request_sizes.append(size)
            own = self.scripts.get(str(body.get("model")))
            script = own if own is not None else self.script
            step: Any = script.pop(0) if script else Reply("(script exhausted)")
        while callable(step) and not isinstance(step, Reply | HttpError | Raw | Hang | Drop):
            step = step(body)
        return step  # type: ignore[no-any-return]

    def _completion(self, reply: Reply, body: dict[str, Any], size: int) -> dict[str, Any]:
        with self._lock:
            usage = reply.usage
            if usage is None and self.cache is not None:
                prompt, cached, written = self.cache.lookup(body)
                if reply.prompt_tokens is not None:
                    prompt = reply.prompt_tokens
                usage = usage_fields(
                    prompt, cached, written, reply.completion_tokens, self.usage_style
                )
            answer = completion(reply, body, size, usage)
            self.usages.append(answer["usage"])
        return answer


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class: every request is answered from `server`'s script."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small JSON answers must not wait ~40 ms for an ACK

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "scripted"}]})
            else:
                self._json(404, error_body("not found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, error_body("not found"))
                return
            body = json.loads(raw or b"{}")
            self._answer(server._next(body, len(raw)), body, len(raw))

        def _answer(self, step: Any, body: dict[str, Any], size: int) -> None:
            if isinstance(step, Hang):
                time.sleep(step.seconds)
                step = step.then or Reply("(after hang)")
            if isinstance(step, Drop):
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif isinstance(step, HttpError):
                payload = step.body if step.body else error_body(f"HTTP {step.status}")
                self._json(step.status, payload, step.headers)
            elif isinstance(step, Raw):
                self._send(step.status, step.body, {"content-type": "application/json"})
            else:
                self._json(200, server._completion(step, body, size))

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self._send(status, data, {"content-type": "application/json", **(headers or {})})

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a timeout test)

    return Handler


def main(argv: list[str]) -> None:  # pragma: no cover - manual use
    script = load_script(json.loads(open(argv[0]).read())) if argv else []  # noqa: SIM115
    with ScriptedModelServer(script) as server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
