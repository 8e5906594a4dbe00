"""A GitHub REST API double over real HTTP on 127.0.0.1, for tests and benchmarks.

It speaks the JSON shapes of the endpoints codegen-ci uses, well enough for the real PyGithub
client. State lives in plain attributes (`issues`, `comments`, `permissions`, ...) that tests
seed and inspect; every request is recorded in `requests` so a test can assert that nothing
was written. `inject()` queues canned responses (502s, a secondary rate limit, ...) for a
method and path pattern, consumed before the normal handler answers. `send_nulls = True` makes
it send `null` for every field GitHub's schema lets be null and that has no value (a pull
request's `requested_reviewers`, `requested_teams`, `body`, ...), as GitHub may.

    with GitHubDouble() as gh:
        gh.permissions["alice"] = "write"
        ...  # point GITHUB_API_URL at gh.url
        assert gh.writes() == []
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from codegen_ci.testing.github_data import GitHubData
from codegen_ci.testing.github_reviews import REVIEW_ROUTES
from codegen_ci.testing.github_routes import ROUTES
from codegen_ci.testing.github_runs import RUN_ROUTES
from codegen_ci.testing.github_shapes import error, with_nulls
from codegen_ci.testing.github_state import (
    DOCS,
    SECONDARY_RATE_LIMIT,
    Canned,
    Json,
    RecordedRequest,
    Reply,
)


class GitHubDouble(GitHubData):
    """The data of `GitHubData`, served over HTTP on 127.0.0.1."""

    def __init__(
        self,
        repository: str = "octo-org/hello",
        *,
        default_branch: str = "main",
        server_url: str = "https://github.com",
        api_prefix: str = "",
        actor: str = "github-actions[bot]",
        token: str | None = None,
    ) -> None:
        super().__init__(repository, default_branch=default_branch, server_url=server_url,
                         api_prefix=api_prefix, actor=actor, token=token)  # fmt: skip
        self.send_nulls = False  # null, not [] or "", for nullable fields without a value
        self.requests: list[RecordedRequest] = []
        self._faults: list[tuple[str, str, Canned, int | None]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API base URL, as GitHub puts it in GITHUB_API_URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.api_prefix}"

    def start(self) -> GitHubDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> GitHubDouble:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- inspection -----------------------------------------------------------------------

    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method != "GET"]

    def inject(
        self,
        method: str,
        pattern: str,
        status: int,
        body: Json = None,
        headers: dict[str, str] | None = None,
        times: int | None = 1,
    ) -> None:
        """Answer the next `times` requests matching (method, glob over the path) with a
        canned response; `times=None` answers all of them."""
        body = {"message": f"HTTP {status}"} if body is None else body
        self._faults.append((method, pattern, Canned(status, body, headers or {}), times))

    def inject_secondary_rate_limit(self, method: str, pattern: str, retry_after: int = 1) -> None:
        body = {"message": SECONDARY_RATE_LIMIT, "documentation_url": f"{DOCS}/rate-limit"}
        self.inject(method, pattern, 403, body, {"Retry-After": str(retry_after)})

    # -- request dispatch -----------------------------------------------------------------

    def handle(self, method: str, raw_path: str, body: Json, headers: dict[str, str]) -> Reply:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path.removeprefix(self.api_prefix) or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self._lock:
            self.requests.append(RecordedRequest(method, path, query, body, headers))
            canned = self._take_fault(method, path)
            if canned is not None:
                return canned.status, canned.body, canned.headers
            signed = path.startswith("/_blobs/")  # storage behind a download: a signed URL
            if (
                self.token is not None
                and not signed
                and headers.get("authorization")
                not in (
                    f"token {self.token}",
                    f"Bearer {self.token}",
                )
            ):
                return error(401, "Bad credentials")
            for verb, pattern, handler in [*ROUTES, *REVIEW_ROUTES, *RUN_ROUTES]:
                match = re.fullmatch(pattern, path)
                if verb == method and match:
                    args = [urllib.parse.unquote(a) for a in match.groups()]
                    try:
                        return handler(self, args, query, body or {})
                    except Exception as exc:  # a bug in the double must not hang the client
                        return error(500, f"github double: {exc!r}")
            return error(404, "Not Found")

    def _take_fault(self, method: str, path: str) -> Canned | None:
        for index, (verb, pattern, canned, times) in enumerate(self._faults):
            if verb == method and fnmatch.fnmatchcase(path, pattern):
                if times is not None:
                    if times <= 1:
                        del self._faults[index]
                    else:
                        self._faults[index] = (verb, pattern, canned, times - 1)
                return canned
        return None


def _handler_for(double: GitHubDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small JSON answers must not wait for a delayed ACK

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip() else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload, extra = double.handle(self.command, self.path, body, headers)
            payload = with_nulls(payload) if double.send_nulls and status < 300 else payload
            # A str payload goes out as is: GitHub's proxies answer some 5xx with HTML.
            if isinstance(payload, bytes):  # a download: an artifact's zip, a job's log
                data, kind = payload, "application/octet-stream"
            else:
                text = payload if isinstance(payload, str) else json.dumps(payload)
                data = b"" if payload is None else text.encode()
                kind = "text/html" if isinstance(payload, str) else "application/json"
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
