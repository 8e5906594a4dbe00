"""Benchmark 7: what the bounds on commands cost (issues 17 and 27).

Per command: the capped runner with its subreaper parent (`proc.run_shell`: a reaper forked
by the long-lived reaper server, the sweep of leftovers, the output read through a pipe into a
`CappedLog`) against the runner it replaced (the shell straight to a log file in its own
process group, killed as a group), both on `true`; and the ref guard's two checks around a
command (`RefGuard.state`). For scale, a bare `python -I -S -c pass` (what each command paid
when its reaper was an interpreter of its own). Per flood: a command printing `flood_mb` MB,
through each runner: time and the log's size."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.workspace.git_guard import RefGuard
from codegen_ci.workspace.proc import run_shell

TARGET_EXTRA_MS = 40.0  # a tenth of a bare `python -m pytest --version` (~400 ms here)
TARGET_REAPER_MS = 10.0  # what the reaper and its sweep add to one command (issue 27)


def command_caps(calls: int = 40, flood_mb: int = 50) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-caps-") as tmp:
        root = Path(tmp)
        env = dict(os.environ)

        def old_runner(command: str, log: str) -> None:
            _old_runner(command, root, env, root / log)

        def capped_runner(command: str, log: str) -> None:
            run_shell(command, cwd=root, env=env, timeout=600, output_path=root / log)

        old = [_time(lambda: old_runner("true", "old.log")) for _ in range(calls)]
        new = [_time(lambda: capped_runner("true", "new.log")) for _ in range(calls)]
        flood = f"head -c {flood_mb * 1024 * 1024} /dev/zero"
        old_flood = _time(lambda: old_runner(flood, "old-flood.log"))
        new_flood = _time(lambda: capped_runner(flood, "new-flood.log"))
        python = [sys.executable, "-I", "-S", "-c", "pass"]
        python_ms = statistics.median(
            _time(lambda: subprocess.run(python, check=True)) for _ in range(calls)
        )
        refs_ms = _ref_guard_ms(root, calls)
        old_ms, new_ms = statistics.median(old), statistics.median(new)
        extra = new_ms - old_ms + 2 * refs_ms
        return {
            "calls": calls,
            "old_runner_ms": round(old_ms, 1),
            "capped_runner_ms": round(new_ms, 1),
            "ref_guard_ms": round(refs_ms, 1),
            "python_start_ms": round(python_ms, 1),  # the reaper's floor: one interpreter
            "extra_ms_per_command": round(extra, 1),
            "reaper_ms": round(new_ms - old_ms, 1),
            "flood_mb": flood_mb,
            "old_flood_s": round(old_flood / 1000, 2),
            "capped_flood_s": round(new_flood / 1000, 2),
            "old_flood_log_bytes": (root / "old-flood.log").stat().st_size,
            "capped_flood_log_bytes": (root / "new-flood.log").stat().st_size,
            "target": f"extra per command (reaper, sweep, 2 ref checks) <= {TARGET_EXTRA_MS:g} "
            f"ms; the reaper and sweep alone <= {TARGET_REAPER_MS:g} ms",
            "holds": extra <= TARGET_EXTRA_MS and new_ms - old_ms <= TARGET_REAPER_MS,
        }


def _time(func: Any) -> float:
    started = time.perf_counter()
    func()
    return (time.perf_counter() - started) * 1000


def _old_runner(command: str, cwd: Path, env: dict[str, str], log: Path) -> None:
    """The runner before issue 17, in short: output straight to the file, the group killed."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdout=out,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)


def _ref_guard_ms(root: Path, calls: int) -> float:
    repo = root / "repo"
    for args in (
        ["init", "-q", "-b", "main", str(repo)],
        ["-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"],
        ["-C", str(repo), "branch", "feature"],
    ):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@x", *args], check=True)
    guard = RefGuard.for_worktree(repo, "main")
    return statistics.median(_time(guard.state) for _ in range(calls))


if __name__ == "__main__":
    import json

    print(json.dumps(command_caps(), indent=2))
