"""The one subprocess runner for every command the harness or the model starts.

Each command gets its own process group, stdin from /dev/null, and its output streamed to a
file (never held whole in memory). At the timeout the whole group is killed, children that
keep the output open included; after a normal exit, stragglers left in the group are killed
too, so no process outlives its command. An interruption (Ctrl-C, SIGTERM) kills the group
the same way; one that lands while a child is starting or being killed is deferred until the
runner knows the group (see `defer_interrupt`, used by the run command's signal handler).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from typing import IO

KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcResult:
    command: str
    exit_code: int | None
    duration_s: float
    timed_out: bool
    output_path: Path

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def excerpt(self, max_chars: int = 6000) -> str:
        return read_head_tail(self.output_path, max_chars)


def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_path: Path,
    wrap: Sequence[str] = (),
) -> ProcResult:
    """Run `command` through /bin/sh in `cwd`; output (stdout and stderr) goes to `output_path`.
    `wrap`: an argv prefix the shell runs under (the sandbox, see sandbox.py)."""
    output_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    timed_out = False
    with output_path.open("wb") as out:
        proc = _start(command, cwd, env, out, wrap)  # returns with interruptions still deferred
        try:
            _resume_interrupts()  # from here on the finally below kills the group
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Runs on timeout, on normal exit (stragglers) and on KeyboardInterrupt/SIGTERM.
            _defer_interrupts()
            _kill_group(proc)
            _resume_interrupts()
        if timed_out:
            out.write(f"\n[codegen-ci: killed after {timeout:g}s timeout]\n".encode())
    exit_code = None if timed_out else proc.returncode
    return ProcResult(command, exit_code, time.monotonic() - start, timed_out, output_path)


class _Deferral:
    """An interruption (Ctrl-C, SIGTERM) that lands while a child is being started or its group
    killed would leave a process behind; the signal handler defers it to the runner."""

    active = False
    pending = False


_DEFERRAL = _Deferral()


def defer_interrupt() -> bool:
    """For signal handlers (main thread): True when the runner will raise `KeyboardInterrupt`
    itself as soon as the child it is starting or stopping is taken care of."""
    if _DEFERRAL.active:
        _DEFERRAL.pending = True
    return _DEFERRAL.active


def _start(
    command: str, cwd: Path, env: Mapping[str, str], out: IO[bytes], wrap: Sequence[str]
) -> Popen[bytes]:
    _defer_interrupts()
    try:
        return subprocess.Popen(  # the repository's own commands are shell strings
            [*wrap, "/bin/sh", "-c", command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        _resume_interrupts()
        raise


def _defer_interrupts() -> None:
    if threading.current_thread() is threading.main_thread():
        _DEFERRAL.active = True


def _resume_interrupts() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    _DEFERRAL.active = False
    if _DEFERRAL.pending:
        _DEFERRAL.pending = False
        raise KeyboardInterrupt("interrupted while a command was starting or stopping")


def _kill_group(proc: Popen[bytes]) -> None:
    pgid = proc.pid  # start_new_session makes the child its own group leader
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        if sig == signal.SIGTERM:
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
            if not _group_alive(pgid):
                break
    proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def read_head_tail(path: Path, max_chars: int) -> str:
    """The head and tail of a possibly huge file, with a note of what was cut."""
    size = path.stat().st_size if path.exists() else 0
    if size <= max_chars:
        return path.read_bytes().decode("utf-8", errors="replace") if size else ""
    head_len = int(max_chars * 0.4)
    tail_len = max_chars - head_len
    with path.open("rb") as f:
        head = f.read(head_len)
        f.seek(size - tail_len)
        tail = f.read(tail_len)
    cut = size - head_len - tail_len
    return (
        head.decode("utf-8", errors="replace")
        + f"\n... [{cut} bytes of output cut] ...\n"
        + tail.decode("utf-8", errors="replace")
    )
