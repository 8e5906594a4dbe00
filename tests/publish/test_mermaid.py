"""The Mermaid charts in eval.md, the job summary and batch's summary.md: safe labels, and a
chart that reads the same with one configuration or twenty (tests/e2e/publish/ runs Mermaid's
own parser over them)."""

from __future__ import annotations

import re
from pathlib import Path

from chart_docs import HOSTILE, eval_doc

from codegen_ci.commands.batch import Outcome, Planned, summary_markdown
from codegen_ci.eval.results import markdown
from codegen_ci.publish.mermaid import LABEL_WIDTH, CostPoint, label, resolved_against_cost
from codegen_ci.report import Report, Status
from codegen_ci.spec.model import Spec


def chart_lines(md: str) -> list[str]:
    start = md.index("```mermaid\n") + len("```mermaid\n")
    return md[start : md.index("```\n", start)].splitlines()


def test_a_label_keeps_only_safe_characters_and_is_cut_to_its_width() -> None:
    shown = label(HOSTILE)
    assert len(shown) <= LABEL_WIDTH and shown.endswith("..")
    assert re.fullmatch(r"[A-Za-z0-9 ._\-/:()$,+%=]+", shown), shown
    assert label("gpt-4o-mini") == "gpt-4o-mini"


def test_one_configuration_gives_one_bar_on_a_0_to_100_axis() -> None:
    md = markdown(eval_doc([("gpt-4o-mini", 4, 3, 0.01)]))
    lines = chart_lines(md)
    assert lines[0] == "xychart-beta horizontal"
    assert lines[2] == '  x-axis ["gpt-4o-mini - $0.0400"]'
    assert lines[3] == '  y-axis "resolved %" 0 --> 100'
    assert lines[4] == "  bar [75.0]"
    assert len(lines) == 5  # no second bar: no run proves anything yet


def test_twenty_configurations_are_cheapest_first_with_distinct_short_labels() -> None:
    configs = [(f"{HOSTILE} variant", 5, i % 6, None) for i in range(10)]
    configs += [(f"provider/model-with-a-very-long-name-{i}", 5, 2, 0.001 * i) for i in range(10)]
    md = markdown(eval_doc(configs))
    lines = chart_lines(md)
    labels = re.findall(r'"([^"]*)"', lines[2])
    bars = lines[4].removeprefix("  bar [").removesuffix("]").split(", ")
    assert len(labels) == len(bars) == 20
    assert len(set(labels)) == 20 and all(len(t) <= LABEL_WIDTH for t in labels), labels
    assert "```" not in "".join(lines) and "<" not in "".join(lines)
    # not every cost is known: ordered and labelled by billed tokens
    assert all(t.endswith("k tok") for t in labels), labels


def test_priced_configurations_are_ordered_by_cost_and_a_proof_share_adds_a_bar() -> None:
    points = [
        CostPoint("dear", 0.9, 2.5, 10, proven=0.5),
        CostPoint("cheap", 0.2, 0.1, 10),
        CostPoint("mid", 0.5, 1.0, 10),
    ]
    lines = resolved_against_cost(points).splitlines()
    assert lines[2] == '  x-axis ["cheap - $0.1000", "mid - $1.0000", "dear - $2.5000"]'
    assert lines[4:] == ["  bar [20.0, 50.0, 90.0]", "  bar [0.0, 0.0, 50.0]"]


def test_batch_summary_shows_its_outcomes_as_a_pie_and_a_table() -> None:
    def outcome(name: str, status: Status | None) -> Outcome:
        report = None
        if status is not None:
            report = Report()
            report.finish(status)
        return Outcome(Planned(Path(f"{name}.yaml"), name, Spec(task="t")), 0, report, "boom")

    md = summary_markdown(
        [
            outcome("a", Status.SUCCESS),
            outcome("b", Status.SUCCESS),
            outcome("c", Status.FAILED),
            outcome(HOSTILE, None),
        ]
    )
    assert md.startswith("## codegen-ci batch: 2/4 succeeded\n")
    pie = chart_lines(md)
    assert pie[0] == "pie title 4 spec(s) by outcome"
    assert pie[1:] == ['  "success" : 2', '  "failed" : 1', '  "error" : 1']
    assert "| spec | status |" in md
