"""Reflection: a failed round becomes the model's next message.

Bounded and useful: new failures first, then pre-existing ones; for each its id, message and a
trimmed traceback that points at file:line; lint errors; the head and tail of the output when
no JUnit exists. Timings and temp paths are stripped so identical failures read identically;
all of it is fenced as untrusted data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codegen_ci.junit import JUnitCase
from codegen_ci.report import Failure
from codegen_ci.untrusted import fence, head_tail, strip_ansi, strip_nondeterminism
from codegen_ci.validation import RoundOutcome

MAX_DETAILED = 8
MAX_LISTED = 40
MAX_TRACE_CHARS = 1500
MAX_OUTPUT_CHARS = 4000
MAX_MESSAGE_CHARS = 14_000
FILE_LINE = re.compile(r"[\w./\\-]+\.\w+:\d+")


def reflection_message(
    outcome: RoundOutcome,
    *,
    iteration: int,
    max_iterations: int,
    roots: Sequence[str] = (),
) -> str:
    rnd = outcome.round
    t = rnd.tests
    parts = [
        f"Validation round {iteration} of {max_iterations} failed. The harness ran the "
        "repository's own commands; fix the code so they pass. Do not delete, skip or weaken "
        "tests to make them pass.",
        _commands_line(outcome),
    ]
    if t.total:
        parts.append(
            f"Tests: {t.total} total, {t.passed} passed, {t.failed} failed, {t.errors} errors, "
            f"{t.skipped} skipped."
        )
    cases = {c.id: c for c in outcome.junit.failing()}
    tests = [f for f in rnd.failures if f.kind in ("failure", "error")]
    new = [f for f in tests if f.new is not False]
    old = [f for f in tests if f.new is False]
    if new:
        parts.append(_failures("Failing tests (new with your change)" if old else
                               "Failing tests", new, cases, roots))  # fmt: skip
    if old:
        parts.append(_failures(
            "Pre-existing failures (they also fail on the base commit; leave them unless the "
            "task is about them)", old, cases, roots, detailed=False,
        ))  # fmt: skip
    if outcome.lint_errors:
        listed = "\n".join(outcome.lint_errors[:MAX_LISTED])
        parts.append("Lint errors:\n" + fence("lint output", _clean(listed, roots)))
    for command, kind, output in outcome.failed_outputs:
        if kind == "test" and tests or kind == "lint" and outcome.lint_errors:
            continue
        text = head_tail(_clean(output, roots), MAX_OUTPUT_CHARS)
        parts.append(f"Output of `{command}` ({kind}):\n" + fence(f"{kind} output", text))
    if rnd.parse_problems:
        parts.append("JUnit problems: " + "; ".join(rnd.parse_problems[:5]))
    message = "\n\n".join(p for p in parts if p)
    return head_tail(message, MAX_MESSAGE_CHARS)


def _commands_line(outcome: RoundOutcome) -> str:
    shown = []
    for c in outcome.round.commands:
        if c.skipped:
            state = "skipped (lint failed)"
        elif c.timed_out:
            state = "timed out"
        else:
            state = f"exit {c.exit_code}"
        note = " [only the previously failing tests]" if c.targeted else ""
        shown.append(f"- {c.kind}: `{c.command}` -> {state}{note}")
    return "Commands:\n" + "\n".join(shown)


def _failures(
    title: str,
    failures: list[Failure],
    cases: dict[str, JUnitCase],
    roots: Sequence[str],
    *,
    detailed: bool = True,
) -> str:
    lines = [f"{title}: {len(failures)}"]
    for n, failure in enumerate(failures[:MAX_LISTED], 1):
        where = f" ({failure.file}:{failure.line})" if failure.file and failure.line else ""
        message = _clean(failure.message, roots).strip().splitlines()
        lines.append(f"{n}. {failure.id}{where}: {message[0][:300] if message else ''}")
        case = cases.get(failure.id)
        if detailed and n <= MAX_DETAILED and case and case.details.strip():
            lines.append(fence("traceback", trim_traceback(_clean(case.details, roots))))
    if len(failures) > MAX_LISTED:
        lines.append(f"... and {len(failures) - MAX_LISTED} more.")
    return "\n".join(lines)


def trim_traceback(text: str, max_chars: int = MAX_TRACE_CHARS) -> str:
    """Keep the lines that locate the failure (file:line) and the end, within `max_chars`."""
    if len(text) <= max_chars:
        return text
    lines = text.splitlines()
    located = [line for line in lines if FILE_LINE.search(line)][-6:]
    tail = lines[-15:]
    keep = [line for line in located if line not in tail] + ["..."] + tail
    return head_tail("\n".join(keep), max_chars)


def _clean(text: str, roots: Sequence[str]) -> str:
    return strip_nondeterminism(strip_ansi(text), roots=roots)
