"""The parent of every command: it outlives the command's processes, whatever they do.

Each command runs under its own *reaper*: a process that is a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`), so a process the command leaves behind, even one that called
`setsid` or double-forked into a daemon, is re-parented to it instead of to init and stays a
descendant of it. When the command's process ends, every descendant left is killed (SIGKILL)
and reaped, then the reaper reports the command's status and exits. SIGTERM (the runner's
timeout or interruption, or the death of the reaper's parent: `PR_SET_PDEATHSIG`) sends SIGTERM
to every descendant, waits `GRACE_S`, kills what is left the same way and exits. No sandbox is
needed; a PID namespace, where there is one, only adds to it. Linux only (elsewhere the runner
falls back to killing the process group).

Reapers are not started as interpreters, one per command (a Python start-up, ~50-80 ms, on
every command). `proc.run_shell` starts this file once per process as a *reaper server*
(`python -I -S process_reaper.py --serve FD`), and for each command sends it, over that
socket, the command's output pipe and a socket of its own. The server keeps `SPARES` forks of
itself waiting on that socket, each already set up as a reaper (a new session, subreaper,
parent-death signal); the kernel hands the request to one of them, and the server forks the
next spare meanwhile. The spare that took it sets stdin from /dev/null, stdout and stderr to
the pipe, reads the request (argv, cwd, environment) from its socket, answers `R <its pid>`
once in the command's working directory (or `E <errno> <message>`, and ends), runs the
command and answers `S <status>` (the exit code, or minus the signal) once everything below it
is gone. The server holds nothing of the
runner's environment; it ends when the runner closes the control socket (the runner's exit or
death), SIGTERMing every reaper still running first.

Run as `python -I -S process_reaper.py ARGV...` it is one reaper for ARGV (the runner's
fallback where the server cannot start), made a subreaper by its runner between fork and exec.

It starts like a bare interpreter: the standard library's C modules and `os` only at first
(no `signal`, `typing` or `pathlib`); the server loads `json`, `socket` and `ctypes` once.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:  # the same functions and numbers, without `signal`'s enum import
    import _signal as signal

GRACE_S = 2.0
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.25  # how often the server collects its ended reapers
SPARES = 2  # reapers forked ahead, waiting for a command


def descendants(root: int) -> list[int]:
    """Every live process below `root` (from /proc: parent ids), deepest last."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")  # noqa: PTH208 - pathlib would double our start-up time
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rsplit(b")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(sig: int) -> bool:
    """Send `sig` to every descendant; False when there is none."""
    pids = descendants(os.getpid())
    for pid in pids:
        try:  # noqa: SIM105 - contextlib would add a third to our start-up time
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return bool(pids)


def _reap() -> bool:
    """Collect every exited child without waiting; False when no child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def sweep(grace: float) -> None:
    """SIGTERM everything below us (when `grace` > 0), then SIGKILL until nothing is left.
    A process forking meanwhile is caught on the next pass: its orphans come to us."""
    if not _reap():
        return  # no child left: then no descendant either (orphans become our children)
    if grace > 0 and _signal_all(signal.SIGTERM):
        deadline = time.monotonic() + grace
        while _reap() and descendants(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.02)
    give_up = time.monotonic() + 10 * GRACE_S  # a process stuck in the kernel cannot be helped
    while time.monotonic() < give_up:
        _signal_all(signal.SIGKILL)
        if not _reap():
            return
        time.sleep(0.005)


class _Terminated(Exception):
    pass


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated  # a plain flag would not do: waitpid is retried after a handler


def reap(argv: list[str], env: dict[str, str]) -> int:
    """Run `argv` as a reaper; the command's exit code, minus the signal that killed it, or
    128 + SIGTERM when we were told to stop. Nothing is left below us on return."""
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    status: int | None = None
    terminated = False
    try:
        # Python ignores SIGPIPE and SIGXFSZ; the command gets them back (`yes | head` ends).
        defaults = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
        child = os.posix_spawnp(argv[0], argv, env, setsigdef=defaults)
        while status is None:
            pid, raw = os.waitpid(-1, 0)  # also reaps re-parented orphans that exit
            if pid == child:
                status = raw
    except _Terminated:
        terminated = True
    except ChildProcessError:
        pass
    except OSError as exc:
        os.write(2, f"codegen-ci: cannot start {argv[0]}: {exc.strerror}\n".encode())
        return 127
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sweep(GRACE_S if terminated else 0.0)
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    """One reaper for `argv`, its runner's child (made a subreaper between fork and exec)."""
    if argv[:1] == ["--serve"]:
        serve(int(argv[1]))
        return 0
    code = reap(argv, dict(os.environ))
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)  # report the same death to our runner
    return code


