"""The parent of every command: it outlives the command's processes, whatever they do.

`proc.run_shell` starts this file as a script (`python -I -S process_reaper.py ARGV...`) and
it runs ARGV. The runner has made it a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, set
between fork and exec, kept across exec): a process the command leaves behind, even one that
called `setsid` or double-forked into a daemon, is re-parented to it instead of to init, so it
stays a descendant of this process. When ARGV's process ends, every descendant left is killed
(SIGKILL) and reaped, then this process exits with ARGV's status. SIGTERM (the runner's
timeout or interruption, or the runner's death: `PR_SET_PDEATHSIG`) sends SIGTERM to every
descendant, waits `GRACE_S`, kills what is left the same way and exits. No sandbox is needed;
a PID namespace, where there is one, only adds to it. Linux only (elsewhere the runner falls
back to killing the process group).

It runs once per command, so it starts like a bare interpreter: the standard library's C
modules and `os` only (no `signal`, `ctypes`, `typing` or `pathlib`, each of which would add
as much again).
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


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    status: int | None = None
    terminated = False
    try:
        # Python ignores SIGPIPE and SIGXFSZ; the command gets them back (`yes | head` ends).
        defaults = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT)
        child = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigdef=defaults)
        while status is None:
            pid, raw = os.waitpid(-1, 0)  # also reaps re-parented orphans that exit
            if pid == child:
                status = raw
    except _Terminated:
        terminated = True
    except ChildProcessError:
        pass
    except OSError as exc:
        print(f"codegen-ci: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sweep(GRACE_S if terminated else 0.0)
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))  # report the same death to our runner
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
