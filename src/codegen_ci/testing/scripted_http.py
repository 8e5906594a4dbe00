"""The HTTP side of the scripted model server: routes, and the answer to each step.

`handler_for` builds the request handler class `ScriptedModelServer` serves with; the server
gives it the next step of the script (`_next`) and builds the answer to a reply (`_completion`).
"""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from codegen_ci.testing.scripted_steps import Drop, Hang, HttpError, Raw, Reply, Step, error_body


class ScriptSource(Protocol):
    def _next(self, body: dict[str, Any], size: int) -> Step: ...

    def _completion(self, reply: Reply, body: dict[str, Any], size: int) -> dict[str, Any]: ...


def handler_for(server: ScriptSource) -> type[BaseHTTPRequestHandler]:
    """A request handler class that answers every request from `server`'s script."""

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
