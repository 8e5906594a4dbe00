"""The charts GitHub renders are valid Mermaid: Mermaid's own parser (npm `mermaid`, installed
once per session) over eval.md's chart with one configuration and with twenty (hostile names,
unknown costs, a proof share) and over batch's outcome pie."""

from __future__ import annotations

import shutil

import pytest
from chart_docs import HOSTILE, eval_doc
from mermaid_check import blocks, install, parse

from codegen_ci.eval.results import markdown
from codegen_ci.publish.mermaid import CostPoint, fenced, outcomes_pie, resolved_against_cost

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def test_mermaids_parser_accepts_every_chart_we_write(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # one npm install for the whole session, shared by the xdist workers
    root = install(tmp_path_factory.getbasetemp().parent / "mermaid-npm")
    one = markdown(eval_doc([("gpt-4o-mini", 4, 3, 0.01)]))
    twenty = markdown(
        eval_doc(
            [(f"{HOSTILE} {i}", 5, i % 6, None) for i in range(10)]
            + [(f"provider/model-with-a-very-long-name-{i}", 5, 2, 0.001 * i) for i in range(10)]
        )
    )
    proof = fenced(
        resolved_against_cost(
            [CostPoint("a", 0.5, 1.0, 10, proven=0.25), CostPoint(HOSTILE, 1.0, 0.0, 0)]
        )
    )
    pie = fenced(outcomes_pie({"success": 3, "failed": 1, HOSTILE: 2}, HOSTILE))
    charts = [chart for md in (one, twenty, proof, pie) for chart in blocks(md)]
    assert len(charts) == 4

    results = parse(root, [*charts, "xychart-beta\n  x-axis [a b\n"])

    assert [r.get("type") for r in results[:4]] == ["xychart", "xychart", "xychart", "pie"], results
    assert all(r["ok"] for r in results[:4]), results
    assert not results[4]["ok"]  # the parser does refuse a broken chart
