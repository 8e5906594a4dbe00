"""What an eval leaves behind: `eval.json` (every task, every configuration's result per task),
`eval.md` (the tables; also the job summary in Actions) and the numbers of one row per
configuration. Commit subjects are the repository's text: they are escaped in Markdown."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci.eval.history import Task
from codegen_ci.eval.judge import REASON_TEXT, CheckResult
from codegen_ci.publish.markdown import code_span, escape_cell, neutralise
from codegen_ci.publish.mermaid import CostPoint, fenced, resolved_against_cost
from codegen_ci.report import ProofStatus, Report
from codegen_ci.security import guarded_write

SCHEMA_VERSION = 1


@dataclass
class TaskRun:
    """One configuration's run of one kept task."""

    task: Task
    resolved: bool
    why: str
    report: Report | None
    report_path: str
    error: str | None = None
    exit_code: int = 0  # what the run alone would exit with (3: infrastructure)

    def rounds(self) -> int:
        """Validation rounds, over every candidate when there were several."""
        r = self.report
        if r is None:
            return 0
        return sum(c.rounds for c in r.candidates) if r.candidates else r.iterations

    def candidates_ran(self) -> int:
        r = self.report
        return len(r.candidates) if r and r.candidates else (1 if r else 0)

    def row(self) -> dict[str, Any]:
        r = self.report
        usage = r.usage if r else None
        return {
            "commit": self.task.commit,
            "resolved": self.resolved,
            "proven": bool(r and r.proof and r.proof.status == ProofStatus.PROVEN),
            "why": self.why,
            "status": r.status if r else "error",
            "reason": r.reason if r else None,
            "error": self.error,
            "rounds": self.rounds(),
            "candidates": self.candidates_ran(),
            "chosen": r.chosen if r else None,
            "billed_tokens": usage.billed_tokens if usage else 0,
            "total_tokens": (usage.prompt_tokens + usage.completion_tokens) if usage else 0,
            "cost_usd": usage.cost_usd if usage else None,
            "duration_s": r.duration_s if r else 0.0,
            "files_changed": r.files_changed if r else [],
            "report": self.report_path,
            "exit_code": self.exit_code,
        }


@dataclass
class Configuration:
    name: str
    model: str
    candidates: int = 1  # attempts per task at most (escalate)
    pinned: bool = False  # the model came from --model: no candidates.models cascade
    runs: list[TaskRun] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return summarize(self.name, self.model, self.candidates, [run.row() for run in self.runs])


def summarize(name: str, model: str, candidates: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A configuration's numbers from its per-task rows (`TaskRun.row`); `eval merge` joins
    shards' rows and sums them up again here."""
    billed = [row["billed_tokens"] for row in rows]
    costs = [row["cost_usd"] for row in rows]
    known_costs = [c for c in costs if c is not None]
    priced = bool(rows) and len(known_costs) == len(costs)
    return {
        "name": name,
        "model": model,
        "candidates": candidates,
        "tasks": len(rows),
        "resolved": sum(row["resolved"] for row in rows),
        "resolved_commits": [row["commit"] for row in rows if row["resolved"]],
        # resolved, and the run itself showed a test failing on the base and passing after;
        # null for rows from before runs recorded proof (a shard of an older version)
        "resolved_with_proof": (
            sum(row["resolved"] and row["proven"] for row in rows)
            if rows and all("proven" in row for row in rows)
            else None
        ),
        "billed_tokens": {"median": _median(billed), "total": sum(billed)},
        "cost_usd": {
            "median": _median(known_costs) if priced else None,
            "total": round(sum(known_costs), 6) if priced else None,
        },
        "duration_s": {
            "median": _median([row["duration_s"] for row in rows]),
            "total": round(sum(row["duration_s"] for row in rows), 3),
        },
        "rounds": {
            "median": _median([row["rounds"] for row in rows]),
            "total": sum(row["rounds"] for row in rows),
        },
        "errors": sum(row["status"] == "error" for row in rows),
    }


def _median(values: list[Any]) -> Any:
    return statistics.median(values) if values else None


def task_entry(task: Task, check: CheckResult | None) -> dict[str, Any]:
    return {
        "commit": task.commit,
        "parent": task.parent,
        "base": task.base,
        "subject": task.subject.raw_for("record"),
        "committed_at": task.committed_at,
        "source_files": task.source_files,
        "test_files": task.test_files,
        "kept": bool(check and check.kept),
        "reason": check.reason if check else None,
        "detail": check.detail if check else "not checked",
        "targets": check.targets if check else [],
        "text": task.text,
        "text_notes": task.notes,
    }


def document(
    meta: dict[str, Any],
    tasks: list[Task],
    checks: dict[str, CheckResult],
    configurations: list[Configuration],
) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        **meta,
        "tasks": [task_entry(t, checks.get(t.commit)) for t in tasks],
        "kept": sum(1 for t in tasks if checks.get(t.commit) and checks[t.commit].kept),
        "configurations": [
            {**c.summary(), "results": [run.row() for run in c.runs]} for c in configurations
        ],
    }


