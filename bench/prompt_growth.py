"""Benchmark 2: request size as a session grows. A scripted session makes one tool call per
step, alternating `read_file` of a different ~4 KB file and `run_command` printing ~2 KB; the
scripted server records the size of every request. Masking (context.py) should make the size
level off; the transcript, which keeps everything, shows what an unmasked request would be."""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    NoDelayServer,
    ended_as_scripted,
    isolated_env,
    make_repo,
    median,
    run_codegen,
    slope,
    sparkline,
    stamped,
)
from codegen_ci.testing.scripted_model import Reply, call

FILE_BYTES = 4096
COMMAND_BYTES = 2048
FLAT_SHARE = 0.02  # "bounded": the late slope is under 2% of what each call adds unmasked


def prompt_growth(calls: int = 300) -> dict[str, Any]:
    count = max(10, (calls + 1) // 2)
    files = {f"data/file_{i:03d}.txt": _text(i, FILE_BYTES) for i in range(count)}
    stamps: list[float] = []
    script = [stamped(stamps, Reply(tool_calls=[_step(i)])) for i in range(calls)]
    script.append(stamped(stamps, Reply("done")))
    spec = {
        "title": "Benchmark prompt growth",
        "task": "Look at every data file.",
        "validation": {"test": ["true"]},
        "limits": {"max_iterations": 1, "max_steps": calls + 5, "max_tokens": 10**10},
    }
    with tempfile.TemporaryDirectory(prefix="bench-prompt-") as tmp_name:
        tmp = Path(tmp_name)
        repo = make_repo(tmp / "repo", files)
        with NoDelayServer(script) as server, isolated_env(tmp, server.base_url):
            report = run_codegen(repo, tmp / "out", spec)
            sizes = [float(s) for s in server.request_sizes]
            bare_command = _bare_command_ms(repo)
        unmasked = _unmasked_sizes(tmp / "out" / "transcript.jsonl")
    if not ended_as_scripted(report, changes=False) or len(sizes) != calls + 1:
        raise RuntimeError(f"session ended early: {report['status']} {report.get('error')}")
    steps = [b - a for a, b in itertools.pairwise(stamps)]
    half = sizes[len(sizes) // 2 :]
    late_slope = slope(half)
    per_call = (unmasked[-1] - unmasked[0]) / max(1, len(unmasked) - 1)
    return {
        "tool_calls": calls,
        "requests": len(sizes),
        "first_bytes": int(sizes[0]),
        "middle_bytes": int(sizes[len(sizes) // 2]),
        "last_bytes": int(sizes[-1]),
        "max_bytes": int(max(sizes)),
        "late_slope_bytes_per_call": round(late_slope, 1),
        "unmasked_last_bytes": int(unmasked[-1]),
        "unmasked_bytes_per_call": round(per_call, 1),
        "sparkline": sparkline(sizes),
        "read_file_step_ms": round(median(steps[0::2]) * 1e3, 1),
        "run_command_step_ms": round(median(steps[1::2]) * 1e3, 1),
        "bare_command_ms": round(bare_command, 1),
        "target": f"late slope < {FLAT_SHARE:.0%} of the unmasked growth per call",
        "holds": abs(late_slope) < FLAT_SHARE * per_call,
    }


def _bare_command_ms(repo: Path, runs: int = 10) -> float:
    """The same kind of command through plain subprocess.run, for scale."""
    times = []
    for n in range(runs):
        started = time.perf_counter()
        subprocess.run(
            f"head -c {COMMAND_BYTES} data/file_{n:03d}.txt",
            shell=True,
            cwd=repo,
            capture_output=True,
            check=False,
        )
        times.append(time.perf_counter() - started)
    return median(times) * 1e3


def _step(i: int) -> tuple[str, dict[str, Any]]:
    n = i // 2
    if i % 2 == 0:
        return call("read_file", path=f"data/file_{n:03d}.txt")
    return call("run_command", command=f"head -c {COMMAND_BYTES} data/file_{n:03d}.txt")


def _unmasked_sizes(transcript: Path) -> list[float]:
    """Size of the whole conversation before each model call (what a loop without masking
    would send, messages only)."""
    messages: list[dict[str, Any]] = []
    sizes = []
    for line in transcript.read_text(encoding="utf-8").splitlines():
        message = json.loads(line)
        message.pop("ts", None)
        if message["role"] == "assistant":
            sizes.append(float(len(json.dumps(messages, ensure_ascii=False))))
        messages.append(message)
    return sizes


def _text(seed: int, size: int) -> str:
    line = f"record {seed:04d}: " + "lorem ipsum dolor sit amet " * 2
    lines = [f"{n:03d} {line}" for n in range(size // (len(line) + 5) + 1)]
    return "\n".join(lines)[:size] + "\n"
