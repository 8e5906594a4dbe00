"""Cost as users are billed: cached input read from every provider's usage fields, priced at
the cached-input price, and budgets (`max_cost_usd`, `max_billed_tokens`) checked against it;
the scripted server reports usage as a caching provider does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_repo import QUICK_GATE, VERSION_FILE, SampleRepo

from codegen_ci.agent.model import OpenAIChatModel, billed_tokens, cost_usd
from codegen_ci.cli import cli
from codegen_ci.spec.model import ModelPrice, ModelSettings
from codegen_ci.testing.provider_cache import PromptCache, UsageStyle
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

MESSAGES = [{"role": "user", "content": "hi"}]
HOUSE_PRICE = {"prompt": 10.0, "cached": 1.0, "completion": 0.0}


def adapter(server: ScriptedModelServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        ModelSettings(), api_key="sk-test", base_url=server.base_url, retry_backoff=0.01
    )


READ, WRITE = "cache_read_input_tokens", "cache_creation_input_tokens"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 5000, "prompt_tokens_details": {"cached_tokens": 4096}},
            (5000, 4096, 0),
        ),
        (
            {
                "prompt_tokens": 5000,
                "prompt_cache_hit_tokens": 3072,
                "prompt_cache_miss_tokens": 1928,
            },
            (5000, 3072, 0),
        ),
        ({"prompt_tokens": 5000, READ: 2048, WRITE: 1024}, (5000, 2048, 1024)),
        # Anthropic's own convention: input tokens without the cache's reads and writes
        ({"prompt_tokens": 100, READ: 4096, WRITE: 512}, (4708, 4096, 512)),
        ({"prompt_tokens": 5000}, (5000, 0, 0)),
    ],
)
def test_cached_input_is_read_from_every_providers_fields(
    usage: dict[str, Any], expected: tuple[int, int, int]
) -> None:
    with ScriptedModelServer([Reply("ok", usage={**usage, "completion_tokens": 7})]) as server:
        reply = adapter(server).complete(MESSAGES, None)

    assert (reply.prompt_tokens, reply.cached_tokens, reply.cache_write_tokens) == expected
    assert reply.completion_tokens == 7


@pytest.mark.parametrize("style", ["openai", "deepseek", "anthropic"])
def test_the_scripted_server_caches_like_a_provider(style: UsageStyle) -> None:
    long = [{"role": "user", "content": "x" * 8000}]  # ~2,000 tokens
    more = [*long, {"role": "assistant", "content": "y" * 2000}]
    with ScriptedModelServer(cache=PromptCache(), usage_style=style) as server:
        first = adapter(server).complete(long, None)
        second = adapter(server).complete(more, None)
        short = adapter(server).complete(MESSAGES, None)

    assert first.cached_tokens == 0  # nothing seen before
    assert first.prompt_tokens == server.usages[0]["prompt_tokens"] > 2000
    # the shared prefix, in whole 128-token blocks
    assert second.cached_tokens % 128 == 0
    assert first.prompt_tokens - 128 < second.cached_tokens <= first.prompt_tokens
    assert second.prompt_tokens > first.prompt_tokens + 400
    assert short.cached_tokens == 0  # under the 1,024-token minimum
    if style == "anthropic":
        assert first.cache_write_tokens > 0


@pytest.fixture
def caching_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(cache=PromptCache()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000000000")
        yield server


def reading_run(
    sample_repo: SampleRepo, server: ScriptedModelServer, name: str, **overrides: Any
) -> tuple[int, dict[str, Any]]:
    """A turn of 12 reads (no fix, one round) with a house model priced 10 (input), 1 (cached);
    what the gate finds is not the subject (a gate of exit codes)."""
    server.script.clear()
    server.add(*[Reply(tool_calls=[call("read_file", path=VERSION_FILE)])] * 12, Reply("done"))
    spec = sample_repo.write_spec(
        f"{name}.yaml",
        title=f"Cost {name}",
        model={"name": "house", "price": HOUSE_PRICE},
        validation=QUICK_GATE,
        limits={"max_iterations": 1, **overrides},
    )
    out = sample_repo.tmp / f"out-{name}"
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    result = CliRunner().invoke(cli, args)
    report: dict[str, Any] = json.loads((Path(out) / "report.json").read_text())
    return result.exit_code, report


def test_cost_and_budgets_follow_what_is_billed(
    sample_repo: SampleRepo, caching_model: ScriptedModelServer
) -> None:
    _, free = reading_run(sample_repo, caching_model, "measure")
    u = free["usage"]
    assert u["requests"] == 13 and u["cached_tokens"] > 0.6 * u["prompt_tokens"]
    assert u["cached_tokens"] == sum(
        x["prompt_tokens_details"]["cached_tokens"] for x in caching_model.usages
    )
    uncached = u["prompt_tokens"] - u["cached_tokens"]
    assert u["cost_usd"] == pytest.approx((uncached * 10 + u["cached_tokens"] * 1) / 1e6)
    assert u["billed_tokens"] == round(uncached + u["cached_tokens"] * 0.1 + u["completion_tokens"])
    full_price = u["prompt_tokens"] * 10 / 1e6

    # a cost budget between the billed cost and the full price: the run is not stopped
    budget = (u["cost_usd"] + full_price) / 2
    code, report = reading_run(sample_repo, caching_model, "afford", max_cost_usd=budget)
    assert report["reason"] != "budget" and report["usage"]["requests"] == 13, report["error"]
    # a token budget of the same size as the billed tokens would stop it: it counts cached input
    between = (u["billed_tokens"] + u["prompt_tokens"]) // 2
    code, report = reading_run(
        sample_repo, caching_model, "billed", max_tokens=10**8, max_billed_tokens=between
    )
    assert report["reason"] != "budget" and report["usage"]["requests"] == 13, report["error"]
    code, report = reading_run(sample_repo, caching_model, "tokens", max_tokens=between)
    assert code == 1 and report["reason"] == "budget" and "token budget" in report["error"]
    # and a billed budget below what the run bills stops it
    low = u["billed_tokens"] // 2
    code, report = reading_run(
        sample_repo, caching_model, "low", max_tokens=10**8, max_billed_tokens=low
    )
    assert code == 1 and "billed-token budget" in report["error"]


def test_cache_writes_are_priced_apart_and_the_schema_offers_the_new_keys() -> None:
    price = ModelPrice(prompt=3.0, cached=0.3, completion=15.0, cache_write=3.75)
    claude = ModelSettings(name="claude-compatible", price=price)
    # 1,000 uncached + 8,000 cached + 1,000 written input tokens, 100 output tokens
    assert cost_usd(claude, 10_000, 100, 8_000, 1_000) == pytest.approx(
        (1_000 * 3.0 + 8_000 * 0.3 + 1_000 * 3.75 + 100 * 15.0) / 1e6
    )
    assert billed_tokens(claude, 10_000, 100, 8_000, 1_000) == 1_000 + 800 + 1_250 + 100
    # no cached price stated: no discount assumed
    plain = ModelSettings(name="house", price=ModelPrice(prompt=1.0, completion=2.0))
    assert cost_usd(plain, 10_000, 0, 8_000) == pytest.approx(0.01)

    schema = json.loads(CliRunner().invoke(cli, ["schema"]).output)
    defs = schema["$defs"]
    assert "max_billed_tokens" in defs["Limits"]["properties"]
    assert {"cached", "cache_write"} <= set(defs["ModelPrice"]["properties"])
