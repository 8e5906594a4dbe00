"""Mermaid charts for Markdown that GitHub renders (a ```` ```mermaid ```` block): eval's
resolved share against billed cost, batch's outcomes.

Every label is our text made safe for Mermaid's grammar and for the Markdown fence around it:
letters, digits and a few punctuation marks survive, anything else (quotes, brackets,
backticks, newlines) becomes `_`, and a label is cut to a width that keeps twenty of them
apart. The charts read the same with one configuration or twenty: bars are horizontal (one
line of label each, never overlapping), the value axis is always 0-100 %, and the rows are
ordered by cost, cheapest first, each label ending with its cost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL_WIDTH = 32
MAX_BARS = 40  # more rows than this would not read as a chart; the table has them all
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._\-/:()$,+%=]")


def label(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` as a Mermaid string's content: safe characters only, at most `width`."""
    safe = _UNSAFE.sub("_", " ".join(text.split()))
    return safe if len(safe) <= width else safe[: width - 2].rstrip() + ".."


def fenced(chart: str) -> str:
    return "```mermaid\n" + chart + "```\n"


@dataclass(frozen=True)
class CostPoint:
    """One configuration: its resolved share and what it cost."""

    name: str
    resolved: float  # share of its tasks, 0..1
    cost_usd: float | None  # billed, when the model's prices are known
    billed_tokens: int
    proven: float | None = None  # resolved with proof, 0..1, once a run can prove it


def resolved_against_cost(points: list[CostPoint], title: str = "") -> str:
    """A horizontal bar per configuration, cheapest first: resolved % (and resolved with
    proof %, as a second bar, when any configuration has it); its cost ends its label (US$
    when every configuration's is known, else billed tokens)."""
    priced = all(p.cost_usd is not None for p in points)

    def cost_of(p: CostPoint) -> float:
        return float(p.cost_usd if priced and p.cost_usd is not None else p.billed_tokens)

    shown = sorted(points, key=lambda p: (cost_of(p), p.name))[:MAX_BARS]
    labels: list[str] = []
    for p in shown:
        cost = f"${p.cost_usd:.4f}" if priced and p.cost_usd is not None else _tokens(p)
        text = label(p.name, LABEL_WIDTH - len(cost) - 3) + " - " + cost
        n = 2
        while text in labels:  # two names alike once cut
            suffix = f" ({n})"
            text = label(p.name, LABEL_WIDTH - len(cost) - 3 - len(suffix)) + suffix
            text += " - " + cost
            n += 1
        labels.append(text)
    heading = title or (
        "Resolved % by configuration, cheapest first ("
        + ("cost in US$" if priced else "billed tokens")
        + ")"
    )
    lines = [
        "xychart-beta horizontal",
        f'  title "{label(heading, 100)}"',
        "  x-axis [" + ", ".join(f'"{t}"' for t in labels) + "]",
        '  y-axis "resolved %" 0 --> 100',
        "  bar [" + ", ".join(_pct(p.resolved) for p in shown) + "]",
    ]
    if any(p.proven is not None for p in shown):
        lines.append("  bar [" + ", ".join(_pct(p.proven or 0.0) for p in shown) + "]")
    return "\n".join(lines) + "\n"


def outcomes_pie(counts: dict[str, int], title: str) -> str:
    """A pie of how many ended how (only outcomes that happened)."""
    lines = [f"pie title {label(title, 80)}"]
    for name, count in counts.items():
        if count > 0:
            lines.append(f'  "{label(name)}" : {count}')
    return "\n".join(lines) + "\n"


def _pct(share: float) -> str:
    return f"{100 * max(0.0, min(1.0, share)):.1f}"


def _tokens(p: CostPoint) -> str:
    n = p.billed_tokens
    return f"{n / 1e6:.1f}M tok" if n >= 1e6 else f"{n / 1e3:.0f}k tok" if n >= 1e3 else f"{n} tok"
