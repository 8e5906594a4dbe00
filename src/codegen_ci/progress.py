"""What a person watching the run sees: a rich live status line in a terminal, plain
timestamped lines when output is not a TTY or `CI=true`. Everything shown is redacted, and
passes `for_terminal` (one line each): a tool call's arguments, a command or a test id carry
no escape sequence or other control to the terminal, and cannot start a line of their own."""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from contextlib import AbstractContextManager
from typing import Any, TextIO

from rich.markup import escape

from codegen_ci.report import CommandResult, Reason, Report, Round, Status, not_kept_text
from codegen_ci.security.inert_text import for_terminal, guarded_streams, raw_stream
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted

COMMAND_STATE = re.compile(r"\[(exit code -?\d+|timed out[^\]\n]*)\]")  # workspace/shell.py
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
        if name == "run_command" and (ran := COMMAND_STATE.match(result)):  # how it ended
            outcome = "ok" if ran[1] == "exit code 0" else ran[1]
        self.line(f"  tool {name} {args} -> {outcome}")

    def command_started(self, kind: str, command: str) -> None:
        self.status(f"round {self.round}: {kind}: {command}")

    def command_finished(self, result: CommandResult) -> None:
        command = REDACTOR.redact(result.command)  # before cutting: a cut secret could slip by
        if len(command) > MAX_COMMAND_CHARS:  # a re-run of the failing tests names every id
            left = len(command) - MAX_COMMAND_CHARS
            command = f"{command[:MAX_COMMAND_CHARS]}... ({left} more characters)"
        self.line(f"  {result.kind}: {command} -> {result.state} ({result.duration_s:.1f}s)")

    def round_finished(self, rnd: Round) -> None:
        """What the gate made of the round: its commands' exit codes alone do not say it (a
        round whose commands all pass is refused when the change removed or skipped a test)."""
        self.line(round_verdict(rnd))

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


def round_verdict(rnd: Round, *, named: int = 3) -> str:
    """`round 2: refused: ...`, `round 2: not passed: 3 failing (a, b, c +1 more)` or
    `round 2: passed`, with the round's test totals."""
    tests = f"tests {rnd.tests_text()}"
    if rnd.passed:
        return f"round {rnd.iteration}: passed; {tests}"
    removed = [f for f in rnd.failures if f.kind == "removed"]
    shown = removed or rnd.failures
    if removed:
        verdict = f"refused: the change {not_kept_text(rnd.removed_tests)}"
    elif shown:
        verdict = f"not passed: {len(shown)} failing"
    else:
        verdict = "not passed"
    names = ", ".join(_name(f.id) for f in shown[:named])
    if len(shown) > named:
        names += f" +{len(shown) - named} more"
    return f"round {rnd.iteration}: {verdict}" + (f" ({names})" if names else "") + f"; {tests}"


def _name(test_id: Untrusted) -> str:
    """A test's id as listed in parentheses: the group of a runner that only counts its tests,
    `(the tests of `npm test`)`, without its own pair."""
    name = for_terminal(test_id, one_line=True)
    return name[1:-1] if name.startswith("(") and name.endswith(")") else name


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
    return RichProgress() if interactive() else Progress()


# --- many tasks (eval, batch) ----------------------------------------------------------------


class Tally:
    """Long work of many tasks (eval's tasks, batch's specs): what is done so far. Plain: the
    caller's line per task, as it is (CI logs, pipes). `LiveTally` adds a live bar."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.lock = threading.Lock()
        self.phase, self.total, self.done = "", 0, 0
        self.resolved, self.tokens = 0, 0
        self.cost: float | None = None
        self.what = "resolved"

    def start(self, phase: str, total: int, what: str = "resolved") -> None:
        """A new share of the work (the check, one configuration): counts start again;
        `what` names the tasks that went well (resolved, kept)."""
        with self.lock:
            self.phase, self.total, self.done, self.resolved = phase, total, 0, 0
            self.what = what
            self._started()

    def task_done(
        self, text: str, *, resolved: bool = False, tokens: int = 0, cost: float | None = None
    ) -> None:
        with self.lock:
            self.done += 1
            self.resolved += resolved
            self.tokens += tokens
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost
            self._show(REDACTOR.redact(text))

    def line(self, text: str) -> None:
        with self.lock:
            self._show(REDACTOR.redact(text))

    def close(self) -> None:
        pass

    def _started(self) -> None:
        pass

    def _show(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


class LiveTally(Tally):
    """A rich progress bar under the task lines: tasks done, resolved so far, tokens and cost
    so far, time left (from the pace so far)."""

    def __init__(self, console: Any = None) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self.console = console or Console(file=raw_stream(sys.stderr), highlight=False)
        self.bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeRemainingColumn(),
            TextColumn("left"),
            console=self.console,
            redirect_stderr=False,
            redirect_stdout=False,
        )
        self.task_id: Any = None
        self.bar.start()

    def _started(self) -> None:
        if self.task_id is not None:
            self.bar.remove_task(self.task_id)
        self.task_id = self.bar.add_task(
            escape(self.shown(self.phase)), total=self.total, counts=self._counts()
        )

    def _counts(self) -> str:
        cost = f" · ${self.cost:.4f}" if self.cost is not None else ""
        return f"{self.resolved} {self.what} · {self.tokens:,} tokens{cost}"

    def _show(self, text: str) -> None:
        self.console.print(escape(self.shown(text)), markup=True, highlight=False)
        if self.task_id is not None:
            self.bar.update(self.task_id, completed=self.done, counts=self._counts())

    def shown(self, text: str) -> str:
        return for_terminal(REDACTOR.redact(text), one_line=True)

    def render(self) -> Any:
        """What the bar shows now (a rich renderable)."""
        return self.bar.get_renderable()

    def close(self) -> None:
        self.bar.stop()


class TallyStream(io.TextIOBase):
    """A stream whose whole lines go to a tally (above its live bar): for progress lines
    written while the bar is shown."""

    def __init__(self, tally: Tally) -> None:
        super().__init__()
        self.tally = tally
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.tally.line(line)
        return len(text)


def interactive(stream: TextIO | None = None) -> bool:
    """A person watching a terminal (not a pipe, not CI)."""
    stream = stream or sys.stderr
    return stream.isatty() and os.environ.get("CI", "").lower() not in ("1", "true")


def make_tally() -> Tally:
    return LiveTally() if interactive() else Tally()
