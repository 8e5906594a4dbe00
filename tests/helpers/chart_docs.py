"""Documents the chart tests share (tests/publish/test_mermaid.py, tests/e2e/publish/)."""

from __future__ import annotations

from typing import Any

from codegen_ci.eval.results import summarize

HOSTILE = 'gpt-4o"] \n```\n<script>x</script> `rm` #35; @team ünï 🚀'


def eval_doc(configurations: list[tuple[str, int, int, float | None]]) -> dict[str, Any]:
    """An eval.json document: per configuration (name, tasks, resolved, cost per task)."""
    commits = [f"{i:040x}" for i in range(1, 6)]
    configs = []
    for name, tasks, resolved, cost in configurations:
        rows = [
            {
                "commit": commits[i],
                "resolved": i < resolved,
                "why": "ok",
                "status": "success",
                "billed_tokens": 1000 * (i + 1),
                "cost_usd": cost,
                "duration_s": 3.0,
                "rounds": 1,
            }
            for i in range(tasks)
        ]
        configs.append({**summarize(name, name, 1, rows), "results": rows})
    return {
        "head": "f" * 40,
        "commits_examined": 20,
        "kept": 5,
        "tasks": [
            {"commit": c, "subject": "s", "kept": True, "reason": None, "detail": "d"}
            for c in commits
        ],
        "configurations": configs,
    }