# --- the server ----------------------------------------------------------------------------


def serve(control_fd: int) -> None:
    """Keep `SPARES` reapers forked and waiting for a request on `control_fd` (a
    SOCK_SEQPACKET socket; the kernel hands each request to one of them), fork another as each
    takes one, until the runner closes its end."""
    import ctypes  # loaded once, by the server only
    import json  # noqa: F401 - for the forks: loaded here once, not in each
    import select
    import socket

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None
    control = socket.socket(fileno=control_fd)
    os.set_inheritable(control_fd, False)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides; a ^C reaches it
    me = os.getpid()
    taken_r, taken_w = os.pipe()  # a spare that takes a request writes a byte here
    children: set[int] = set()

    def fork_spare() -> None:
        pid = os.fork()
        if pid == 0:
            os.close(taken_r)
            os._exit(_spare(control, taken_w, me, prctl))
        children.add(pid)

    poller = select.poll()
    poller.register(control_fd, 0)  # its hang-up only: requests are the spares' to read
    poller.register(taken_r, select.POLLIN)
    try:
        for _ in range(SPARES):
            fork_spare()
        while True:
            for fd, events in poller.poll(POLL_S * 1000):
                if fd == control_fd and events & (select.POLLHUP | select.POLLERR):
                    raise _Terminated  # the runner is gone
                if fd == taken_r:
                    for _ in os.read(taken_r, 64):
                        fork_spare()
            children -= _ended()
    except (_Terminated, OSError):
        pass
    for pid in children:  # spares end, reapers sweep what is below them (grace period)
        try:  # noqa: SIM105
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3 * GRACE_S
    while _reap() and time.monotonic() < deadline:
        time.sleep(0.02)


def _spare(control: object, taken_w: int, server: int, prctl: object) -> int:
    """A reaper in waiting: set up, then take one request and serve it."""
    import socket

    assert isinstance(control, socket.socket)
    try:
        os.setsid()
        if prctl is not None:
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # type: ignore[operator]
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)  # type: ignore[operator]
        if os.getppid() != server:  # the server died before the parent-death signal was set
            return 1
        signal.signal(signal.SIGTERM, _terminate)
        message, fds, _, _ = socket.recv_fds(control, 16, 2)
    except (_Terminated, OSError):
        return 0
    try:  # noqa: SIM105
        os.write(taken_w, b"x")  # the server forks the next spare
    except OSError:
        pass
    os.close(taken_w)
    control.close()
    if not message or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return 0
    return _reaper_child(fds[0], fds[1])


def _ended() -> set[int]:
    ended: set[int] = set()
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.add(pid)


def _reaper_child(out_fd: int, sock_fd: int) -> int:
    """In a spare that took a request: run the command as its reaper, report. Returns the exit
    status of this process (its report went over the socket)."""
    try:
        os.set_inheritable(sock_fd, False)
        request = _read_all(sock_fd)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        for fd in (null, out_fd):
            if fd > 2:
                os.close(fd)
        import json  # loaded by the server already

        data = json.loads(request)
        try:
            os.chdir(data["cwd"])
        except OSError as exc:
            _send(sock_fd, f"E {exc.errno} {exc.strerror}\n")
            return 1
        _send(sock_fd, f"R {os.getpid()}\n")
        code = reap(list(data["argv"]), dict(data["env"]))
        _send(sock_fd, f"S {code}\n")
        return 0
    except _Terminated:
        sweep(GRACE_S)
        _send(sock_fd, f"S {128 + signal.SIGTERM}\n")
        return 0
    except BaseException:  # never return into the server's loop
        return 1


def _send(fd: int, text: str) -> None:
    try:  # noqa: SIM105
        os.write(fd, text.encode())
    except OSError:
        pass  # the runner is gone; the sweep still happens


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
