"""Faults end cleanly, limits hold, nothing is lost: `codegen-ci run` end to end against the
scripted model server, a real git repository and real processes. What the gate finds is not
their subject: a gate of exit codes (QUICK_GATE) unless a test names its own test command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_repo import FIX, FIXED_LINE_NEW, FIXED_LINE_OLD, QUICK_GATE, SampleRepo
from tests.workspace.test_proc import wait_gone

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import (
    HttpError,
    Reply,
    ScriptedModelServer,
    call,
    error_body,
)

VERSION = "src/semver/version.py"


def run_cli(repo: SampleRepo, spec: Path) -> tuple[int, str, dict[str, Any]]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out)]
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output, json.loads((out / "report.json").read_text())


def assert_checkout_untouched(repo: SampleRepo, head: str) -> None:
    assert repo.head() == head
    assert repo.git("status", "--porcelain") == ""
    assert FIXED_LINE_OLD in (repo.path / VERSION).read_text()
    assert repo.git("worktree", "list").count("\n") == 1  # only the user's own


def tool_results(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "tool")


@dataclass(frozen=True)
class FaultyRun:
    """A run several tests only read: its exit code, output, report, output directory and
    what the model server was sent."""

    code: int
    output: str
    report: dict[str, Any]
    out: Path
    requests: list[dict[str, Any]]  # every request
    tool_requests: list[dict[str, Any]]  # those that offered tools: the conversation's steps
    sizes: list[int]


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, FaultyRun]:
    """Runs several tests only read, made once per module (per xdist worker) by the first
    test that needs one, in that test's isolated environment."""
    return {}


NOISY = f"{sys.executable} -c \"print('spam ' * 1_000_000)\""  # 5 MB
# Three cases planted in one run, each asserted on its own by its test: four rate limits
# before the first answer (requests 0-3), a malformed and an unknown tool call (4, 5), a
# command with huge output (6), then the fix (7) and the answer (8).
RATE_LIMITED, MALFORMED, UNKNOWN, NOISY_AT = 4, 4, 5, 6


@pytest.fixture
def faulty_run(
    shared_runs: dict[str, FaultyRun], sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> FaultyRun:
    if "faulty" in shared_runs:
        return shared_runs["faulty"]
    busy = HttpError(
        429, error_body("Rate limit reached", "rate_limit_exceeded"), {"retry-after": "0"}
    )
    model_env.add(
        *[busy] * RATE_LIMITED,
        Reply(tool_calls=[("edit_file", '{"path": "src/semver/version.py", "old_te')]),
        Reply(tool_calls=[call("delete_everything", path=".")]),
        Reply(tool_calls=[call("run_command", command=NOISY)]),
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
    )
    code, output, report = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))
    shared_runs["faulty"] = FaultyRun(
        code,
        output,
        report,
        sample_repo.tmp / "out",
        list(model_env.requests),
        list(model_env.tool_requests),
        list(model_env.request_sizes),
    )
    return shared_runs["faulty"]


def test_rate_limits_with_retry_after_then_success(faulty_run: FaultyRun) -> None:
    code, output, report = faulty_run.code, faulty_run.output, faulty_run.report

    assert code == 0, output
    assert report["status"] == "success" and report["commit"]
    # every rate-limited request retried, then the run's five steps
    assert len(faulty_run.requests) == RATE_LIMITED + 5
    assert all(r == faulty_run.requests[0] for r in faulty_run.requests[1 : RATE_LIMITED + 1])


def test_server_errors_forever_exit_3_with_the_cause(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    head = sample_repo.head()
    model_env.add(*[HttpError(500, error_body("The server had an error"))] * 10)

    code, output, report = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))

    assert code == 3, output
    assert report["status"] == "error" and report["reason"] == "error"
    assert "HTTP 500" in report["error"] and "server had an error" in report["error"]
    assert "after 6 attempts" in report["error"]
    assert "HTTP 500" in output and "Traceback" not in output
    assert report["branch"] is None and report["commit"] is None
    assert_checkout_untouched(sample_repo, head)
    assert "codegen/" not in sample_repo.git("branch", "--list")


def test_insufficient_quota_fails_fast(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    quota = error_body(
        "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
    )
    model_env.add(*[HttpError(429, quota, {"retry-after": "1"})] * 6)

    code, _, report = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))

    assert code == 3
    assert len(model_env.requests) == 1  # no retry, so no retry-after wait either
    assert report["status"] == "error" and "insufficient_quota" in report["error"]


def test_hanging_test_command_and_its_grandchild_are_killed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unconfined, so the host sees the pids (test_sandbox.py kills a confined tree).
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")
    pids = sample_repo.tmp / "grandchildren.pid"
    hanging = f"(trap '' TERM; exec sleep 60) & echo $! >> {pids}; echo started; wait"
    spec = sample_repo.write_spec(
        validation={"test": [hanging], "timeout": 1}, limits={"max_iterations": 1}
    )
    model_env.add(Reply("Nothing to change."))
    started = time.monotonic()

    code, output, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert time.monotonic() - started < 45  # far less than the grandchild's 60 s
    command = report["rounds"][0]["commands"][0]
    assert command["timed_out"] is True and command["exit_code"] is None
    assert report["status"] == "failed"
    grandchildren = [int(p) for p in pids.read_text().split()]
    assert grandchildren and all(wait_gone(pid) for pid in grandchildren)


