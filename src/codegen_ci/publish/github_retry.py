"""When and how long the GitHub publisher retries, and how a failure that survives reads.

A 5xx, a rate limit or a dropped connection is retried, honouring GitHub's named wait
(Retry-After, the rate-limit reset) unless it is longer than `max_wait`; anything else fails
at once. What escapes the retries becomes `GitHubError` (exit 3).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from github import GithubException
from tenacity import RetryCallState, Retrying, stop_after_attempt

from codegen_ci.errors import GitHubError

T = TypeVar("T")


class RetryPolicy:
    def __init__(self, retries: int, backoff: float, max_wait: float) -> None:
        """`retries`: further attempts after the first; `backoff`: first wait in seconds,
        doubled each time, unless GitHub names a wait; a named wait longer than `max_wait`
        fails at once."""
        self._retries = retries
        self._backoff = backoff
        self._max_wait = max_wait

    def run(self, what: str, api_url: str, operation: Callable[[], T]) -> T:
        """Run one operation with retries; turn whatever escapes into GitHubError."""
        retrying = Retrying(
            stop=stop_after_attempt(self._retries + 1),
            retry=self._should_retry,
            wait=self._wait,
            reraise=True,
        )
        try:
            return retrying(operation)
        except GithubException as exc:
            tries = retrying.statistics.get("attempt_number", 1)
            message = f"GitHub API: {what} failed ({_tries(tries)}): {describe(exc)}"
            raise GitHubError(message) from exc
        except OSError as exc:  # requests' connection errors and timeouts
            tries = retrying.statistics.get("attempt_number", 1)
            raise GitHubError(
                f"GitHub API: {what} failed ({_tries(tries)}): cannot reach {api_url}: {exc}"
            ) from exc

    def delay(self, exc: BaseException | None, attempt: int) -> float | None:
        """Seconds to wait before retrying after `exc`; None when retrying cannot help."""
        backoff = min(self._backoff * 2.0 ** (attempt - 1), 60.0)
        if isinstance(exc, OSError):
            return backoff
        if not isinstance(exc, GithubException):
            return None
        headers = {k.lower(): str(v) for k, v in (exc.headers or {}).items()}
        if "retry-after" in headers:
            return _float(headers["retry-after"], backoff)
        rate_limited = exc.status in (403, 429) and headers.get("x-ratelimit-remaining") == "0"
        if rate_limited and "x-ratelimit-reset" in headers:
            return max(0.0, _float(headers["x-ratelimit-reset"], 0.0) - time.time()) + 1
        if exc.status >= 500 or exc.status == 429 or _is_secondary_limit(exc):
            return backoff
        return None

    def _should_retry(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        delay = self.delay(exc, state.attempt_number)
        return delay is not None and delay <= self._max_wait

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.delay(exc, state.attempt_number) or 0.0


def describe(exc: GithubException) -> str:
    """GitHub's own words: the message plus any per-field error messages."""
    data: Any = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message") or exc.message or "no message")]
    errors = data.get("errors") or []
    parts += [str(e.get("message")) for e in errors if isinstance(e, dict) and e.get("message")]
    return f"HTTP {exc.status}: " + "; ".join(parts)


def _is_secondary_limit(exc: GithubException) -> bool:
    message = str((exc.data or {}).get("message", "")) if isinstance(exc.data, dict) else ""
    return exc.status in (403, 429) and "rate limit" in message.lower()


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def _tries(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"
