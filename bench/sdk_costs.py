"""What a model request costs before the harness does anything: the openai SDK's request
preparation (`create` against `client.post`) and the scripted server's round trip with and
without Nagle's algorithm. Reported by benchmark 1a (overhead.py) to explain its figures."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.common import FAKE_KEY, NoDelayServer, median
from codegen_ci.testing.scripted_model import ScriptedModelServer


def round_trip_ms(server_class: type[ScriptedModelServer], requests: int) -> float:
    """Median milliseconds of a minimal chat completion against `server_class`."""
    import openai

    times = []
    with server_class() as server:
        client = openai.OpenAI(api_key=FAKE_KEY, base_url=server.base_url, max_retries=0)
        for _ in range(requests + 1):  # the first one opens the connection
            started = time.perf_counter()
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            times.append(time.perf_counter() - started)
    return median(times[1:]) * 1e3


def sdk_request_cpu_ms(request: dict[str, Any], runs: int) -> tuple[float, float]:
    """CPU milliseconds per request of the same body through `chat.completions.create` (which
    walks every message against the SDK's TypedDicts first) and through `client.post` (which
    sends the body as it is); both parse the answer into a `ChatCompletion`."""
    import openai
    from openai.types.chat import ChatCompletion

    body = {k: request[k] for k in ("model", "messages", "tools", "temperature") if k in request}
    with NoDelayServer() as server:
        client = openai.OpenAI(api_key=FAKE_KEY, base_url=server.base_url, max_retries=0)
        calls: dict[str, Callable[[], object]] = {
            "create": lambda: client.chat.completions.create(**body),
            "post": lambda: client.post("/chat/completions", body=body, cast_to=ChatCompletion),
        }
        cpu = {}
        for name, send in calls.items():
            send()
            started = time.process_time()
            for _ in range(runs):
                send()
            cpu[name] = (time.process_time() - started) / runs * 1e3
    return cpu["create"], cpu["post"]


def adapter_request_cpu_ms(request: dict[str, Any], runs: int) -> float:
    """CPU milliseconds per request of the same body through the harness's own adapter
    (`OpenAIChatModel.complete`: tenacity retries, `client.post` with a typed
    `ChatCompletion` answer, usage and cached-input reading), to set beside the two above."""
    from codegen_ci.agent.model import OpenAIChatModel
    from codegen_ci.spec.model import ModelSettings

    settings = ModelSettings(name=str(request.get("model") or "m"))
    with NoDelayServer() as server:
        model = OpenAIChatModel(settings, api_key=FAKE_KEY, base_url=server.base_url)
        model.complete(request["messages"], request.get("tools"))
        started = time.process_time()
        for _ in range(runs):
            model.complete(request["messages"], request.get("tools"))
        return (time.process_time() - started) / runs * 1e3
