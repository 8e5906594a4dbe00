"""A run's report as Markdown: the pull request body, the failure comment and the job summary
(for `$GITHUB_STEP_SUMMARY`, which `ActionsIO.append_summary` writes). Untrusted text such as
test ids and messages is escaped for its spot (markdown) so it cannot inject markup."""

from __future__ import annotations

from codegen_ci.candidates import summary_line
from codegen_ci.publish.markdown import code_span, escape_cell, escape_md
from codegen_ci.publish.proof_text import proof_section
from codegen_ci.publish.tool_words import tool_words
from codegen_ci.report import Reason, Report, Round, Usage, not_kept_text
from codegen_ci.security.untrusted import Untrusted

__all__ = [
    "FAILURES_SHOWN",
    "candidates_text",
    "commands_cell",
    "failure_comment",
    "pr_body",
    "rounds_text",
    "summary_markdown",
    "tokens_text",
    "usage_line",
]

MAX_FAILURES = 15  # in a pull request body or a failure comment
FAILURES_SHOWN = 20  # in the job summary
TASK_QUOTED = 3000
_ICONS = {"success": "✅", "failed": "❌", "error": "⚠️"}

# -- the pull request body and the failure comment ---------------------------------------


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
        if rnd.tests_carried:  # the round stopped after the previously failing tests
            tests += f" ({rnd.tests_carried} as in the last full run)"
        rows.append(f"| {rnd.iteration} | {commands} | {tests} | {t.failed} | {t.errors} |")
    return "\n".join(rows + refused_rounds(rounds))


def refused_rounds(rounds: list[Round]) -> list[str]:
    """For each round the gate refused because the change removed or skipped existing tests
    (its commands may all have passed): the round and each test, below the rounds table."""
    lines = []
    for rnd in rounds:
        removed = [f for f in rnd.failures if f.kind == "removed"]
        if not removed:
            continue
        named = ", ".join(
            f"{code_span(f.id)} ({escape_md(f.message, 60)})" for f in removed[:MAX_FAILURES]
        )
        more = f" and {len(removed) - MAX_FAILURES} more" if len(removed) > MAX_FAILURES else ""
        lines.append(
            f"\n🛡️ Round {rnd.iteration} refused, the change "
            f"{not_kept_text(rnd.removed_tests) or 'did not keep existing tests'}: {named}{more}"
        )
    return lines


def failures_list(report: Report) -> str:
    last = report.rounds[-1] if report.rounds else None
    if not last or not last.failures:
        return ""
    lines = []
    for f in last.failures[:MAX_FAILURES]:
        tag = " (also fails on the base commit)" if f.new is False else ""
        message = code_span(f.message.map(lambda m: _clip(_first_line(m), 200)))
        lines.append(f"- {code_span(f.id)}{tag}: {message}")
    if len(last.failures) > MAX_FAILURES:
        lines.append(f"- … and {len(last.failures) - MAX_FAILURES} more (see report.json)")
    if last.baseline_unavailable:
        lines.append(
            "- Baseline unavailable (whether these are new is unknown): "
            + tool_words(last.baseline_unavailable)
        )
    return "\n".join(lines)


def junit_missing_note(report: Report) -> str:
    """Test commands that wrote no JUnit: the gate went by their exit codes only."""
    counted = bool(report.rounds) and report.rounds[-1].tests.total > 0
    what = (
        "the gate went by these commands' exit codes; the test counts are the other commands'"
        if counted
        else "the gate went by exit codes only; tests: unknown"
    )
    lines = [f"⚠️ **No JUnit report** ({what}):"]
    for missing in report.junit_missing[:5]:
        lines.append(f"- {code_span(missing.command)}: {tool_words(missing.hint, 400)}")
    return "\n".join(lines)


def fixed_tests(report: Report) -> list[Untrusted]:
    """Tests that failed in some round and pass at the end (a test the change removed, then
    put back, was refused, not fixed: `refused_rounds` names it)."""
    if not report.rounds:
        return []
    still = {f.id for f in report.rounds[-1].failures}
    seen: dict[Untrusted, None] = {}
    for rnd in report.rounds[:-1]:
        for f in rnd.failures:
            if f.id not in still and f.kind != "removed":
                seen[f.id] = None
    return list(seen)


def usage_line(report: Report) -> str:
    u = report.usage
    cost = f", ${u.cost_usd:.4f} as billed" if u.cost_usd is not None else ""
    return f"{tokens_text(u)} + {u.completion_tokens:,} completion tokens{cost}"


