"""What `codegen-ci action` leaves for the workflow: step outputs, the masks it asks for, and
the stop-commands fence around output it does not control."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codegen_ci.publish.actions import ActionsIO
from codegen_ci.report import Report
from codegen_ci.security.redact import REDACTOR

OUTPUT_NAMES = (
    "status", "pr-url", "branch", "iterations", "report-path", "prompt-tokens",
    "completion-tokens", "cost-usd", "cached-tokens",
)  # fmt: skip


def write_outputs(
    io: ActionsIO, status: str, report: Report | None, *, pr_url: str, branch: str,
    report_path: str,
) -> None:  # fmt: skip
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
