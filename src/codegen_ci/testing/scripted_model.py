"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests, benchmarks and newcomers drive the real openai SDK against it: each request to
`POST /v1/chat/completions` takes the next step of the script (the steps are in `scripted_steps`
and re-exported here). Every request body is recorded. When the script runs out the server
answers with plain text and no tool calls, which ends the model's turn. `add_for(model, ...)`
gives one model name its own script (several candidates, each with its own model, can then
talk to one server at once); requests for other models take the shared script.

With `cache=PromptCache()` the server reports usage as a caching provider does (prompt tokens
from the request's size, cached tokens from the longest block-aligned prefix shared with an
earlier request; see `provider_cache`), in `usage_style`'s field names ("openai",
"deepseek" or "anthropic"). `Reply.usage` replaces the usage of one answer outright.

    python -m codegen_ci.testing.scripted_model script.json   # prints the base URL, serves
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable
from http.server import ThreadingHTTPServer
from typing import Any

from codegen_ci.testing.provider_cache import PromptCache, UsageStyle, usage_fields
from codegen_ci.testing.scripted_http import handler_for
from codegen_ci.testing.scripted_steps import (
    Drop,
    Hang,
    HttpError,
    Raw,
    Reply,
    Step,
    call,
    completion,
    error_body,
    load_script,
)

__all__ = [
    "Drop",
    "Hang",
    "HttpError",
    "Raw",
    "Reply",
    "ScriptedModelServer",
    "Step",
    "call",
    "completion",
    "error_body",
    "load_script",
    "main",
]


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
        self._httpd = ThreadingHTTPServer((host, 0), handler_for(self))
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
