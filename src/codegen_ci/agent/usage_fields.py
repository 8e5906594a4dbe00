"""Cached input as each provider family reports it in a chat completion's `usage`.

- OpenAI, Azure OpenAI, OpenRouter, vLLM, LiteLLM: `prompt_tokens_details.cached_tokens`.
- DeepSeek: `prompt_cache_hit_tokens` (with `prompt_cache_miss_tokens`).
- Anthropic-compatible endpoints: `cache_read_input_tokens`, and
  `cache_creation_input_tokens` for input written to the cache (billed at its own rate).

`prompt_tokens` is all input, cached or not, in the OpenAI convention. An endpoint that follows
Anthropic's own convention (input tokens exclude cache reads and writes) shows itself by a
`prompt_tokens` smaller than its cache reads plus writes; its parts are then added up.
"""

from __future__ import annotations

from typing import Any

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
