"""What model calls cost as users are billed: cached input at its own price.

Providers cache request prefixes and bill a cache hit at a fraction of the input price (OpenAI's
GPT-4o family 50%, GPT-4.1 and o-series 25%, GPT-5 family 10%). `cost_usd` and
`billed_tokens` count the cached part of the prompt at that price, and prompt tokens a provider
reports as written to its cache (Anthropic-compatible endpoints) at the cache-write price.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen_ci.spec.model import ModelSettings


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
