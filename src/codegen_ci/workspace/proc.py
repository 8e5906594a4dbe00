"""The one subprocess runner for every command the harness or the model starts.

Each command runs under its own reaper (`process_reaper.py`: a child subreaper, so whatever the
command leaves behind, `setsid` and double-forked daemons included, stays below it and is
killed when the command ends) in its own session and process group, with stdin from
/dev/null. The reapers are forks of one long-lived reaper server per process (`ReaperServer`),
started at the first command: no interpreter starts per command. Where the server cannot run,
each command gets a reaper interpreter of its own, as before. Its output (stdout and
stderr) is read as it comes into a `CappedLog` (workspace/output_cap.py): the head and the tail are
kept, the middle is counted. At the timeout the reaper is told to stop (SIGTERM to everything,
then SIGKILL after a grace period); the process group is killed too, as a fallback where
there is no subreaper. An interruption (Ctrl-C, SIGTERM) stops the command the same way; one
that lands while a child is starting or being killed is deferred until the runner knows the
group (`defer_interrupt`, which the run command's signal handler asks first: one that landed
in the middle of `subprocess.Popen` or of the group kill would leave a process behind).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from codegen_ci.security import bwrap
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
    security/sandbox.py). When bubblewrap could not start because a place it was to mount over
    has gone since the prefix was made (a socket its program closed, a folder removed), the
    command runs again without that mount, or with it when the place is back (removed and made
    again meanwhile): no fault of the command's or the machine's."""
    for _ in range(3):
        result = _run_shell(
            command, cwd=cwd, env=env, timeout=timeout, output_path=output_path, wrap=wrap
        )
        if not wrap or result.exit_code != 1:
            return result
        with open(output_path, encoding="utf-8", errors="replace") as out:
            again = bwrap.argv_again(wrap, out.read(4096))
        if again is None:
            return result
        wrap = again
    return result


def _run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_path: Path,
    wrap: Sequence[str],
) -> ProcResult:
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


class Running(Protocol):
    """What the runner needs of a started command: a `Popen`, or a `ServedCommand`."""

    stdout: IO[bytes] | None
    returncode: int | None

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def wait(self) -> int: ...


def _pump(proc: Running, log: CappedLog, deadline: float) -> bool:
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


