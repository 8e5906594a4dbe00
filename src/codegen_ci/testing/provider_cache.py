"""A provider's prompt cache, simulated, so tests and benchmarks see the usage a caching
provider would report.

The approximation (documented in docs/benchmarks.md): a request is rendered as the provider
would see it (the model name, the tool schemas, then every message, each serialized as compact
JSON in the order received), and counts one token per 4 bytes of that rendering. As OpenAI
documents its cache, a prefix counts as cached only in whole 128-token blocks, only when it is
byte-identical to a prefix of an earlier request, and only from 1,024 tokens up. Each request's
block prefixes are remembered (a chain of hashes, so a lookup costs one pass over the request).

`usage_fields` writes the numbers in the field names each provider family uses.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

BYTES_PER_TOKEN = 4
BLOCK_TOKENS = 128
MIN_CACHED_TOKENS = 1024
UsageStyle = Literal["openai", "deepseek", "anthropic"]


def render(request: dict[str, Any]) -> bytes:
    """The request as a provider's prompt: model, tools, then messages, in received order."""
    items: list[Any] = [request.get("model", ""), *(request.get("tools") or [])]
    items += request.get("messages") or []
    return "\n".join(
        json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in items
    ).encode()


class PromptCache:
    def __init__(
        self,
        *,
        block_tokens: int = BLOCK_TOKENS,
        min_tokens: int = MIN_CACHED_TOKENS,
        bytes_per_token: int = BYTES_PER_TOKEN,
    ) -> None:
        self.block_tokens = block_tokens
        self.min_tokens = min_tokens
        self.bytes_per_token = bytes_per_token
        self._prefixes: set[bytes] = set()

    def lookup(self, request: dict[str, Any]) -> tuple[int, int, int]:
        """(prompt tokens, cached tokens, tokens newly written to the cache) for `request`,
        which is remembered for the requests after it."""
        data = render(request)
        block = self.block_tokens * self.bytes_per_token
        chain = hashlib.blake2b(digest_size=16)
        matched, matching, written = 0, True, 0
        for start in range(0, len(data) - block + 1, block):
            chain.update(data[start : start + block])
            key = chain.digest()  # the hash of the whole prefix up to this block
            if matching and key in self._prefixes:
                matched += 1
                continue
            matching = False
            self._prefixes.add(key)
            written += 1
        prompt = -(-len(data) // self.bytes_per_token)
        cached = matched * self.block_tokens
        if cached < self.min_tokens:
            cached = 0
        fresh = written * self.block_tokens if prompt >= self.min_tokens else 0
        return prompt, cached, fresh


def usage_fields(
    prompt: int, cached: int, written: int, completion: int, style: UsageStyle = "openai"
) -> dict[str, Any]:
    """A chat completion's `usage` in one provider family's field names. All three count the
    whole input in `prompt_tokens`, cached or not, as OpenAI-compatible endpoints do."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if style == "openai":
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    elif style == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = prompt - cached
    else:
        usage["cache_read_input_tokens"] = cached
        usage["cache_creation_input_tokens"] = written
    return usage
