"""The model adapter against the scripted OpenAI-compatible server: retries, fail-fast errors,
timeouts, unreadable answers, prices."""

from __future__ import annotations

import sys
import time
from email.utils import formatdate
from typing import Any

import pytest

from codegen_ci.agent.model import OpenAIChatModel, cost_usd
from codegen_ci.errors import InputError, ModelServiceError
from codegen_ci.spec.model import ModelPrice, ModelSettings
from codegen_ci.testing.scripted_model import (
    Drop,
    Hang,
    HttpError,
    Raw,
    Reply,
    ScriptedModelServer,
    call,
    error_body,
)

MESSAGES = [{"role": "user", "content": "hi"}]
QUOTA = error_body("You exceeded your current quota", "insufficient_quota", "insufficient_quota")


def model(server: ScriptedModelServer, **settings: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        ModelSettings(**settings), api_key="sk-test", base_url=server.base_url, retry_backoff=0.01
    )


def test_default_attempts_are_at_least_five() -> None:
    assert ModelSettings().max_retries >= 5


def test_429_with_retry_after_is_retried_until_it_answers(
    model_server: ScriptedModelServer,
) -> None:
    busy = HttpError(429, error_body("slow down", "rate_limit_exceeded"), {"retry-after": "0"})
    model_server.add(busy, busy, busy, busy, Reply(tool_calls=[call("list_files", path=".")]))

    reply = model(model_server).complete(MESSAGES, None)

    assert [c.name for c in reply.tool_calls] == ["list_files"]
    assert len(model_server.requests) == 5


def test_retry_after_seconds_and_dates_are_honoured(model_server: ScriptedModelServer) -> None:
    date = formatdate(time.time() + 1, usegmt=True)  # an HTTP date, about one second ahead
    model_server.add(
        HttpError(503, headers={"retry-after": "1"}),
        HttpError(429, headers={"retry-after": date}),
        Reply("ok"),
    )
    started = time.monotonic()

    assert model(model_server).complete(MESSAGES, None).content == "ok"
    assert time.monotonic() - started >= 1.0  # at least the first, exact, wait


def test_server_errors_forever_end_with_the_cause(model_server: ScriptedModelServer) -> None:
    model_server.add(*[HttpError(500, error_body("upstream exploded"))] * 10)

    with pytest.raises(ModelServiceError) as caught:
        model(model_server).complete(MESSAGES, None)

    assert "HTTP 500" in caught.value.message and "upstream exploded" in caught.value.message
    assert "after 6 attempts" in caught.value.message
    assert len(model_server.requests) == 6


@pytest.mark.parametrize(
    "error",
    [
        HttpError(429, QUOTA, {"retry-after": "0"}),
        HttpError(401, error_body("Incorrect API key", "invalid_api_key")),
        HttpError(400, error_body("context_length_exceeded", "context_length_exceeded")),
    ],
    ids=["insufficient_quota", "401", "400"],
)
def test_unfixable_errors_fail_fast(model_server: ScriptedModelServer, error: HttpError) -> None:
    model_server.add(error, Reply("never reached"))

    with pytest.raises(ModelServiceError) as caught:
        model(model_server).complete(MESSAGES, None)

    assert f"HTTP {error.status}" in caught.value.message
    assert "attempts" not in caught.value.message
    assert len(model_server.requests) == 1


def test_a_request_that_hangs_times_out_and_is_retried(model_server: ScriptedModelServer) -> None:
    model_server.add(Hang(30), Reply("second try"))
    started = time.monotonic()

    reply = model(model_server, request_timeout=0.5).complete(MESSAGES, None)

    assert reply.content == "second try"
    assert time.monotonic() - started < 20  # far less than the hang: it was cut short


def test_timeouts_forever_name_the_timeout(model_server: ScriptedModelServer) -> None:
    model_server.add(Hang(2), Hang(2))

    with pytest.raises(ModelServiceError, match=r"timed out after 0.3s \(after 2 attempts\)"):
        model(model_server, request_timeout=0.3, max_retries=2).complete(MESSAGES, None)


def test_dropped_connections_and_garbage_are_retried(model_server: ScriptedModelServer) -> None:
    model_server.add(
        Drop(), Raw(b"<html>bad gateway</html>"), Raw(b'{"object": "nothing"}'), Reply("fine")
    )

    assert model(model_server).complete(MESSAGES, None).content == "fine"
    assert len(model_server.requests) == 4


def test_an_unreachable_service_is_an_infrastructure_error() -> None:
    with ScriptedModelServer() as server:
        url = server.base_url
    dead = OpenAIChatModel(
        ModelSettings(max_retries=2), api_key="k", base_url=url, retry_backoff=0.01
    )

    with pytest.raises(ModelServiceError, match="unreachable"):
        dead.complete(MESSAGES, None)


def test_missing_key_without_local_endpoint_is_bad_input() -> None:
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        OpenAIChatModel(ModelSettings(), api_key=None, base_url=None)


def test_usage_and_cost_from_the_table_or_the_spec(model_server: ScriptedModelServer) -> None:
    model_server.add(Reply("x", prompt_tokens=1000, completion_tokens=500))

    reply = model(model_server).complete(MESSAGES, None)

    assert (reply.prompt_tokens, reply.completion_tokens) == (1000, 500)
    assert cost_usd(ModelSettings(name="gpt-4o-mini"), 1_000_000, 1_000_000) == 0.75
    custom = ModelSettings(name="my-local", price=ModelPrice(prompt=1.0, completion=2.0))
    assert cost_usd(custom, 500_000, 250_000) == 1.0
    assert cost_usd(ModelSettings(name="my-local"), 10, 10) is None


def test_the_sdk_is_imported_at_the_first_request_not_before(
    monkeypatch: pytest.MonkeyPatch, model_server: ScriptedModelServer
) -> None:
    """A run that stops before asking the model anything (a configuration error at the
    pre-flight, a dry run) never pays for importing `openai` (~0.4 s of CPU a process)."""
    for name in [n for n in sys.modules if n == "openai" or n.startswith("openai.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now raises
    model = OpenAIChatModel(ModelSettings(), api_key="k", base_url=model_server.base_url)
    with pytest.raises(ImportError):
        model.complete([{"role": "user", "content": "hi"}], None)
