"""A run's cancellation token: whoever learns that runs must stop (the main thread of a batch,
an eval or a race of candidates, which alone gets the signals) sets it; the pipeline checks it
before each step of a run on a worker thread (a round, a model call, a command) and the step
raises `Interrupted`. One token may be shared by many runs (a batch's specs)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from codegen_ci.errors import Interrupted
from codegen_ci.report import CommandResult


@dataclass(frozen=True)
class Cancel:
    what: str = "run"  # what is stopping, for the message: "the batch was interrupted"
    _event: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """`Interrupted` once the token is set."""
        if self._event.is_set():
            raise Interrupted(f"the {self.what} was interrupted")


class Observer(Protocol):
    """What a run reports its steps to (the progress display)."""

    def model_call(self, step: int) -> None: ...
    def tool_call(self, name: str, arguments: str, result: str) -> None: ...
    def command_started(self, kind: str, command: str) -> None: ...
    def command_finished(self, result: CommandResult) -> None: ...


@dataclass(frozen=True)
class Checked:
    """The run's observer, with the token checked before each model call and command."""

    observer: Observer
    cancel: Cancel

    def model_call(self, step: int) -> None:
        self.cancel.check()
        self.observer.model_call(step)

    def tool_call(self, name: str, arguments: str, result: str) -> None:
        self.observer.tool_call(name, arguments, result)

    def command_started(self, kind: str, command: str) -> None:
        self.cancel.check()
        self.observer.command_started(kind, command)

    def command_finished(self, result: CommandResult) -> None:
        self.observer.command_finished(result)
