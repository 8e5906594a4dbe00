"""The model adapter: the only module that imports `openai`.

Talks to any OpenAI-compatible chat-completions endpoint with tool calling. Retries (tenacity)
with exponential backoff and jitter on 429, 5xx, timeouts and connection errors, honouring
`Retry-After`; fails fast on 400, 401, 403, 404 and `insufficient_quota`. After the retries a
`ModelServiceError` (exit 3) carries the cause.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from codegen_ci.errors import InputError, ModelServiceError
from codegen_ci.spec import ModelSettings

MAX_RETRY_AFTER_S = 120.0

# US dollars per million tokens (prompt, completion). Extend per model with `model.price`.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return message


class Model(Protocol):
    name: str

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ModelReply: ...


def price_for(settings: ModelSettings) -> tuple[float, float] | None:
    if settings.price:
        return settings.price.prompt, settings.price.completion
    return PRICES.get(settings.name)


def cost_usd(settings: ModelSettings, prompt_tokens: int, completion_tokens: int) -> float | None:
    price = price_for(settings)
    if price is None:
        return None
    return round((prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6, 6)


class OpenAIChatModel:
    """Chat completions through the openai SDK, with our own retry policy."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        api_key: str | None,
        base_url: str | None,
        retry_backoff: float = 1.0,
    ) -> None:
        import openai

        if not api_key:
            if not base_url:
                raise InputError(
                    "OPENAI_API_KEY is not set (or set OPENAI_BASE_URL for a local endpoint "
                    "that needs no key)"
                )
            api_key = "unused"  # local servers (Ollama, llama.cpp) accept any key
        self.name = settings.name
        self._settings = settings
        self._backoff = retry_backoff
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=settings.request_timeout,
            max_retries=0,  # tenacity does it, with our rules
        )

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ModelReply:
        import openai

        kwargs: dict[str, Any] = {
            "model": self._settings.name,
            "messages": messages,
            "temperature": self._settings.temperature,
        }
        if tools:
            kwargs["tools"] = tools
        retrying = Retrying(
            stop=stop_after_attempt(self._settings.max_retries),
            wait=_wait(self._backoff),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        try:
            return retrying(self._attempt, kwargs)
        except openai.APIStatusError as exc:
            raise ModelServiceError(_after(retrying, _describe(exc))) from None
        except openai.APITimeoutError:
            cause = f"model request timed out after {self._settings.request_timeout:g}s"
            raise ModelServiceError(_after(retrying, cause)) from None
        except openai.APIError as exc:
            raise ModelServiceError(_after(retrying, f"model service unreachable: {exc}")) from None
        except InvalidResponse as exc:
            raise ModelServiceError(_after(retrying, str(exc))) from None

    def _attempt(self, kwargs: dict[str, Any]) -> ModelReply:
        try:
            response = self._client.chat.completions.create(**kwargs)
        except ValueError as exc:  # a body that is not JSON (a proxy's error page, a cut stream)
            raise InvalidResponse(f"model service sent an unreadable response: {exc}") from None
        return _reply(response)


class InvalidResponse(Exception):
    """A 200 answer that is not a chat completion; retried like a 5xx."""


def _after(retrying: Retrying, cause: str) -> str:
    attempts = retrying.statistics.get("attempt_number", 1)
    return f"{cause} (after {attempts} attempts)" if attempts > 1 else cause


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        fields = _error_fields(exc)
        if "insufficient_quota" in (fields.get("code"), fields.get("type")):
            return False  # a 429 that waiting does not fix
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError | openai.APITimeoutError | InvalidResponse)


def _wait(backoff: float) -> Any:
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


def _error_fields(exc: Any) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner
    return {}


def _error_code(exc: Any) -> str | None:
    fields = _error_fields(exc)
    for value in (fields.get("code"), getattr(exc, "code", None), fields.get("type")):
        if value:
            return str(value)
    return None


def _describe(exc: Any) -> str:
    code = _error_code(exc)
    detail = f" ({code})" if code else ""
    message = _error_fields(exc).get("message") or getattr(exc, "message", str(exc))
    return f"model service answered HTTP {exc.status_code}{detail}: {message}"[:1000]


def _reply(response: Any) -> ModelReply:
    if not getattr(response, "choices", None):
        raise InvalidResponse("model service returned no choices")
    message = response.choices[0].message
    calls = [
        ToolCall(
            id=c.id or f"call_{i}",
            name=c.function.name,
            arguments=c.function.arguments
            if isinstance(c.function.arguments, str)
            else json.dumps(c.function.arguments),
        )
        for i, c in enumerate(message.tool_calls or [])
    ]
    usage = response.usage
    return ModelReply(
        content=message.content,
        tool_calls=calls,
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
    )
