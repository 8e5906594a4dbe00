"""What the benchmarks share: an isolated environment, throw-away git repositories, an
in-process `codegen-ci run`, scripted steps that stamp their arrival, and small statistics."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

FAKE_KEY = "sk-bench-not-a-real-key-0000000000000000"
_CLEARED = ("OPENAI_", "GITHUB_", "CODEGEN_", "INPUT_", "ACTIONS_", "RUNNER_", "GIT_", "GH_")


@contextmanager
def isolated_env(tmp: Path, base_url: str | None = None) -> Iterator[None]:
    """No real credentials or user git config; the model at `base_url`. Restored on exit."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(_CLEARED) or name == "PYTEST_ADDOPTS":
            del os.environ[name]
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    os.environ.update(
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        CI="true",
        CODEGEN_RETRY_BACKOFF="0.01",
        OPENAI_API_KEY=FAKE_KEY,
    )
    if base_url:
        os.environ["OPENAI_BASE_URL"] = base_url
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def make_repo(path: Path, files: Mapping[str, str]) -> Path:
    """A git repository at `path` holding `files`, in one commit."""
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


def run_codegen(repo: Path, out: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """`codegen-ci run` in this process (the CLI surface); returns report.json."""
    spec_file = out.parent / f"{out.name}-spec.yaml"
    spec_file.write_text(yaml.safe_dump({"version": 1, **spec}, sort_keys=False))
    result = CliRunner().invoke(
        cli, ["run", str(spec_file), "--repo", str(repo), "--output-dir", str(out)]
    )
    report_file = out / "report.json"
    if not report_file.is_file():
        raise RuntimeError(
            f"codegen-ci run wrote no report (exit {result.exit_code}):\n"
            f"{result.output}\n{result.exception!r}"
        )
    report: dict[str, Any] = json.loads(report_file.read_text())
    return report


def ended_as_scripted(report: dict[str, Any], *, changes: bool) -> bool:
    """Whether a scripted session ran to its end: `success` for a session that edits; for a
    read-only one (it measures requests, not a change), the product's `failed`/`no_change`
    (docs/contract.md: a run whose gate passes with nothing to commit), or `success`."""
    if report["status"] == "success":
        return True
    return not changes and report["status"] == "failed" and report.get("reason") == "no_change"


class NoDelayServer(ScriptedModelServer):
    """The scripted server with TCP_NODELAY on its sockets.

    The stock handler writes the headers and the body of an answer in two sends; with Nagle's
    algorithm on, the second waits for the client's delayed ACK (~40 ms on Linux), which would
    swamp everything measured here. Overrides a private method: a no-op once the stock handler
    sets `disable_nagle_algorithm` itself.
    """

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler()
        return type("NoDelayHandler", (base,), {"disable_nagle_algorithm": True})


def stamped(
    stamps: list[float], reply: Reply, cpu: list[float] | None = None
) -> Callable[[dict[str, Any]], Reply]:
    """A script step that records when its request reached the server (and, into `cpu`, this
    process's CPU time then: the client and the server thread, never child processes)."""

    def step(_body: dict[str, Any]) -> Reply:
        stamps.append(time.perf_counter())
        if cpu is not None:
            cpu.append(time.process_time())
        return reply

    return step


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def slope(values: list[float]) -> float:
    """Least-squares slope of `values` against their index (units per step)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    den = sum((x - mean_x) ** 2 for x in range(n))
    return num / den


def sparkline(values: list[float], width: int = 48) -> str:
    """Values bucketed into `width` columns (bucket mean), drawn from 0 to the maximum."""
    if not values:
        return ""
    bars = " ▁▂▃▄▅▆▇█"
    size = max(1, -(-len(values) // width))
    buckets = [
        sum(values[i : i + size]) / len(values[i : i + size]) for i in range(0, len(values), size)
    ]
    top = max(buckets) or 1.0
    return "".join(bars[round(b / top * (len(bars) - 1))] for b in buckets)