def _start(command: str, cwd: Path, env: Mapping[str, str], wrap: Sequence[str] = ()) -> Running:
    hold_interrupts()
    try:
        argv = [*wrap, "/bin/sh", "-c", command]
        server = ReaperServer.shared()
        if server is not None:
            return server.start(argv, cwd, env)
        return subprocess.Popen(
            [sys.executable, "-I", "-S", str(REAPER), *argv],
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
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    subreaper, deathsig = PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG
    term = int(signal.SIGTERM)

    def setup() -> None:
        prctl(subreaper, 1, 0, 0, 0)
        prctl(deathsig, term, 0, 0, 0)

    return setup


def _stop(proc: Running, log: CappedLog) -> None:
    """Make sure the command is over: ask the reaper to stop everything (it waits for the
    grace period), then kill the whole group; the output meanwhile still goes to `log`."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        _pump(proc, log, time.monotonic() + KILL_GRACE_S + 1.0)
    if not isinstance(proc, ServedCommand) or proc.poll() is None or proc.swept is False:
        # (a served reaper that reported has swept already and may be gone, its pid free)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # the reaper (group leader) is not reaped yet
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


class ServedCommand:
    """A command under a reaper forked by the `ReaperServer`: the `Popen` surface the runner
    uses, over the reaper's status socket, read as needed: `R <pid>` once it runs the command
    (or `E <errno> <message>`: the working directory cannot be entered, raised as `OSError`),
    then `S <status>` once the command and everything it left are gone."""

    def __init__(self, sock: socket.socket, stdout: IO[bytes], request: dict[str, object]):
        self._sock = sock
        self._buffer = b""
        self._pid: int | None = None
        self._error: OSError | None = None
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None
        self.swept: bool | None = None  # True: the reaper reported; False: it died unreported
        sock.sendall(json.dumps(request).encode())  # the reaper reads it whole, then starts
        sock.shutdown(socket.SHUT_WR)

    @property
    def pid(self) -> int:
        """The reaper's pid (its process group's too)."""
        while self._pid is None and self.swept is None:
            self._advance(block=True)
        self._raise()
        if self._pid is None:
            raise ProcessLookupError("the reaper ended before it started the command")
        return self._pid

    def poll(self) -> int | None:
        while self.swept is None and self._advance(block=False):
            pass
        self._raise()
        return self.returncode

    def wait(self) -> int:
        while self.swept is None:
            self._advance(block=True)
        self._raise()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _advance(self, *, block: bool) -> bool:
        """Read one line from the reaper; False when none is there (yet)."""
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(256, 0 if block else socket.MSG_DONTWAIT)
            except BlockingIOError:
                return False
            except OSError:
                chunk = b""
            if not chunk:  # the reaper ended without a report: killed
                self.returncode, self.swept = -signal.SIGKILL, False
                self._sock.close()
                return False
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\n")
        kind, _, rest = raw.decode().partition(" ")
        if kind == "R":
            self._pid = int(rest)
        elif kind == "S":
            self.returncode, self.swept = int(rest), True
            self._sock.close()
        elif kind == "E":
            number, _, message = rest.partition(" ")
            self._error = OSError(int(number), message)
        return True


class ReaperServer:
    """The long-lived `process_reaper.py --serve` of this process: it forks one reaper per
    command. Started at the first command; started again should it have died."""

    _lock = threading.Lock()
    _shared: ReaperServer | None = None
    _unavailable = False

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # nothing of the runner's environment (its credentials) reaches the server
        env = {k: os.environ[k] for k in ("PATH", "LD_LIBRARY_PATH") if k in os.environ}
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(REAPER), "--serve", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a ^C at the terminal is the runner's to handle
            )
        self.control = ours

    @classmethod
    def shared(cls) -> ReaperServer | None:
        """This process's server; None where there is none to be had (not Linux)."""
        if cls._unavailable:
            return None
        with cls._lock:
            if cls._shared is None or cls._shared.process.poll() is not None:
                if not sys.platform.startswith("linux") or _subreaper_setup() is None:
                    cls._unavailable = True
                    return None
                cls._shared = ReaperServer()
            return cls._shared

    def start(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> ServedCommand:
        """Start `argv` under a new reaper; returns as soon as the request is sent (a `cwd`
        that cannot be entered raises OSError from the command's first `poll` or `wait`)."""
        read_end, write_end = os.pipe()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with theirs:
                try:
                    socket.send_fds(self.control, [b"R"], [write_end, theirs.fileno()])
                except OSError:  # the server died: start another, once
                    with self._lock:
                        if ReaperServer._shared is self:
                            ReaperServer._shared = None
                    server = ReaperServer.shared()
                    if server is None:
                        raise
                    socket.send_fds(server.control, [b"R"], [write_end, theirs.fileno()])
            os.close(write_end)
            write_end = -1
        except BaseException:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
            ours.close()
            raise
        stdout = os.fdopen(read_end, "rb", buffering=0)
        try:
            return ServedCommand(ours, stdout, {"argv": argv, "cwd": str(cwd), "env": dict(env)})
        except BaseException:
            stdout.close()
            ours.close()
            raise


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


# Interruptions (Ctrl-C, SIGTERM) deferred while the runner starts or kills a child: the run
# command's signal handler asks `defer_interrupt` first, and the runner raises
# `KeyboardInterrupt` itself once the child is accounted for.


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


def hold_interrupts() -> None:
    """The runner starts or stops a child: interruptions now wait (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        _DEFERRAL.active = True


def resume_interrupts() -> None:
    """The child is accounted for: raise the interruption that waited, if any."""
    if threading.current_thread() is not threading.main_thread():
        return
    _DEFERRAL.active = False
    if _DEFERRAL.pending:
        _DEFERRAL.pending = False
        raise KeyboardInterrupt("interrupted while a command was starting or stopping")