def test_malformed_and_unknown_tool_calls_are_errors_the_model_reads(
    faulty_run: FaultyRun,
) -> None:
    assert faulty_run.code == 0, faulty_run.output
    assert faulty_run.report["status"] == "success"
    requests = faulty_run.tool_requests
    assert "malformed JSON arguments for edit_file" in tool_results(requests[MALFORMED + 1])
    assert "unknown tool 'delete_everything'" in tool_results(requests[UNKNOWN + 1])


def test_huge_command_output_keeps_the_next_request_small(faulty_run: FaultyRun) -> None:
    assert faulty_run.code == 0, faulty_run.output
    first, second = faulty_run.sizes[NOISY_AT : NOISY_AT + 2]
    assert second - first < 20_000
    assert "bytes of output cut" in tool_results(faulty_run.tool_requests[NOISY_AT + 1])
    logs = list((faulty_run.out / "logs").glob("agent-command-*.log"))
    # On disk: the head and the tail, and a count of what lies between (the on-disk cap).
    assert logs and 500_000 < logs[0].stat().st_size < 1_000_000
    assert "bytes omitted here" in logs[0].read_text()


def test_token_budget_stops_the_run_and_keeps_its_work(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    head = sample_repo.head()
    model_env.add(Reply(tool_calls=[FIX], prompt_tokens=4_900), Reply("Fixed."))
    spec = sample_repo.write_spec(
        validation=QUICK_GATE, limits={"max_iterations": 3, "max_tokens": 5_000}
    )

    code, output, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] == "budget"
    assert "token budget" in report["error"]
    assert len(model_env.requests) == 1
    assert report["usage"]["prompt_tokens"] == 4_900
    assert report["usage"]["cost_usd"] is not None  # gpt-4o-mini is in the price table
    branch, commit = report["branch"], report["commit"]
    assert commit and sample_repo.git("rev-parse", branch).strip() == commit
    assert sample_repo.git("log", "-1", "--format=%s", branch).startswith("wip")
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{branch}:{VERSION}")
    assert report["files_changed"] == [VERSION]
    assert_checkout_untouched(sample_repo, head)


def test_cost_budget_with_spec_prices(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(Reply(tool_calls=[call("list_files")], prompt_tokens=1_000_000), Reply("?"))
    spec = sample_repo.write_spec(
        validation=QUICK_GATE,
        model={"name": "house-model", "price": {"prompt": 1.0, "completion": 2.0}},
        limits={"max_cost_usd": 0.5, "max_tokens": 10_000_000},
    )

    code, _, report = run_cli(sample_repo, spec)

    assert code == 1
    assert report["reason"] == "budget" and "cost budget" in report["error"]
    assert report["usage"]["cost_usd"] > 0.5


def test_cost_budget_without_prices_is_bad_input(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(model={"name": "house-model"}, limits={"max_cost_usd": 1.0})

    code, output, _ = run_cli(sample_repo, spec)

    assert code == 2 and "model.price" in output
    assert model_env.requests == []


def test_sigterm_writes_the_report_then_resume_completes(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the host must see the pid it signals
    head = sample_repo.head()
    pid_file = sample_repo.tmp / "sleep.pid"
    sleeper = f"echo $$ > {pid_file}; exec sleep 30"
    model_env.add(Reply(tool_calls=[FIX]), Reply(tool_calls=[call("run_command", command=sleeper)]))
    out = sample_repo.tmp / "out"
    argv = [
        sys.executable,
        "-m",
        "codegen_ci",
        "run",
        str(sample_repo.write_spec(validation=QUICK_GATE)),
        "--repo",
        str(sample_repo.path),
        "--output-dir",
        str(out),
    ]
    proc = subprocess.Popen(
        argv, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()

    assert proc.returncode == 3, stdout.decode()
    assert b"Traceback" not in stdout and b"codegen-ci resume" in stdout
    assert wait_gone(int(pid_file.read_text()))
    report = json.loads((out / "report.json").read_text())
    assert (report["status"], report["reason"]) == ("error", "interrupted")
    assert report["worktree"] and Path(report["worktree"]).is_dir()
    assert FIXED_LINE_NEW in (Path(report["worktree"]) / VERSION).read_text()

    model_env.add(Reply("The fix is in place."))
    resumed = CliRunner().invoke(cli, ["resume", str(out)])

    assert resumed.exit_code == 0, resumed.output
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "success" and report["reason"] is None
    assert report["commit"] and report["worktree"] is None
    assert sample_repo.git("rev-parse", report["branch"]).strip() == report["commit"]
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{report['branch']}:{VERSION}")
    last_request = model_env.tool_requests[-1]["messages"]
    assert "resumed" in last_request[-1]["content"]
    assert_checkout_untouched(sample_repo, head)


def test_wall_clock_budget(sample_repo: SampleRepo, model_env: ScriptedModelServer) -> None:
    model_env.add(Reply(tool_calls=[call("run_command", command="sleep 2")]), Reply("?"))
    spec = sample_repo.write_spec(validation=QUICK_GATE, limits={"timeout_minutes": 0.025})

    code, _, report = run_cli(sample_repo, spec)

    assert code == 1
    assert report["reason"] == "budget" and "wall clock" in report["error"]
    assert len(model_env.requests) <= 1  # stopped before the next call (or the first, if slow)
