"""The job summary: a run's report as Markdown for `$GITHUB_STEP_SUMMARY` (and the table
cells that PR bodies share); `ActionsIO.append_summary` writes it."""

from __future__ import annotations

from codegen_ci.candidates import summary_line
from codegen_ci.publish.markdown_text import code_span, escape_cell
from codegen_ci.report import Report, Round, Usage

__all__ = ["FAILURES_SHOWN", "commands_cell", "summary_markdown", "tokens_text"]

FAILURES_SHOWN = 20
_ICONS = {"success": "✅", "failed": "❌", "error": "⚠️"}


def summary_markdown(report: Report, *, run_url: str | None) -> str:
    """The run as Markdown for `$GITHUB_STEP_SUMMARY`; untrusted text is escaped."""
    title = f": {escape_cell(report.title)}" if report.title else ""
    parts = [f"## {_ICONS.get(report.status, '')} codegen-ci {report.status}{title}", ""]
    parts += ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in _facts(report, run_url))]
    if report.error:
        parts += ["", f"**Error:** {escape_cell(report.error)}"]
    if report.rounds:
        parts += ["", "### Rounds", "", "| Round | Commands | Tests |", "|---|---|---|"]
        parts += [f"| {r.iteration} | {commands_cell(r)} | {_totals(r)} |" for r in report.rounds]
        parts += _failures(report.rounds[-1])
    if report.files_changed:
        parts += ["", "### Files changed", ""]
        parts += [f"- {code_span(path)}" for path in report.files_changed]
    if report.refusals:
        parts += ["", "### Refused for safety", "", "| Path | Reason |", "|---|---|"]
        parts += [f"| {code_span(r.path)} | {escape_cell(r.reason)} |" for r in report.refusals]
    return "\n".join(parts) + "\n"


def _facts(report: Report, run_url: str | None) -> list[tuple[str, str]]:
    usage = report.usage
    facts = [
        ("Status", report.status),
        ("Reason", escape_cell(report.reason) if report.reason else ""),
        ("Iterations", str(report.iterations)),
        ("Branch", code_span(report.branch) if report.branch else ""),
        ("Pull request", _link(report.pr_url, report.pr_url) if report.pr_url else ""),
        ("Files changed", str(len(report.files_changed))),
        ("Candidates", escape_cell(line) if (line := summary_line(report)) else ""),
        ("Tokens", f"{tokens_text(usage)} + {usage.completion_tokens:,} completion"),
        ("Cost", f"${usage.cost_usd:.4f} as billed" if usage.cost_usd is not None else "unknown"),
        ("Duration", _duration(report.duration_s)),
        ("Run", _link(run_url, "logs and artifacts") if run_url else ""),
    ]
    return [(key, value) for key, value in facts if value]


def tokens_text(usage: Usage) -> str:
    """`12,345 prompt (10,240 cached)`: the cached part is billed at its discount."""
    cached = f" ({usage.cached_tokens:,} cached)" if usage.cached_tokens else ""
    return f"{usage.prompt_tokens:,} prompt{cached}"


def commands_cell(round_: Round) -> str:
    """A round's commands and their results, for one markdown table cell."""
    shown = []
    for c in round_.commands:
        result = c.state
        focus = (
            " (failing tests only)"
            if c.targeted
            else " (failing tests first)"
            if c.failing_first
            else ""
        )
        shown.append(f"{c.kind}: {code_span(c.command)} → {result}{focus}")
    return "<br>".join(shown) or "—"


def _totals(round_: Round) -> str:
    t = round_.tests
    if round_.tests_unknown:
        return "tests: unknown (no JUnit report)"
    if not t.total:
        return "no test results"
    return f"{t.passed} passed, {t.failed} failed, {t.errors} errors, {t.skipped} skipped"


def _failures(last: Round) -> list[str]:
    if not last.failures:
        return []
    lines = ["", f"### Failing in round {last.iteration}", "", "| Test | Message |", "|---|---|"]
    for failure in last.failures[:FAILURES_SHOWN]:
        message = (failure.message.strip().splitlines() or [""])[0]
        lines.append(f"| {code_span(failure.id)} | {code_span(_clip(message, 200))} |")
    if len(last.failures) > FAILURES_SHOWN:
        lines += ["", f"… and {len(last.failures) - FAILURES_SHOWN} more (see report.json)."]
    return lines


def _link(url: str, label: str) -> str:
    return f"[{escape_cell(label, links=True)}](<{url.replace('>', '%3E').replace(' ', '%20')}>)"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
