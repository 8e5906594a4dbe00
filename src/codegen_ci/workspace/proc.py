"""The one subprocess runner for every command the harness or the model starts.

Each command runs under `process_reaper.py` (a child subreaper: whatever the command leaves
behind, `setsid` and double-forked daemons included, stays below it and is killed when the
command ends) in its own process group, with stdin from /dev/null. Its output (stdout and
stderr) is read as it comes into a `CappedLog` (workspace/output_cap.py): the head and the tail are
kept, the middle is counted. At the timeout the reaper is told to stop (SIGTERM to everything,
then SIGKILL after a grace period); the process group is killed too, as a fallback where
there is no subreaper. An interruption (Ctrl-C, SIGTERM) stops the command the same way; one
that lands while a child is starting or being killed is deferred until the runner knows the
group (interrupt_deferral.py, used by the run command's signal handler).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

from codegen_ci.workspace.interrupt_deferral import hold_interrupts, resume_interrupts
from codegen_ci.workspace.output_cap import CappedLog

KILL_GRACE_S = 2.0
REAPER = Path(__file__).with_name("process_reaper.py")
READ_BYTES = 1 << 20
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ProcResult:
    command: str
    exit_code: int | None
    duration_s: float
    timed_out: bool
    output_path: Path
    output_bytes: int = 0  # everything the command printed, also what the log omits

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
    """Run `command` through /bin/sh in `cwd`; output (stdout and stderr) goes to `output_path`,
    capped (workspace/output_cap.py). `wrap`: an argv prefix the shell runs under (the sandbox, see
    security/sandbox.py)."""
    start = time.monotonic()
    timed_out = False
    with CappedLog(output_path) as log:
        proc = _start(command, cwd, env, wrap)  # returns with interruptions still deferred
        try:
            resume_interrupts()  # from here on the finally below stops the command
            timed_out = not _pump(proc, log, start + timeout)
        finally:
            # Runs on timeout, on normal exit (the fallback group kill) and on interruptions.
            hold_interrupts()
            _stop(proc, log)
            resume_interrupts()
        log.close(f"\n[codegen-ci: killed after {timeout:g}s timeout]\n" if timed_out else "")
    exit_code = None if timed_out else proc.returncode
    return ProcResult(
        command, exit_code, time.monotonic() - start, timed_out, output_path, log.total
    )


def _pump(proc: Popen[bytes], log: CappedLog, deadline: float) -> bool:
    """Copy the command's output into `log` until it ends (True) or `deadline` passes."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if not poller.poll(min(remaining, 1.0) * 1000):
            continue
        data = os.read(fd, READ_BYTES)
        if not data:  # every writer is gone: the reaper has ended and swept
            return True
        log.write(data)


def _start(
    command: str, cwd: Path, env: Mapping[str, str], wrap: Sequence[str] = ()
) -> Popen[bytes]:
    hold_interrupts()
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", str(REAPER), *wrap, "/bin/sh", "-c", command],
            preexec_fn=_subreaper_setup(),  # one prepared C call: see there
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        resume_interrupts()
        raise


@functools.cache
def _subreaper_setup() -> Callable[[], None] | None:
    """What the reaper's process runs between fork and exec: become a child subreaper, and get
    SIGTERM should the runner's thread die. Both survive exec, and done here the reaper itself
    needs no `ctypes` (which would double its start-up). The C function is looked up now, in
    the parent: in the child, where other threads' locks may be held, nothing but the call
    itself runs. None where there is no `prctl` (not Linux): the group kill still applies."""
    import ctypes  # here: the CLI's start-up does not need it

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]  # fmt: skip
    prctl.restype = ctypes.c_int
    subreaper, deathsig = PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG
    term = int(signal.SIGTERM)

    def setup() -> None:
        prctl(subreaper, 1, 0, 0, 0)
        prctl(deathsig, term, 0, 0, 0)

    return setup


def _stop(proc: Popen[bytes], log: CappedLog) -> None:
    """Make sure the command is over: ask the reaper to stop everything (it waits for the
    grace period), then kill the whole group; the output meanwhile still goes to `log`."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        _pump(proc, log, time.monotonic() + KILL_GRACE_S + 1.0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the reaper (group leader) is not reaped yet
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


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
