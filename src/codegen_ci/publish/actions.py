"""The GitHub Actions runner's I/O: workflow commands on stdout, `GITHUB_OUTPUT`, the job summary
(whose Markdown report_text renders); and what `codegen-ci action` leaves for the workflow
through it: the step outputs of action.yml, the masks it asks for, and the stop-commands fence
around output it does not control.

Formats follow actions/toolkit (`core.setOutput`, `core.notice`, `core.summary`). Everything
written passes the redactor (`REDACTOR`), except `add_mask`, whose whole point is the secret.
Workflow commands go to the stream beneath the CLI's `TerminalStream` (which would defuse a
line starting with `::`); the text they carry passes `for_terminal` here instead.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from codegen_ci.publish.markdown import neutralise
from codegen_ci.report import Report
from codegen_ci.security.inert_text import for_terminal, raw_stream
from codegen_ci.security.redact import REDACTOR

__all__ = [
    "OUTPUT_NAMES",
    "SUMMARY_LIMIT",
    "ActionsIO",
    "escape_data",
    "escape_property",
    "mask_secrets",
    "report_path",
    "untrusted_output",
    "write_outputs",
]

SUMMARY_LIMIT = 1024 * 1024  # GitHub rejects a step summary above 1 MiB
OUTPUT_NAMES = (
    "status",
    "pr-url",
    "branch",
    "iterations",
    "report-path",
    "prompt-tokens",
    "completion-tokens",
    "cost-usd",
    "cached-tokens",
)


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
    ) -> None:
        self.output_file = output_file
        self.summary_file = summary_file
        self.stream = stream if stream is not None else raw_stream(sys.stdout)

    def set_output(self, name: str, value: str) -> None:
        """Append `name<<DELIM ... DELIM` to `GITHUB_OUTPUT`; a no-op outside Actions."""
        if self.output_file is None:
            return
        if not name or "\n" in name or "<<" in name:
            raise ValueError(f"bad output name {name!r}")
        value = REDACTOR.redact(value)
        delimiter = _token("ghadelimiter_", value)
        with self.output_file.open("a", encoding="utf-8", newline="\n") as out:
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    def append_summary(self, markdown: str) -> None:
        if self.summary_file is None:
            return
        text = neutralise(REDACTOR.redact(markdown))
        if len(text.encode()) > SUMMARY_LIMIT:
            note = "\n\n… (summary truncated: GitHub allows 1 MiB)\n"
            text = text.encode()[: SUMMARY_LIMIT - 1024].decode(errors="ignore") + note
        with self.summary_file.open("a", encoding="utf-8") as out:
            out.write(text if text.endswith("\n") else text + "\n")

    def notice(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        title: str | None = None,
    ) -> None:
        self._annotate("notice", message, file, line, title)

    def warning(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        title: str | None = None,
    ) -> None:
        self._annotate("warning", message, file, line, title)

    def error(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        title: str | None = None,
    ) -> None:
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
        text = for_terminal(REDACTOR.redact(text))
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
        self.stream.write(for_terminal(REDACTOR.redact(message)) + "\n")
        self.stream.flush()

    def _annotate(
        self, kind: str, message: str, file: str | None, line: int | None, title: str | None
    ) -> None:
        props = {"file": file, "line": str(line) if line else None, "title": title}
        self._command(kind, props, message)

    def _command(self, name: str, props: dict[str, str | None], message: str) -> None:
        shown = ",".join(
            f"{key}={for_terminal(escape_property(REDACTOR.redact(value)))}"
            for key, value in props.items()
            if value
        )
        head = f"::{name} {shown}" if shown else f"::{name}"
        self.stream.write(f"{head}::{for_terminal(escape_data(REDACTOR.redact(message)))}\n")
        self.stream.flush()


# -- what `codegen-ci action` leaves for the workflow ------------------------------------


def write_outputs(
    io: ActionsIO,
    status: str,
    report: Report | None,
    *,
    pr_url: str,
    branch: str,
    report_path: str,
) -> None:
    """Every output of action.yml, each once (empty or 0 when there is nothing to say)."""
    usage = report.usage if report else None
    cost = usage.cost_usd if usage else None
    values = {
        "status": status,
        "pr-url": pr_url,
        "branch": branch,
        "iterations": str(report.iterations if report else 0),
        "report-path": report_path,
        "prompt-tokens": str(usage.prompt_tokens if usage else 0),
        "completion-tokens": str(usage.completion_tokens if usage else 0),
        "cost-usd": f"{cost:.6f}" if cost is not None else "",
        "cached-tokens": str(usage.cached_tokens if usage else 0),
    }
    for name in OUTPUT_NAMES:
        io.set_output(name, values[name])


def report_path(out: Path | None, workspace: Path | None) -> str:
    """The output directory as the workflow's next step can use it: relative to the
    workspace when inside it (a Docker action's paths differ from the runner's)."""
    if out is None:
        return ""
    if workspace and out.is_relative_to(workspace):
        return str(out.relative_to(workspace))
    return str(out)


def mask_secrets(io: ActionsIO) -> None:
    """`::add-mask::` for every registered secret, before anything else is printed."""
    for line in REDACTOR.mask_commands():
        io.stream.write(line + "\n")
    io.stream.flush()


@contextmanager
def untrusted_output(io: ActionsIO) -> Iterator[None]:
    """Model and test output between stop-commands, so it cannot issue workflow commands."""
    token = f"codegen-{uuid.uuid4()}"
    io.stream.write(f"::stop-commands::{token}\n")
    io.stream.flush()
    try:
        yield
    finally:
        io.stream.write(f"::{token}::\n")
        io.stream.flush()


def _token(prefix: str, text: str) -> str:
    """A random marker that does not occur in `text`."""
    while True:
        token = f"{prefix}{uuid.uuid4()}"
        if token not in text:
            return token
