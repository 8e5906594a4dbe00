"""What `codegen-ci batch` shows: each spec's progress lines, prefixed with its name, and the
summary table at the end (a rich table in a terminal, plain columns otherwise)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import click

from codegen_ci.progress import StoppableProgress
from codegen_ci.security.inert_text import for_terminal, raw_stream

if TYPE_CHECKING:
    from codegen_ci.commands.batch_plan import Outcome

COLUMNS = ("spec", "status", "rounds", "branch", "tokens", "time")


class SpecProgress(StoppableProgress):
    """Plain lines for one spec of a batch (a live display per thread would fight over the
    terminal). Once `stop` is set, the next step of the run raises `Interrupted`: worker
    threads get no signals, so this is where they learn the batch is stopping."""

    _write_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str, width: int, stop: threading.Event) -> None:
        super().__init__(sys.stderr, stop, "batch")
        self.prefix = name.ljust(width)

    def line(self, text: str) -> None:
        with self._write_lock:
            for part in text.splitlines() or [""]:
                super().line(f"{self.prefix} | {part}")



def summary_rows(outcomes: Sequence[Outcome]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for o in outcomes:
        r = o.report
        reason = r.reason if r and r.status != "success" and r.reason != "error" else None
        status = o.status + (f" ({reason})" if reason else "")
        if o.status == "error" and o.error:
            status += f": {o.error.splitlines()[0][:60]}"
        rows.append(
            (
                o.planned.name,
                status,
                str(r.iterations) if r else "-",
                (r.branch or "-") if r else "-",
                str(r.usage.total_tokens) if r else "-",
                f"{r.duration_s:.0f}s" if r else "-",
            )
        )
    return rows


def show_summary(outcomes: Sequence[Outcome], out: Path) -> None:
    rows = summary_rows(outcomes)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(*COLUMNS, title="codegen-ci batch")
        for row in rows:
            style = "green" if row[1] == "success" else "red"
            table.add_row(*(Text(for_terminal(v, one_line=True)) for v in row), style=style)
        # rich's styling is ours; the cells are plain text (no markup) with no control
        Console(file=raw_stream(sys.stdout), highlight=False).print(table)
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
        for row in [COLUMNS, *rows]:
            click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    done = sum(o.status == "success" for o in outcomes)
    click.echo(f"{done}/{len(outcomes)} succeeded; reports under {out} (summary.json)")