def write_json(doc: dict[str, Any], out: Path) -> Path:
    path = out / "eval.json"
    guarded_write.write_into(path, json.dumps(doc, indent=2) + "\n")
    return path


def markdown(doc: dict[str, Any]) -> str:
    kept = doc["kept"]
    lines = [
        f"## codegen-ci eval: {len(doc['tasks'])} task(s) from the last "
        f"{doc['commits_examined']} commit(s) of {code_span(doc['head'][:12])}, {kept} kept",
        "",
    ]
    if doc.get("interrupted"):
        lines += ["**Interrupted**: the tables hold only what finished.", ""]
    lines += shard_notes(doc)
    if doc["configurations"]:
        lines += [
            "| Configuration | Resolved | Resolved with proof | Billed tokens (median / total) | "
            "Cost US$ (median / total) | Wall time (median) | Rounds (median / total) |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in doc["configurations"]:
            lines.append(
                f"| {escape_cell(c['name'])} | {c['resolved']}/{c['tasks']} | "
                f"{_num(c.get('resolved_with_proof'))}/{c['tasks']} | "
                f"{_num(c['billed_tokens']['median'])} / {_num(c['billed_tokens']['total'])} | "
                f"{_money(c['cost_usd']['median'])} / {_money(c['cost_usd']['total'])} | "
                f"{_secs(c['duration_s']['median'])} | "
                f"{_num(c['rounds']['median'])} / {c['rounds']['total']} |"
            )
        lines += ["", cost_chart(doc)]
        lines += ["", "### Per task", ""]
        names = [escape_cell(c["name"]) for c in doc["configurations"]]
        lines += [
            "| Commit | Subject | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        by_commit = [{r["commit"]: r for r in c["results"]} for c in doc["configurations"]]
        for t in doc["tasks"]:
            if not t["kept"]:
                continue
            cells = []
            for results in by_commit:
                r = results.get(t["commit"])
                cells.append(
                    "-"
                    if r is None
                    else ("✅ resolved" if r["resolved"] else "❌ " + escape_cell(r["why"]))
                )
            lines.append(
                f"| {code_span(t['commit'][:12])} | {escape_cell(t['subject'][:80])} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append("")
    lines += ["### Tasks", "", "| Commit | Subject | Kept | Why |", "|---|---|---|---|"]
    for t in doc["tasks"]:
        why = REASON_TEXT.get(t["reason"] or "", "") if not t["kept"] else ""
        detail = escape_cell((why + ": " if why else "") + t["detail"])
        lines.append(
            f"| {code_span(t['commit'][:12])} | {escape_cell(t['subject'][:80])} | "
            f"{'yes' if t['kept'] else 'no'} | {detail} |"
        )
    # Subjects and reasons are the repository's text: no bidi override reorders the page and
    # no @team is pinged from eval.md or the job summary.
    return neutralise("\n".join(lines) + "\n")


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return (
        f"{value:,.0f}" if isinstance(value, int) or float(value).is_integer() else f"{value:,.1f}"
    )


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}s"


def cost_chart(doc: dict[str, Any]) -> str:
    """Each configuration's resolved share against its billed cost, as a Mermaid chart."""
    points = [
        CostPoint(
            c["name"],
            c["resolved"] / c["tasks"] if c["tasks"] else 0.0,
            c["cost_usd"]["total"],
            c["billed_tokens"]["total"],
            # resolved with proof: a configuration's `resolved_with_proof`, once runs record it
            (c["resolved_with_proof"] / c["tasks"] if c["tasks"] else 0.0)
            if c.get("resolved_with_proof") is not None
            else None,
        )
        for c in doc["configurations"]
    ]
    return fenced(resolved_against_cost(points))


def shard_notes(doc: dict[str, Any]) -> list[str]:
    """What share of the run this document holds (one shard, or shards merged)."""
    shard, merged = doc.get("shard"), doc.get("merged")
    lines = []
    if shard:
        lines.append(f"Shard {shard['index']}/{shard['count']} of the run's tasks.")
    if merged:
        lines.append(f"Merged from {len(merged['shards'])} shard output(s).")
        if merged.get("missing"):
            lines.append(
                "**Incomplete**: missing "
                + ", ".join(escape_cell(m) for m in merged["missing"])
                + "."
            )
    return [*lines, ""] if lines else []
