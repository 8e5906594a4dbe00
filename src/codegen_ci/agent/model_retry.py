"""The model adapter's retry timing and error texts (no `openai` import: these read the
exception's attributes): exponential backoff with jitter unless the service said `Retry-After`
(seconds, milliseconds or an HTTP date, capped), and one line naming status, code and message.
"""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any

from tenacity import RetryCallState, wait_exponential_jitter

MAX_RETRY_AFTER_S = 120.0


def wait(backoff: float) -> Any:
    exponential = wait_exponential_jitter(multiplier=backoff, max=30 * backoff, jitter=backoff)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = _retry_after(exc)
        return retry_after if retry_after is not None else float(exponential(state))

    return wait


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            seconds = _seconds(value, scale)
            if seconds is not None:
                return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)
    return None


def _seconds(value: str, scale: float) -> float | None:
    """Retry-After is a number of seconds or an HTTP date."""
    try:
        return float(value) / scale
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def error_fields(exc: Any) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner
    return {}


def _error_code(exc: Any) -> str | None:
    fields = error_fields(exc)
    for value in (fields.get("code"), getattr(exc, "code", None), fields.get("type")):
        if value:
            return str(value)
    return None


def describe(exc: Any) -> str:
    code = _error_code(exc)
    detail = f" ({code})" if code else ""
    message = error_fields(exc).get("message") or getattr(exc, "message", str(exc))
    return f"model service answered HTTP {exc.status_code}{detail}: {message}"[:1000]
