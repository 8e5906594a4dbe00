"""Commands cannot flood a run or outlive it: output is capped while it is written, and every
process a command started (`setsid`, double-forked daemons) is gone when the command ends.
Each case has its positive control: the same command outside the tool does flood / orphan."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import BACKENDS
from tests.e2e.run.test_resilience import run_cli, tool_results

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call
from codegen_ci.workspace.proc import run_shell

DAEMON = """
import os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    sys.exit(0)
devnull = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(devnull, fd)
time.sleep(300)
"""


def marked(marker: str) -> list[int]:
    """Live processes whose command line carries `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


def wait_marked(marker: str, seconds: float = 3.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (pids := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"bounds-orphan-{uuid.uuid4().hex[:10]}"
    yield name
    for pid in marked(name):  # a failed test must not leave its sleepers behind
        os.kill(pid, signal.SIGKILL)


def escaping_command(marker: str) -> str:
    """A `setsid` background sleeper and a classic double-forked daemon, both marked."""
    py = sys.executable
    # inline, not a file: a command under Landlock reads nothing outside its allowlist
    return (
        f"setsid {py} -c 'import time; time.sleep(300)' {marker}-setsid > /dev/null 2>&1 & "
        f"{py} -c {shlex.quote(DAEMON)} {marker}-daemon; echo started"
    )


def test_setsid_and_double_forked_daemons_die_with_their_command(
    tmp_path: Path, marker: str
) -> None:
    command = escaping_command(marker)
    # Positive control: run plainly (its own session, as the tool's runner did before), both
    # processes outlive the command and escape its process group.
    subprocess.run(
        command,
        shell=True,
        cwd=tmp_path,
        start_new_session=True,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=30,
    )
    time.sleep(0.3)
    escaped = marked(marker)
    assert len(escaped) == 2
    for pid in escaped:
        os.kill(pid, signal.SIGKILL)
    assert not wait_marked(marker)

    result = run_shell(
        command, cwd=tmp_path, env=dict(os.environ), timeout=30, output_path=tmp_path / "out.log"
    )

    assert result.ok and "started" in result.excerpt()
    assert marked(marker) == []  # gone when run_shell returns, not some time later


def test_a_timed_out_command_takes_its_daemons_with_it(tmp_path: Path, marker: str) -> None:
    command = escaping_command(marker) + "; sleep 60"
    started = time.monotonic()

    result = run_shell(
        command, cwd=tmp_path, env=dict(os.environ), timeout=1, output_path=tmp_path / "out.log"
    )

    assert result.timed_out and time.monotonic() - started < 10
    assert marked(marker) == []


def test_endless_output_leaves_a_bounded_log(tmp_path: Path) -> None:
    log = tmp_path / "yes.log"
    # Positive control: without the cap, `yes` writes well over a megabyte in a moment.
    with log.open("wb") as out:
        subprocess.run("yes | head -c 5000000", shell=True, stdout=out, check=True)
    assert log.stat().st_size == 5_000_000

    result = run_shell("yes", cwd=tmp_path, env=dict(os.environ), timeout=1, output_path=log)

    assert result.timed_out and result.output_bytes > 1_000_000
    text = log.read_text()
    assert log.stat().st_size < 1_000_000
    assert text.startswith("y\ny\n") and "bytes omitted here" in text
    assert text.rstrip().endswith("killed after 1s timeout]")
    omitted = int(text.split("[codegen-ci: ")[1].split(" bytes omitted")[0])
    assert omitted + log.stat().st_size > result.output_bytes  # counted, not stored


def test_endless_output_as_agent_command_and_as_test_command(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(
        validation={"test": ["yes"], "timeout": 2}, limits={"max_iterations": 1}
    )
    model_env.add(Reply(tool_calls=[call("run_command", command="yes")]), Reply("Done."))

    code, output, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] == "max_iterations"
    logs = sorted((sample_repo.tmp / "out" / "logs").glob("*.log"))
    assert {"agent-command-001.log", "round-1-01-test.log"} <= {p.name for p in logs}
    for log in logs:
        text = log.read_text()
        assert log.stat().st_size < 1_000_000, log
        assert text.startswith("y\n") and "bytes omitted here" in text
        assert "killed after 2s timeout" in text
    assert "timed out" in tool_results(model_env.requests[1])


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_orphans_of_agent_and_test_commands_do_not_survive_the_run(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    marker: str,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    agent_cmd = escaping_command(marker + "-agent")
    # then the gate's check of the fix (what the gate finds is not the subject: its exit code)
    test_cmd = escaping_command(marker + "-test") + "; " + QUICK_GATE["test"][0]
    spec = sample_repo.write_spec(
        validation={"test": [test_cmd], "allow_no_tests": True, "timeout": 60}
    )
    # Counted right after the first command ended, by a pattern that does not match itself.
    count = (
        f"cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o '{marker}-agen[t]' | wc -l"
    )
    commands = [call("run_command", command=agent_cmd), call("run_command", command=count)]
    model_env.add(Reply(tool_calls=commands), Reply(tool_calls=[FIX]), Reply("Fixed."))

    code, output, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success"
    second = tool_results(model_env.requests[1]).split("[exit code 0]")
    assert second[1].strip().startswith("started") and second[2].strip() == "0"
    assert marked(marker) == []


# 12,000 cases: a JUnit file of ~680 KB, over the 0.5 MB cap alone (the gate parses it twice a
# run, the pre-flight's and the round's: its size is the cost)
BIG_JUNIT = """
import pathlib
cases = "".join(f'<testcase classname="t" name="test_{i:05d}" time="0.001"/>' for i in range(12000))
pathlib.Path("reports").mkdir(exist_ok=True)
pathlib.Path("reports/junit.xml").write_text(
    f'<testsuites><testsuite name="big" tests="12000">{cases}</testsuite></testsuites>'
)
print("x" * 2_000_000)
"""


@pytest.mark.parametrize("cap_mb", [None, "0.5"])
def test_output_directory_has_a_size_cap(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    cap_mb: str | None,
) -> None:
    """With the default cap (the control) the big JUnit copy and log are kept whole; with a
    0.5 MB cap they are cut, listed in the report, and the run still counts every test."""
    if cap_mb:
        monkeypatch.setenv("CODEGEN_OUTPUT_CAP_MB", cap_mb)
    # inline, not a file beside the repository: under Landlock a command reads nothing there
    command = f"{sys.executable} -c {shlex.quote(BIG_JUNIT)}"
    spec = sample_repo.write_spec(validation={"test": [command], "junit": ["reports/*.xml"]})
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))

    code, output, report = run_cli(sample_repo, spec)

    assert code == 0, output
    out = sample_repo.tmp / "out"
    assert report["rounds"][0]["tests"]["total"] == 12000
    copy = out / "junit" / "round-1-01-test-0-junit.xml"
    log = out / "logs" / "round-1-01-test.log"
    if not cap_mb:
        assert report["output_capped"] == [] and copy.stat().st_size > 500_000
        assert log.stat().st_size > 700_000
        return
    assert not copy.exists() and log.stat().st_size < 40_000
    assert "output directory is over its size cap" in log.read_text()
    capped = "\n".join(report["output_capped"])
    assert "junit/round-1-01-test-0-junit.xml: left out" in capped
    assert "logs/round-1-01-test.log: cut" in capped and "0.5 MB cap" in capped
    assert (out / "capped.txt").read_text().splitlines() == report["output_capped"]
