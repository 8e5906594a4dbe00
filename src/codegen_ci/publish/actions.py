"""The GitHub Actions runner's I/O: workflow commands on stdout, `GITHUB_OUTPUT`, the job summary.

Formats follow actions/toolkit (`core.setOutput`, `core.notice`, `core.summary`). Everything
written passes through `redact`, except `add_mask`, whose whole point is the secret itself.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from codegen_ci.report import Report, Round, Usage

__all__ = ["SUMMARY_LIMIT", "ActionsIO", "escape_data", "escape_property", "summary_markdown"]

SUMMARY_LIMIT = 1024 * 1024  # GitHub rejects a step summary above 1 MiB


def _identity(text: str) -> str:
    return text


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class ActionsIO:
    def __init__(
        self,
        *,
        output_file: Path | None,
        summary_file: Path | None,
        stream: TextIO | None = None,
        redact: Callable[[str], str] = _identity,
    ) -> None:
        self.output_file = output_file
        self.summary_file = summary_file
        self.stream = stream if stream is not None else sys.stdout
        self.redact = redact

    def set_output(self, name: str, value: str) -> None:
        """Append `name<<DELIM ... DELIM` to `GITHUB_OUTPUT`; a no-op outside Actions."""
        if self.output_file is None:
            return
        if not name or "\n" in name or "<<" in name:
            raise ValueError(f"bad output name {name!r}")
        value = self.redact(value)
        delimiter = _token("ghadelimiter_", value)
        with self.output_file.open("a", encoding="utf-8", newline="\n") as out:
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    def append_summary(self, markdown: str) -> None:
        if self.summary_file is None:
            return
        text = self.redact(markdown)
        if len(text.encode()) > SUMMARY_LIMIT:
            note = "\n\n… (summary truncated: GitHub allows 1 MiB)\n"
            text = text.encode()[: SUMMARY_LIMIT - 1024].decode(errors="ignore") + note
        with self.summary_file.open("a", encoding="utf-8") as out:
            out.write(text if text.endswith("\n") else text + "\n")

    def notice(
        self, message: str, *, file: str | None = None, line: int | None = None,
        title: str | None = None,
    ) -> None:  # fmt: skip
        self._annotate("notice", message, file, line, title)

    def warning(
        self, message: str, *, file: str | None = None, line: int | None = None,
        title: str | None = None,
    ) -> None:  # fmt: skip
        self._annotate("warning", message, file, line, title)

    def error(
        self, message: str, *, file: str | None = None, line: int | None = None,
        title: str | None = None,
    ) -> None:  # fmt: skip
        self._annotate("error", message, file, line, title)

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A collapsible section of the log; GitHub does not nest them."""
        self._command("group", {}, title)
        try:
            yield
        finally:
            self._command("endgroup", {}, "")

    def untrusted_block(self, text: str) -> None:
        """Print text that must not run workflow commands (model output, test logs)."""
        text = self.redact(text)
        token = _token("", text)
        self._command("stop-commands", {}, token)
        self.stream.write(text if text.endswith("\n") or not text else text + "\n")
        self.stream.write(f"::{token}::\n")
        self.stream.flush()

    def add_mask(self, value: str) -> None:
        """Ask the runner to mask a secret in the log; each line of a multi-line one too."""
        for part in dict.fromkeys([value, *value.splitlines()]):
            if part.strip():
                self.stream.write(f"::add-mask::{escape_data(part)}\n")
        self.stream.flush()

    def log(self, message: str) -> None:
        """A plain log line (ours, so it may contain workflow commands on purpose)."""
        self.stream.write(self.redact(message) + "\n")
        self.stream.flush()

    def _annotate(
        self, kind: str, message: str, file: str | None, line: int | None, title: str | None
    ) -> None:
        props = {"file": file, "line": str(line) if line else None, "title": title}
        self._command(kind, props, message)

    def _command(self, name: str, props: dict[str, str | None], message: str) -> None:
        shown = ",".join(
            f"{key}={escape_property(self.redact(value))}" for key, value in props.items() if value
        )
        head = f"::{name} {shown}" if shown else f"::{name}"
        self.stream.write(f"{head}::{escape_data(self.redact(message))}\n")
        self.stream.flush()


def _token(prefix: str, text: str) -> str:
    """A random marker that does not occur in `text`."""
    while True:
        token = f"{prefix}{uuid.uuid4()}"
        if token not in text:
            return token


# --- the job summary -------------------------------------------------------------------------

FAILURES_SHOWN = 20
_ICONS = {"success": "✅", "failed": "❌", "error": "⚠️"}
_MARKDOWN_SPECIALS = "\\`*_[]|~"


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
        lines.append(f"| {code_span(failure.id)} | {escape_cell(_clip(message, 200))} |")
    if len(last.failures) > FAILURES_SHOWN:
        lines += ["", f"… and {len(last.failures) - FAILURES_SHOWN} more (see report.json)."]
    return lines


def escape_cell(text: str) -> str:
    """Plain text for a Markdown table cell: no HTML, no formatting, no cell breaks."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in text)


def code_span(text: str) -> str:
    """Text as inline code that its own backticks, pipes or newlines cannot break out of."""
    text = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"{fence}{text}{fence}"


def _link(url: str, label: str) -> str:
    return f"[{escape_cell(label)}](<{url.replace('>', '%3E').replace(' ', '%20')}>)"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