def rounds_text(report: Report) -> str:
    """`1 round` or `3 rounds`: how many validation rounds the run took."""
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
        f"## Validation ({rounds_text(report)}, status **{report.status}**)\n"
        + rounds_table(report.rounds)
    )
    if note := preexisting_lint_text(report):
        parts.append(note)
    if section := proof_section(report):
        parts.append(section)
    if report.junit_missing:
        parts.append(junit_missing_note(report))
    fixed = fixed_tests(report)
    if fixed:
        parts.append(
            "Failures fixed along the way:\n"
            + "\n".join(f"- {code_span(t)}" for t in fixed[:MAX_FAILURES])
        )
    if text := edited_tests_text(report):
        parts.append(text)
    if text := removed_tests_text(report):
        parts.append(text)
    if report.refusals:
        parts.append(f"🛡️ {len(report.refusals)} tool call(s) refused for safety (see report).")
    parts.append(f"Usage: {usage_line(report)}; {report.duration_s:.0f}s.")
    if line := candidates_text(report):
        parts.append(line.strip())
    if run_url:
        parts.append(f"[Workflow run]({run_url}) (report, transcript and diff are its artifacts)")
    parts.append("_Opened by codegen-ci. The repository's own lint and tests ran as the gate._")
    return "\n\n".join(parts)


def preexisting_lint_text(report: Report) -> str:
    """A lint command whose `exit 1` the rounds table shows although the run succeeded: it
    failed on the base commit already, and only errors the change adds count."""
    if not report.preexisting_lint:
        return ""
    commands = ", ".join(code_span(lint.command) for lint in report.preexisting_lint)
    return (
        f"Lint that already fails on the base commit: {commands} (pre-existing, left to you; "
        "only errors the change adds count against it)."
    )


def failure_comment(report: Report, *, run_url: str | None) -> str:
    if report.reason == Reason.NO_CHANGE:
        ran = escape_md(report.error, 500) if report.error else ""
    elif report.rounds:
        ran = f"{report.iterations} validation round(s) ran; the last one still failed."
    else:
        ran = escape_md(report.error, 500) if report.error else ""
    why = report.reason or report.status
    parts = [f"### codegen-ci could not complete this task ({why})", ran]
    failures = failures_list(report)
    if failures:
        parts.append("Failing tests and lint errors:\n" + failures)
    if section := proof_section(report, "####"):
        parts.append(section)
    if report.rounds:
        parts.append(rounds_table(report.rounds))
    parts.append(preexisting_lint_text(report))
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


# -- the job summary ---------------------------------------------------------------------


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
        parts += refused_rounds(report.rounds)
        parts += _failures(report.rounds[-1])
    if note := preexisting_lint_text(report):
        parts += ["", note]
    if section := proof_section(report, "###"):
        parts += ["", section]
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
        message = failure.message.map(lambda m: _clip((m.strip().splitlines() or [""])[0], 200))
        lines.append(f"| {code_span(failure.id)} | {code_span(message)} |")
    if len(last.failures) > FAILURES_SHOWN:
        lines += ["", f"… and {len(last.failures) - FAILURES_SHOWN} more (see report.json)."]
    return lines


def _link(url: str, label: str) -> str:
    return f"[{escape_cell(label, links=True)}](<{url.replace('>', '%3E').replace(' ', '%20')}>)"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def edited_tests_text(report: Report) -> str:
    """A warning for existing tests or test configuration the change edited; for tests it
    only added (a new test file, new tests in one), what the task usually asks for, a note."""
    added = [p for p in report.tests_touched if p in report.tests_added]
    edited = [p for p in report.tests_touched if p not in report.tests_added]
    lines = []
    if edited:
        lines.append(
            "⚠️ **Test files or test configuration were edited:** "
            + ", ".join(code_span(p) for p in edited)
        )
    if added:
        lines.append("Adds tests in " + ", ".join(code_span(p) for p in added) + ".")
    return "\n\n".join(lines)


def removed_tests_text(report: Report) -> str:
    """What the PR says of existing tests when the task allowed removing or skipping them
    (`validation.protect_tests: false`): that it did, and each test removed or skipped."""
    if not report.removed_tests_allowed:
        return ""
    removed = report.removed_tests
    text = (
        "⚠️ **Existing tests were not protected:** the task allows removing or skipping them "
        "(`validation.protect_tests: false`)"
    )
    if not removed:
        return text + "; none was removed or skipped."
    listed = "\n".join(f"- {code_span(r.id)} ({r.how})" for r in removed[:MAX_FAILURES])
    more = f"\n- ... and {len(removed) - MAX_FAILURES} more" if len(removed) > MAX_FAILURES else ""
    return f"{text}. Removed or skipped by this change:\n{listed}{more}"
