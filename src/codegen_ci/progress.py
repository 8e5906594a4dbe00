"""What a person watching the run sees: a rich live status line in a terminal, plain
timestamped lines when output is not a TTY or `CI=true`. Everything shown is redacted, and
passes `for_terminal` (one line each): a tool call's arguments, a command or a test id carry
no escape sequence or other control to the terminal, and cannot start a line of their own."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import AbstractContextManager
from typing import TextIO

from rich.markup import escape

from codegen_ci.errors import Interrupted
from codegen_ci.report import CommandResult, Reason, Report, Status
from codegen_ci.security.inert_text import for_terminal, guarded_streams, raw_stream
from codegen_ci.security.redact import REDACTOR

MAX_COMMAND_CHARS = 160  # of a command in a progress line; the report and logs keep it whole


class Progress:
    """Plain line logs (CI, pipes). Subclasses change how a line is shown."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.round = 0

    def line(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        self.stream.write(f"[{elapsed:6.1f}s] {self.shown(text)}\n")
        self.stream.flush()

    def shown(self, text: str) -> str:
        """`text` as it may be shown: redacted, no control, on one line."""
        return for_terminal(REDACTOR.redact(text), one_line=True)

    # --- events ----------------------------------------------------------------------------

    def stage(self, text: str) -> None:
        self.line(text)

    def round_started(self, iteration: int, max_iterations: int) -> None:
        self.round = iteration
        self.line(f"round {iteration}/{max_iterations}: model turn")

    def model_call(self, step: int) -> None:
        self.status(f"round {self.round}: model step {step}")

    def tool_call(self, name: str, arguments: str, result: str) -> None:
        args = arguments if len(arguments) <= 100 else arguments[:97] + "..."
        outcome = "error" if result.startswith("Error:") else "ok"
        self.line(f"  tool {name} {args} -> {outcome}")

    def command_started(self, kind: str, command: str) -> None:
        self.status(f"round {self.round}: {kind}: {command}")

    def command_finished(self, result: CommandResult) -> None:
        command = REDACTOR.redact(result.command)  # before cutting: a cut secret could slip by
        if len(command) > MAX_COMMAND_CHARS:  # a re-run of the failing tests names every id
            left = len(command) - MAX_COMMAND_CHARS
            command = f"{command[:MAX_COMMAND_CHARS]}... ({left} more characters)"
        self.line(f"  {result.kind}: {command} -> {result.state} ({result.duration_s:.1f}s)")

    def status(self, text: str) -> None:
        """Transient status; plain logs show only lines that matter."""

    def finished(self, report: Report) -> None:
        self.close()
        u = report.usage
        cost = f", ${u.cost_usd:.4f}" if u.cost_usd is not None else ""
        if report.reason == Reason.DRY_RUN:  # checked, not done: never "success"
            commands = sum(len(r.commands) for r in report.rounds)
            self.line(
                f"dry run: {commands} command(s) checked on the untouched code; no model call"
            )
            return
        self.line(
            f"{report.status}"
            + (f" ({report.reason})" if report.reason and report.status != Status.SUCCESS else "")
            + f" after {report.iterations} round(s); tokens {u.prompt_tokens}+"
            f"{u.completion_tokens} ({u.cached_tokens} cached){cost}"
        )

    def close(self) -> None:
        pass


class StoppableProgress(Progress):
    """Progress for a run on a worker thread (batch, eval): worker threads get no signals, so
    once `stop` is set the run's next step (a round, a model call, a command) raises
    `Interrupted` here, naming `what` was interrupted."""

    def __init__(self, stream: TextIO | None, stop: threading.Event, what: str) -> None:
        super().__init__(stream)
        self.stop = stop
        self.what = what

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise Interrupted(f"the {self.what} was interrupted")

    def round_started(self, iteration: int, max_iterations: int) -> None:
        self._check_stop()
        super().round_started(iteration, max_iterations)

    def model_call(self, step: int) -> None:
        self._check_stop()
        super().model_call(step)

    def command_started(self, kind: str, command: str) -> None:
        self._check_stop()
        super().command_started(kind, command)


class RichProgress(Progress):
    """A live spinner with the current activity and elapsed time, above scrolling lines."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        from rich.console import Console

        # rich's own styling goes to the terminal as it is; all our text in it is `shown`.
        self.console = Console(file=raw_stream(sys.stderr), highlight=False)
        self._status = self.console.status("starting", spinner="dots")
        self._status.start()
        # While it runs, rich puts a proxy that prints through its console over sys.stdout
        # and sys.stderr: guard the proxies too, so a print meanwhile is shown like ours.
        self._guard: AbstractContextManager[None] | None = guarded_streams()
        self._guard.__enter__()

    def line(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        self.console.print(f"[dim]{elapsed:6.1f}s[/dim] {escape(self.shown(text))}", markup=True)

    def status(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        self._status.update(f"{escape(self.shown(text))} [dim]({elapsed:.0f}s)[/dim]")

    def close(self) -> None:
        if self._guard is not None:
            self._guard.__exit__(None, None, None)
            self._guard = None
        self._status.stop()


def make_progress() -> Progress:
    interactive = sys.stderr.isatty() and os.environ.get("CI", "").lower() not in ("1", "true")
    return RichProgress() if interactive else Progress()
