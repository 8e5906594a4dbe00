"""Tool calls are bounded, end to end through `codegen-ci run`: a named pipe or a catastrophic
regex cannot hang `search_files`; the wall-clock budget holds between (and inside) tool calls;
a reply with more tool calls than the step budget runs only what the budget allows. What the
gate finds is not their subject: a gate of exit codes (QUICK_GATE)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sample_repo import QUICK_GATE, SampleRepo
from tests.e2e.run.test_resilience import run_cli

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

FLOOD_LINE = "a" * 60 + "!"


def transcript_tool_results(repo: SampleRepo) -> list[str]:
    lines = (repo.tmp / "out" / "transcript.jsonl").read_text().splitlines()
    return [m["content"] for m in map(json.loads, lines) if m["role"] == "tool"]


def finishes_within(seconds: float, args: list[str], cwd: Path) -> bool:
    try:
        subprocess.run(args, cwd=cwd, timeout=seconds, capture_output=True, check=False)
    except subprocess.TimeoutExpired:
        return False
    return True


def limit_cpu(seconds: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))

    return limit


def searches(*patterns: str) -> list[tuple[str, dict[str, Any]]]:
    return [call("search_files", pattern=p) for p in patterns]


def test_file_tools_never_open_a_named_pipe_and_every_tool_result_has_a_size_limit(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two cases planted in one run, each asserted on its own: a named pipe the model made is
    never opened by a file tool, and a listing of 300 long names is cut to a size limit."""
    # Positive control: opening a FIFO for reading blocks until a writer comes.
    fifo = sample_repo.tmp / "control.fifo"
    subprocess.run(["mkfifo", str(fifo)], check=True)
    assert not finishes_within(
        2, [sys.executable, "-c", f"open({str(fifo)!r}).read()"], sample_repo.tmp
    )
    long_dir = "d" * 200
    make = f"mkdir {long_dir} && cd {long_dir} && for i in $(seq 300); do : > f$i-{'x' * 150}; done"
    spec = sample_repo.write_spec(
        validation=QUICK_GATE, limits={"max_iterations": 1, "timeout_minutes": 5}
    )
    model_env.add(
        Reply(tool_calls=[call("run_command", command="mkfifo notes.txt")]),
        Reply(tool_calls=[call("run_command", command=make)]),
        Reply(
            tool_calls=[
                *searches("bump_", "def "),
                call("read_file", path="notes.txt"),
                call("write_file", path="notes.txt", content="x"),
            ]
        ),
        Reply(tool_calls=[call("list_files", path=long_dir)]),
        Reply("Done."),
    )
    started = time.monotonic()

    code, output, report = run_cli(sample_repo, spec)

    assert time.monotonic() - started < 120  # a blocking open would hang past the 5 min budget
    assert code == 1, output
    assert report["reason"] == "max_iterations"
    results = transcript_tool_results(sample_repo)
    # the named pipe
    first, second, read, write = results[2:6]
    assert "src/semver/version.py" in first and "notes.txt" not in first + second
    assert read == "Error: 'notes.txt' does not exist or is not a file"
    assert write == "Error: 'notes.txt' is not a regular file (a pipe, socket or device)"
    # the size limit
    listing = results[6]
    assert len(listing) < 31_000 and "characters of this result cut" in listing
    cut = int(listing.split("[... ")[1].split(" characters")[0])
    assert cut + len(listing) > 300 * 350  # the whole listing: every path, in full
    assert listing.startswith(f"{long_dir}/f1") and listing.rstrip().endswith("x" * 150)


def test_a_catastrophic_regex_ends_with_an_error_result(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    # Positive control: Python's own `re` does not finish this search in a second of CPU time
    # (a CPU limit, not a wall-clock one: a loaded machine cannot make a quick search look
    # endless; the process is stopped by SIGXCPU/SIGKILL, the search unfinished).
    script = f"import re; re.search(r'(a|aa)+$', {FLOOD_LINE!r}); print('finished')"
    control = subprocess.run(
        [sys.executable, "-c", script],
        cwd=sample_repo.tmp,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit_cpu(1),
    )
    assert control.returncode < 0 and "finished" not in control.stdout, control
    spec = sample_repo.write_spec(
        validation=QUICK_GATE, limits={"max_iterations": 1, "timeout_minutes": 5}
    )
    model_env.add(
        Reply(tool_calls=[call("write_file", path="flood.txt", content=FLOOD_LINE + "\n")]),
        Reply(tool_calls=searches(r"(a+)+$", r"(a|aa)+$")),
        Reply("Done."),
    )
    started = time.monotonic()

    code, output, report = run_cli(sample_repo, spec)

    assert time.monotonic() - started < 120  # 5 s of CPU time per search, not the 5 min budget
    assert code == 1, output
    first, second = transcript_tool_results(sample_repo)[1:3]
    assert first == "No matches."  # the engine's own guards answer this one at once
    assert second.startswith("Error: search stopped after 5s (at flood.txt:1)")
    assert "backtrack" in second
    assert report["reason"] == "max_iterations" and report["status"] == "failed"


def test_wall_clock_budget_holds_between_and_inside_tool_calls(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    # Six `sleep 20` in one reply are 120 s of commands; the budget is 3 s.
    spec = sample_repo.write_spec(validation=QUICK_GATE, limits={"timeout_minutes": 0.05})
    model_env.add(Reply(tool_calls=[call("run_command", command="sleep 20")] * 6), Reply("Done."))
    started = time.monotonic()

    code, output, report = run_cli(sample_repo, spec)

    elapsed = time.monotonic() - started
    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] == "budget"
    assert "wall clock limit of 0.05 min" in report["error"]
    assert elapsed < 60, elapsed  # far less than the commands' 120 s: the budget cut them short
    results = transcript_tool_results(sample_repo)
    assert len(results) == 6
    assert results[0].startswith("[timed out: the run's time budget ran out]")
    assert all(r.startswith("Not run: wall clock limit") for r in results[1:])
    assert len(model_env.requests) == 1


def test_a_reply_with_more_tool_calls_than_the_step_budget(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """One reply of 3000 calls under a budget of 1500 steps: the calls within the budget run
    (the positive control: the same call, past the budget, would have answered), every one
    past it is answered as not run, and the turn ends. (Once two runs: a budget of 3000 that
    ran all, then a budget of 1 that ran one; the one run shows both sides of the limit.)"""
    many = [call("read_file", path="README.md")] * 3000
    model_env.add(Reply(tool_calls=many))
    spec = sample_repo.write_spec(
        validation=QUICK_GATE, limits={"max_iterations": 1, "max_steps": 1500}
    )

    code, output, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] == "max_iterations"
    results = transcript_tool_results(sample_repo)
    assert len(results) == 3000  # every call has its answer, as the API requires
    assert all(r.startswith("1\t# semver") for r in results[:1500])
    assert all(r.startswith("Not run: the step limit of 1500 tool calls") for r in results[1500:])
    assert len(model_env.requests) == 1  # the budget ended the turn
