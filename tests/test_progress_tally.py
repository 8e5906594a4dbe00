"""Long work of many tasks (eval, batch): in CI logs one plain line per task, as it is; in a
terminal a live bar with tasks done, resolved so far, tokens and cost so far and time left."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from codegen_ci.progress import LiveTally, Tally, TallyStream, interactive, make_tally


def test_plain_mode_prints_each_task_line_as_it_is_and_nothing_else() -> None:
    out = io.StringIO()
    tally = Tally(out)
    tally.start("check", 2, "kept")
    tally.task_done("[1/2] check d02283db5a28 kept, 3s: allow hyphen", resolved=True)
    tally.start("gpt-4o-mini", 2)
    tally.task_done("[1/2] gpt-4o-mini d02283db5a28 resolved (ok)", resolved=True, tokens=900)
    tally.task_done("[2/2] gpt-4o-mini aaa125c14d8d not resolved (gate)", tokens=100, cost=0.5)
    tally.close()

    assert out.getvalue().splitlines() == [
        "[1/2] check d02283db5a28 kept, 3s: allow hyphen",
        "[1/2] gpt-4o-mini d02283db5a28 resolved (ok)",
        "[2/2] gpt-4o-mini aaa125c14d8d not resolved (gate)",
    ]
    assert (tally.done, tally.resolved, tally.tokens, tally.cost) == (2, 1, 1000, 0.5)


def test_ci_or_a_pipe_gets_the_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not interactive(io.StringIO())  # a pipe
    assert type(make_tally()) is Tally  # pytest's stderr is no terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert interactive(Terminal())
    monkeypatch.setenv("CI", "true")
    assert not interactive(Terminal())


def test_the_bar_shows_tasks_done_resolved_tokens_cost_and_time_left() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160, color_system=None)
    tally = LiveTally(console)
    tally.start("gpt-4o-mini", 4)
    tally.task_done("[1/4] gpt-4o-mini d02283db5a28 resolved", resolved=True, tokens=12_000)
    tally.task_done("[2/4] gpt-4o-mini aaa125c14d8d not resolved", tokens=3_456, cost=0.0123)
    # a progress line written meanwhile goes above the bar, whole
    stream = TallyStream(tally)
    stream.write("spec-a | round 1/3: ")
    stream.write("model turn\n")

    shown = io.StringIO()
    Console(file=shown, force_terminal=True, width=160, color_system=None).print(tally.render())
    tally.close()

    bar = shown.getvalue()
    assert "gpt-4o-mini" in bar and "2/4" in bar, bar
    assert "1 resolved" in bar and "15,456 tokens" in bar and "$0.0123" in bar, bar
    assert re.search(r"\$0\.0123 +(\d+:\d\d:\d\d|-:--:--) left", bar), bar  # time left
    lines = buffer.getvalue()
    assert "[1/4] gpt-4o-mini d02283db5a28 resolved" in lines
    assert "spec-a | round 1/3: model turn" in lines
