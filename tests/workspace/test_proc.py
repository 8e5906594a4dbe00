"""The one subprocess runner, with real processes: process groups, timeouts that kill
grandchildren holding the output open, output streamed to a file, head-and-tail excerpts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codegen_ci.workspace.proc import ProcResult, ReaperServer, read_head_tail, run_shell


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a reaper."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def run(command: str, tmp_path: Path, timeout: float = 10) -> tuple[ProcResult, str]:
    result = run_shell(
        command,
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=timeout,
        output_path=tmp_path / "logs" / "out.log",
    )
    return result, result.excerpt()


def test_exit_code_and_output_go_to_a_file(tmp_path: Path) -> None:
    result, text = run("echo out; echo err >&2; exit 3", tmp_path)

    assert result.exit_code == 3 and not result.timed_out and not result.ok
    assert text == "out\nerr\n"
    assert (tmp_path / "logs" / "out.log").read_text() == "out\nerr\n"


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    result, text = run("cat; echo done", tmp_path, timeout=5)

    assert result.ok and text == "done\n"


def test_timeout_kills_the_grandchild_that_holds_the_output(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # The child starts a grandchild that keeps stdout open and ignores SIGTERM, then waits.
    script = f"(trap '' TERM; exec sleep 60) & echo $! > {pid_file}; echo started; wait"
    started = time.monotonic()

    result, text = run(script, tmp_path, timeout=1)

    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 30  # far less than the grandchild's 60 s
    assert "started" in text and "killed after 1s timeout" in text
    assert wait_gone(int(pid_file.read_text()))


def test_background_process_does_not_outlive_its_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"

    result, _ = run(f"sleep 60 > /dev/null 2>&1 & echo $! > {pid_file}", tmp_path)

    assert result.ok
    assert wait_gone(int(pid_file.read_text()))


def test_huge_output_is_streamed_and_excerpted(tmp_path: Path) -> None:
    command = f"{sys.executable} -c \"import sys; sys.stdout.write('x' * 5_000_000 + 'END')\""

    result, text = run(command, tmp_path)

    assert result.ok and result.output_bytes == 5_000_003
    log = (tmp_path / "logs" / "out.log").read_text()
    assert len(log) < 800_000 and log.startswith("xxx") and log.endswith("xxxEND")
    assert "bytes omitted here" in log
    assert len(text) < 7000 and text.endswith("END")
    assert "bytes of output cut" in text


def test_head_tail_keeps_both_ends(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("HEAD\n" + "middle line\n" * 10_000 + "TAIL\n")

    text = read_head_tail(log, 1000)

    assert text.startswith("HEAD\n") and text.endswith("TAIL\n") and len(text) < 1100
    assert read_head_tail(tmp_path / "missing.txt", 1000) == ""


def test_an_interruption_kills_the_running_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(f"sleep 60 & echo $! > {pid_file}; wait", tmp_path, timeout=30)
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)

    assert wait_gone(int(pid_file.read_text()))


def test_commands_get_default_sigpipe(tmp_path: Path) -> None:
    """The runner's own Python ignores SIGPIPE; a command must not inherit that (`yes | head`
    would then report a broken pipe instead of ending quietly)."""
    result, text = run("yes | head -n 1; echo done", tmp_path)

    assert result.ok and text == "y\ndone\n"


def test_reapers_are_forks_of_one_server_that_holds_none_of_the_runners_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No interpreter starts per command: each command's reaper (its shell's parent) is a
    fork of the same long-lived server, which got none of the runner's variables."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-runner-secret-0000000000000000")
    reapers, servers = [], []
    for _ in range(2):
        result, text = run("echo $PPID; sleep 0.2", tmp_path)
        assert result.ok
        reapers.append(int(text.split()[0]))
    # the reapers are gone (each ended with its command); their parent is still there
    server = ReaperServer.shared()
    assert server is not None
    servers.append(server.process.pid)
    # a reaper sends the result before it exits: give it a moment to go
    assert reapers[0] != reapers[1] and wait_gone(reapers[0]) and wait_gone(reapers[1])
    assert alive(servers[0])
    assert b"--serve" in Path(f"/proc/{servers[0]}/cmdline").read_bytes()
    assert b"sk-runner-secret" not in Path(f"/proc/{servers[0]}/environ").read_bytes()
    # while a command runs, its reaper is the server's child, and the command sees its env
    result, text = run("echo $PPID; echo $OPENAI_API_KEY; cat /proc/$PPID/stat", tmp_path)
    _, key, stat = text.splitlines()[:3]
    assert key == "sk-runner-secret-0000000000000000"
    assert int(stat.rsplit(")", 1)[1].split()[1]) == servers[0]


def test_concurrent_commands_each_take_their_own_leftovers(tmp_path: Path) -> None:
    pids: dict[int, int] = {}

    def one(n: int) -> None:
        pid_file = tmp_path / f"bg{n}.pid"
        result, _ = run(
            f"setsid sleep 60 > /dev/null 2>&1 & echo $! > {pid_file}; sleep 0.3",
            tmp_path / f"d{n}",
        )
        assert result.ok
        pids[n] = int(pid_file.read_text())

    for n in range(4):
        (tmp_path / f"d{n}").mkdir()
    threads = [threading.Thread(target=one, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(pids) == 4 and all(wait_gone(pid) for pid in pids.values())


def test_a_working_directory_that_cannot_be_entered_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        run_shell(
            "true",
            cwd=tmp_path / "missing",
            env=dict(os.environ),
            timeout=5,
            output_path=tmp_path / "out.log",
        )
    result, text = run("echo fine", tmp_path)  # the runner is still fine
    assert result.ok and text == "fine\n"


RUNNER = """
import os, sys
from pathlib import Path
from codegen_ci.workspace.proc import ReaperServer, run_shell
tmp = Path(sys.argv[1])
command = (f"setsid sleep 300 > /dev/null 2>&1 & echo $! > {tmp}/daemon.pid; "
           f"echo $PPID > {tmp}/reaper.pid; sleep 300")
ReaperServer.shared()
(tmp / "server.pid").write_text(str(ReaperServer.shared().process.pid))
run_shell(command, cwd=tmp, env=dict(os.environ), timeout=600, output_path=tmp / "out.log")
"""


def test_when_the_runner_dies_its_commands_and_their_leftovers_die_too(tmp_path: Path) -> None:
    """SIGKILL to the runner: the server sees its control socket close, stops every reaper,
    each reaper its whole tree, and the server ends."""
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path)])
    deadline = time.monotonic() + 30
    while not (tmp_path / "daemon.pid").exists() or not (tmp_path / "reaper.pid").exists():
        assert time.monotonic() < deadline and runner.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)
    pids = [int((tmp_path / f"{n}.pid").read_text()) for n in ("daemon", "reaper", "server")]
    assert all(alive(pid) for pid in pids)

    runner.kill()
    runner.wait()

    assert all(wait_gone(pid, 10) for pid in pids)
