"""Pull request and failure-comment texts, built from the report (markdown; untrusted text
such as test ids and messages is escaped so it cannot inject markup)."""

from __future__ import annotations

import re

from codegen_ci.candidates import summary_line
from codegen_ci.publish.job_summary import commands_cell, tokens_text
from codegen_ci.publish.markdown_text import code_span
from codegen_ci.publish.neutral import defang_links
from codegen_ci.report import Report, Round
from codegen_ci.security.inert_text import break_references

MAX_FAILURES = 15
TASK_QUOTED = 3000


def escape_md(text: str, limit: int = 300) -> str:
    """Prose on one line with every markup character escaped, and no link or issue
    reference made of it."""
    text = text.replace("\r", " ").replace("\n", " ").strip()
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return break_references(defang_links(re.sub(r"([\\`*_{}\[\]|#!~])", r"\\\1", text)))


def quote(text: str, limit: int = TASK_QUOTED) -> str:
    """Untrusted multi-line text as a block quote: line breaks kept, markup escaped."""
    text = text.strip()
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return "\n".join("> " + escape_md(line, limit) for line in text.splitlines())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


def rounds_table(rounds: list[Round]) -> str:
    rows = [
        "| round | commands | tests (passed/total) | failed | errors |",
        "|---|---|---|---|---|",
    ]
    for rnd in rounds:
        commands = commands_cell(rnd)
        t = rnd.tests
        tests = "unknown (no JUnit)" if rnd.tests_unknown else f"{t.passed}/{t.total}"
        rows.append(f"| {rnd.iteration} | {commands} | {tests} | {t.failed} | {t.errors} |")
    return "\n".join(rows)


def failures_list(report: Report) -> str:
    last = report.rounds[-1] if report.rounds else None
    if not last or not last.failures:
        return ""
    lines = []
    for f in last.failures[:MAX_FAILURES]:
        tag = " (also fails on the base commit)" if f.new is False else ""
        message = code_span(_clip(_first_line(f.message), 200))
        lines.append(f"- {code_span(f.id)}{tag}: {message}")
    if len(last.failures) > MAX_FAILURES:
        lines.append(f"- … and {len(last.failures) - MAX_FAILURES} more (see report.json)")
    if last.baseline_unavailable:
        lines.append("- Baseline unavailable (whether these are new is unknown): "
                     + escape_md(last.baseline_unavailable, 300))  # fmt: skip
    return "\n".join(lines)


def junit_missing_note(report: Report) -> str:
    """Test commands that wrote no JUnit: the gate went by their exit codes only."""
    lines = ["⚠️ **No JUnit report** (the gate went by exit codes only; tests: unknown):"]
    for missing in report.junit_missing[:5]:
        lines.append(f"- {code_span(missing.command)}: {escape_md(missing.hint, 400)}")
    return "\n".join(lines)


def fixed_tests(report: Report) -> list[str]:
    """Tests that failed in some round and pass at the end."""
    if not report.rounds:
        return []
    still = {f.id for f in report.rounds[-1].failures}
    seen: dict[str, None] = {}
    for rnd in report.rounds[:-1]:
        for f in rnd.failures:
            if f.id not in still:
                seen[f.id] = None
    return list(seen)


def usage_line(report: Report) -> str:
    u = report.usage
    cost = f", ${u.cost_usd:.4f} as billed" if u.cost_usd is not None else ""
    return f"{tokens_text(u)} + {u.completion_tokens:,} completion tokens{cost}"


def _rounds(report: Report) -> str:
    return "1 round" if report.iterations == 1 else f"{report.iterations} rounds"


def candidates_text(report: Report) -> str:
    """`\n\nCandidates: 3 candidates ran; chosen #1 ...` for a multi-candidate run, else ""."""
    line = summary_line(report)
    return f"\n\nCandidates: {escape_md(line, 500)}" if line else ""


def pr_body(report: Report, *, task: str, issue_number: int | None, run_url: str | None) -> str:
    parts: list[str] = []  # the publisher puts its marker first (open_or_update_pr)
    if issue_number:
        parts.append(f"Closes #{issue_number}")
    parts.append("## Task\n" + quote(task))
    files = "\n".join(f"- {code_span(p)}" for p in report.files_changed)
    commit = f" in {report.commit[:12]}" if report.commit else ""
    parts.append(f"## What changed{commit}\n" + (files or "_no files_"))
    parts.append(
        f"## Validation ({_rounds(report)}, status **{report.status}**)\n"
        + rounds_table(report.rounds)
    )
    if report.junit_missing:
        parts.append(junit_missing_note(report))
    fixed = fixed_tests(report)
    if fixed:
        parts.append("Failures fixed along the way:\n" + "\n".join(
            f"- {code_span(t)}" for t in fixed[:MAX_FAILURES]))  # fmt: skip
    if report.tests_touched:
        parts.append(
            "⚠️ **Test files or test configuration were edited:** "
            + ", ".join(code_span(p) for p in report.tests_touched)
        )
    if report.refusals:
        parts.append(f"🛡️ {len(report.refusals)} tool call(s) refused for safety (see report).")
    parts.append(f"Usage: {usage_line(report)}; {report.duration_s:.0f}s.")
    if line := candidates_text(report):
        parts.append(line.strip())
    if run_url:
        parts.append(f"[Workflow run]({run_url}) (report, transcript and diff are its artifacts)")
    parts.append("_Opened by codegen-ci. The repository's own lint and tests ran as the gate._")
    return "\n\n".join(parts)


def failure_comment(report: Report, *, run_url: str | None) -> str:
    if report.rounds:
        ran = f"{report.iterations} validation round(s) ran; the last one still failed."
    else:
        ran = escape_md(report.error, 500) if report.error else ""
    why = report.reason or report.status
    parts = [f"### codegen-ci could not complete this task ({why})", ran]
    failures = failures_list(report)
    if failures:
        parts.append("Failing tests and lint errors:\n" + failures)
    if report.rounds:
        parts.append(rounds_table(report.rounds))
    if report.junit_missing:
        parts.append(junit_missing_note(report))
    parts.append(f"Usage: {usage_line(report)}.")
    if line := candidates_text(report):
        parts.append(line.strip())
    if run_url:
        parts.append(
            f"Report, transcript, diff and JUnit files: [workflow run artifacts]({run_url})"
        )
    return "\n\n".join(p for p in parts if p)
