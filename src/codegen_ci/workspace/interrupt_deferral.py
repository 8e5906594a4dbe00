"""Interruptions (Ctrl-C, SIGTERM) deferred while the runner starts or kills a child.

One that landed in the middle of `subprocess.Popen` or of the group kill would leave a process
behind; the run command's signal handler asks `defer_interrupt` first, and the runner
(proc.py) raises `KeyboardInterrupt` itself once the child is accounted for.
"""

from __future__ import annotations

import threading


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
