"""The cancellation token: once set, the run's next step (a model call, a command) raises
`Interrupted` through the observer the pipeline hands the agent and the validator; the
progress display only watches."""

from __future__ import annotations

import io

import pytest

from codegen_ci.cancel import Cancel, Checked
from codegen_ci.errors import Interrupted
from codegen_ci.progress import Progress


def test_an_unset_token_lets_every_step_through_to_the_display() -> None:
    shown = io.StringIO()
    checked = Checked(Progress(shown), Cancel("batch"))

    checked.model_call(1)
    checked.command_started("test", "pytest -q")
    checked.tool_call("read_file", '{"path": "a.py"}', "1: x = 1")

    assert "tool read_file" in shown.getvalue()


def test_a_set_token_stops_the_next_model_call_and_command_naming_what_stopped() -> None:
    cancel = Cancel("batch")
    shown = io.StringIO()
    checked = Checked(Progress(shown), cancel)

    cancel.set()

    with pytest.raises(Interrupted, match="the batch was interrupted"):
        checked.model_call(2)
    with pytest.raises(Interrupted, match="the batch was interrupted"):
        checked.command_started("lint", "ruff check")
    checked.tool_call("read_file", "{}", "ok")  # what already happened is still shown
    assert "tool read_file" in shown.getvalue()


def test_one_token_is_shared_by_many_runs() -> None:
    cancel = Cancel("eval")
    runs = [Checked(Progress(None), cancel) for _ in range(3)]

    cancel.set()

    for run in runs:
        with pytest.raises(Interrupted, match="the eval was interrupted"):
            run.model_call(1)
