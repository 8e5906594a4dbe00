"""The model adapter: the only module that imports `openai`.

Talks to any OpenAI-compatible chat-completions endpoint with tool calling. Retries (tenacity)
with exponential backoff and jitter on 429, 5xx, timeouts and connection errors, honouring
`Retry-After`; fails fast on 400, 401, 403, 404 and `insufficient_quota`. After the retries a
`ModelServiceError` (exit 3) carries the cause.

Requests go through the SDK's generic `client.post(..., cast_to=ChatCompletion)` with the body
as built here: the same HTTP client, timeouts, error classes and typed `ChatCompletion` answer
as `chat.completions.create`, without its per-request walk of every message against the SDK's
TypedDicts (13 ms against 2.2 ms of CPU for a 63-message request; docs/benchmarks.md).

Retry timing (`wait`): exponential backoff with jitter unless the service said `Retry-After`
(seconds, milliseconds or an HTTP date, capped); error texts (`describe`): one line naming
status, code and message.

Usage (`cached_input`): cached input as each provider family reports it in a chat completion's
`usage`:
- OpenAI, Azure OpenAI, OpenRouter, vLLM, LiteLLM: `prompt_tokens_details.cached_tokens`.
- DeepSeek: `prompt_cache_hit_tokens` (with `prompt_cache_miss_tokens`).
- Anthropic-compatible endpoints: `cache_read_input_tokens`, and
  `cache_creation_input_tokens` for input written to the cache (billed at its own rate).
`prompt_tokens` is all input, cached or not, in the OpenAI convention. An endpoint that follows
Anthropic's own convention (input tokens exclude cache reads and writes) shows itself by a
`prompt_tokens` smaller than its cache reads plus writes; its parts are then added up.

Prices (`PRICES`, `cost_usd`, `billed_tokens`): what model calls cost as users are billed.
Providers cache request prefixes and bill a cache hit at a fraction of the input price (OpenAI's
GPT-4o family 50%, GPT-4.1 and o-series 25%, GPT-5 family 10%). `cost_usd` and `billed_tokens`
count the cached part of the prompt at that price, and prompt tokens a provider reports as
written to its cache (Anthropic-compatible endpoints) at the cache-write price.
"""

from __future__ import annotations

import functools
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
from codegen_ci.spec.model import ModelSettings


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: list[ToolCall]
    prompt_tokens: int  # all input, cached or not
    completion_tokens: int
    cached_tokens: int = 0  # input served from the provider's prompt cache
    cache_write_tokens: int = 0  # input written to the cache, where billed apart

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
        self._api_key, self._base_url = api_key, base_url

    @functools.cached_property
    def _client(self) -> Any:
        """The SDK's client, made at the first request: importing `openai` costs about 0.4 s
        of CPU (its hundreds of typed models), which a run that stops before asking the model
        anything (a configuration error at the pre-flight, a dry run) never pays."""
        import openai

        return openai.OpenAI(
            api_key=self._api_key,
            base_url=self._base_url,
            timeout=self._settings.request_timeout,
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
            wait=wait(self._backoff),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        try:
            return retrying(self._attempt, kwargs)
        except openai.APIStatusError as exc:
            raise ModelServiceError(_after(retrying, describe(exc))) from None
        except openai.APITimeoutError:
            cause = f"model request timed out after {self._settings.request_timeout:g}s"
            raise ModelServiceError(_after(retrying, cause)) from None
        except openai.APIError as exc:
            raise ModelServiceError(_after(retrying, f"model service unreachable: {exc}")) from None
        except InvalidResponse as exc:
            raise ModelServiceError(_after(retrying, str(exc))) from None

    def _attempt(self, body: dict[str, Any]) -> ModelReply:
        from openai.types.chat import ChatCompletion

        try:
            response = self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)
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
        fields = error_fields(exc)
        if "insufficient_quota" in (fields.get("code"), fields.get("type")):
            return False  # a 429 that waiting does not fix
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError | openai.APITimeoutError | InvalidResponse)


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
    prompt, cached, written = cached_input(response.usage)
    return ModelReply(
        content=message.content,
        tool_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=getattr(response.usage, "completion_tokens", 0) or 0,
        cached_tokens=cached,
        cache_write_tokens=written,
    )


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


CACHED_FIELDS = ("cached_tokens", "prompt_cache_hit_tokens", "cache_read_input_tokens")


def cached_input(usage: Any) -> tuple[int, int, int]:
    """(prompt tokens, cached tokens, cache-write tokens) from a usage object or dict."""
    if usage is None:
        return 0, 0, 0
    prompt = _int(_field(usage, "prompt_tokens"))
    details = _field(usage, "prompt_tokens_details")
    cached = max(
        _int(_field(details, "cached_tokens")),
        _int(_field(usage, "prompt_cache_hit_tokens")),
        _int(_field(usage, "cache_read_input_tokens")),
    )
    written = _int(_field(usage, "cache_creation_input_tokens"))
    if prompt < cached + written:
        prompt += cached + written
    return prompt, cached, written


def _field(container: Any, name: str) -> Any:
    if container is None:
        return None
    if isinstance(container, dict):
        return container.get(name)
    value = getattr(container, name, None)
    if value is None:
        extra = getattr(container, "model_extra", None) or {}
        value = extra.get(name)
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    prompt: float
    cached: float
    completion: float
    cache_write: float | None = None  # None: as `prompt`


# Extend per model with `model.price` (prompt, completion, and optionally cached, cache_write).
PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "o4-mini": Price(1.10, 0.275, 4.40),
    "o3": Price(2.00, 0.50, 8.00),
    "gpt-5": Price(1.25, 0.125, 10.00),
    "gpt-5-mini": Price(0.25, 0.025, 2.00),
    "gpt-5-nano": Price(0.05, 0.005, 0.40),
}


def price_for(settings: ModelSettings) -> Price | None:
    """The spec's `model.price` (a missing cached price counts as the prompt price: no
    discount is assumed that the user did not state), else the built-in table."""
    if settings.price:
        p = settings.price
        cached = p.cached if p.cached is not None else p.prompt
        return Price(p.prompt, cached, p.completion, p.cache_write)
    return PRICES.get(settings.name)


def cost_usd(
    settings: ModelSettings,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """Billed US dollars; `prompt_tokens` counts all input, cached and written included."""
    price = price_for(settings)
    if price is None:
        return None
    write_price = price.prompt if price.cache_write is None else price.cache_write
    uncached = max(0, prompt_tokens - cached_tokens - cache_write_tokens)
    total = (
        uncached * price.prompt
        + cached_tokens * price.cached
        + cache_write_tokens * write_price
        + completion_tokens * price.completion
    )
    return round(total / 1e6, 6)


def billed_tokens(
    settings: ModelSettings,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> int:
    """Tokens as billed, in units of one uncached input token for input: uncached prompt and
    completion tokens count in full, a cached token counts `cached / prompt` of one (its
    discount), a cache-write token `cache_write / prompt`. Without known prices (or with a
    free prompt) cached tokens count in full."""
    price = price_for(settings)
    cached_share, write_share = 1.0, 1.0
    if price is not None and price.prompt > 0:
        cached_share = price.cached / price.prompt
        if price.cache_write is not None:
            write_share = price.cache_write / price.prompt
    uncached = max(0, prompt_tokens - cached_tokens - cache_write_tokens)
    billed = (
        uncached
        + cached_tokens * cached_share
        + cache_write_tokens * write_share
        + completion_tokens
    )
    return round(billed)
