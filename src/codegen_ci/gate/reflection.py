"""Reflection: a failed round becomes the model's next message.

Bounded by construction (every section has a budget, the whole stays under
`MAX_MESSAGE_CHARS` whatever the suite printed) and useful: the commands and their exit
codes, test totals, then the failing tests, new ones first, each with its id, `file:line` and
message, and for the first few a trimmed traceback; pre-existing failures only by name; lint
output trimmed to the errors; the head and tail of the output of a command that failed
without JUnit or recognisable lint errors. The base commit's tests the change removed, skipped
or weakened come first, fenced as the failing tests are: the round's own `removed` failures
(gate/kept_tests.py refused it for them), or, on a round that failed for its tests anyway,
those the caller `noticed` (a section of their own, beside the failures, so the model hears
that a deleted test is no fix before the failures are gone, not a round later). Paths
inside the worktree are shown relative to it, as the model passes them to its tools; timings,
temp paths and other absolute roots are stripped so identical failures read identically;
everything the repository's commands printed is fenced as untrusted data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import partial

from codegen_ci.gate.junit.parse import JUnitCase
from codegen_ci.gate.validation import RoundOutcome
from codegen_ci.report import CommandResult, Failure, RemovedTest, Round, location
from codegen_ci.security.untrusted import (
    Untrusted,
    fence,
    head_tail,
    strip_ansi,
    strip_invisible,
    strip_nondeterminism,
)

MAX_MESSAGE_CHARS = 12_000
MAX_DETAILED = 5  # failures shown with a traceback
MAX_TRACE_CHARS = 1_200
MAX_LINE_CHARS = 300
FAILURES_BUDGET = 5_000
LINT_BUDGET = 2_000
NOTICED_BUDGET = 1_500  # the tests a round that failed anyway removed: a short section
OUTPUT_BUDGET = 2_500  # per failed command without JUnit, at most two of them
MAX_COMMANDS = 12
SECTION_OVERHEAD = 400  # a title, a fence, a count of what was left out
FILE_LINE = re.compile(r"[\w./\\<>-]+\.\w+:\d+")


def reflection_message(
    outcome: RoundOutcome,
    *,
    iteration: int,
    max_iterations: int,
    roots: Sequence[str] = (),
    noticed: Sequence[RemovedTest] = (),
) -> str:
    """The next user message after failed round `iteration`; `roots` (worktree first) are
    absolute paths replaced by placeholders. `noticed`: the base commit's tests a round that
    failed anyway removed, skipped or weakened (gate/kept_tests.py), not its failures."""
    rnd = outcome.round

    def clean(text: str) -> str:
        return strip_nondeterminism(repo_relative(strip_ansi(text), roots[:1]), roots=roots)

    parts = [
        f"Validation round {iteration} of {max_iterations} failed. The harness ran the "
        "repository's own commands; fix the code so they pass. Do not delete, skip or weaken "
        "tests to make them pass.",
        _commands(rnd.commands),
    ]

    def room(cap: int) -> int:
        """A section's budget: its own cap, or what is left of the message's."""
        used = sum(len(p) + 2 for p in parts) + SECTION_OVERHEAD
        return max(0, min(cap, MAX_MESSAGE_CHARS - used - SECTION_OVERHEAD))

    t = rnd.tests
    if t.total:
        scope = ""
        if _targeted(rnd):
            carried = rnd.tests_carried
            rest = f"; the other {carried} count as in the last full run" if carried else ""
            scope = f" (only the previously failing tests were re-run{rest})"
        parts.append(
            f"Tests{scope}: {t.total} total, {t.passed} passed, {t.failed} failed, "
            f"{t.errors} errors, {t.skipped} skipped."
        )
    elif rnd.tests_unknown:
        parts.append("Tests: unknown (the test commands wrote no JUnit report; see their output).")
    if rnd.baseline_unavailable:
        parts.append(
            "Baseline unavailable (whether a failure is new is unknown): "
            + clean(rnd.baseline_unavailable)[:MAX_LINE_CHARS]
        )
    if outcome.removed_tests:
        parts.append(_removed(outcome.removed_tests, clean, room(FAILURES_BUDGET)))
    elif noticed:
        parts.append(_removed(noticed, clean, room(NOTICED_BUDGET), besides_failures=True))
    cases = {c.key: c for c in outcome.junit.failing()}
    tests = [f for f in rnd.failures if f.kind in ("failure", "error")]
    new = [f for f in tests if f.new is not False]
    old = [f for f in tests if f.new is False]
    if new:
        title = "Failing tests introduced by the change" if old else "Failing tests"
        parts.append(_failures(title, new, cases, clean, room(FAILURES_BUDGET), MAX_DETAILED))
    if outcome.lint_errors:
        errors = Untrusted.join(
            "\n", (e.map(lambda line: clean(line)[:MAX_LINE_CHARS]) for e in outcome.lint_errors)
        )
        cap = partial(head_tail, max_chars=room(LINT_BUDGET))
        parts.append(
            f"Lint errors ({len(outcome.lint_errors)}):\n"
            + fence("lint errors", errors.map(strip_invisible).map(cap))
        )
    unexplained = [f for f in outcome.failed if not f.explained]
    for failed in unexplained[:2]:
        found = failed.places()
        if found:  # plain `cargo test`: where each test panicked, before the output
            runner, places = found
            listed = "\n".join(f"{p.test} at {location(p.file, p.line)}" for p in places)
            label = runner.FAILED_AT_LABEL
            shown = Untrusted(strip_invisible(clean(listed)))
            parts.append(f"{runner.FAILED_AT_TITLE}:\n" + fence(label, shown))
        cap = partial(head_tail, max_chars=room(OUTPUT_BUDGET))
        text = failed.output.map(clean).map(strip_invisible).map(cap)
        parts.append(
            f"Output of `{clean(failed.command)[:200]}` ({failed.kind}), head and tail:\n"
            + fence(f"{failed.kind} output", text)
        )
    if len(unexplained) > 2:
        parts.append(f"({len(unexplained) - 2} more failed commands; see the commands above.)")
    if old:
        # Often the very tests the task is about (a bug fix starts from a failing test), so
        # they keep their tracebacks when no new failure needs the room.
        title = (
            "Failing tests that also fail on the base commit (pre-existing; leave them "
            "unless the task is about them)"
        )
        budget = room(FAILURES_BUDGET // 3 if new else FAILURES_BUDGET)
        parts.append(_failures(title, old, cases, clean, budget, MAX_DETAILED - len(new)))
    if rnd.parse_problems:
        problems = "\n".join(clean(p)[:200] for p in rnd.parse_problems[:3])
        parts.append(
            "JUnit reports that could not be read:\n" + fence("parse problems", Untrusted(problems))
        )
    message = "\n\n".join(parts)
    # The budgets above keep the message under the bound; this is only the backstop.
    return head_tail(message, MAX_MESSAGE_CHARS)


def _removed(
    removed: Sequence[RemovedTest],
    clean: Callable[[str], str],
    budget: int,
    *,
    besides_failures: bool = False,
) -> str:
    """The base commit's tests the change removed, skipped or weakened (gate/kept_tests.py);
    `besides_failures`: of a round that failed for its tests anyway."""
    entries: list[Untrusted] = []
    for r in removed:
        if r.how == "weakened" and r.doctest:
            note = f"{r.count} doctest example(s) fewer run than on the base commit"
        elif r.how == "weakened":
            note = f"{r.count} assertion(s) fewer than on the base commit"
        else:
            note = r.how + (f" ({r.count} runs)" if r.count > 1 else "")
        name = r.id.map(lambda i: strip_invisible(clean(i))[:MAX_LINE_CHARS])
        entries.append(Untrusted("- ") + name + Untrusted(f": {note}"))
    listed = Untrusted.join("\n", entries).map(lambda text: head_tail(text, budget))
    if besides_failures:
        return (
            f"Also, existing tests removed, skipped or weakened by the change ({len(entries)}): "
            "the base commit ran them, this round did not (or they assert less). That is no "
            "fix: with the failures below fixed, the round would still fail for these. Restore "
            "them (undo the deletion, the skip or ignore marker, the removed assertion); adding "
            "new tests is fine.\n" + fence("tests", listed)
        )
    return (
        f"Existing tests removed, skipped or weakened by the change ({len(entries)}): the base "
        "commit ran them, this round did not (or they assert less). Restore them (undo the "
        "deletion, the skip or ignore marker, the removed assertion or doctest example, its "
        "`+SKIP`) and make them pass by fixing the code; adding new tests is fine.\n"
        + fence("tests", listed)
    )


def repo_relative(text: str, roots: Sequence[str]) -> str:
    """Paths inside the worktree as the repository-relative paths the model passes to its
    tools (`calc/calc.go:6`, not `/tmp/.../calc/calc.go:6` nor `<repo>/calc/calc.go:6`)."""
    for root in roots:
        for variant in sorted({root.rstrip("/"), os.path.realpath(root)}, key=len, reverse=True):
            if variant:
                text = text.replace(f"file://{variant}/", "").replace(f"{variant}/", "")
    return text


def _commands(commands: list[CommandResult]) -> str:
    lines = []
    for c in commands[:MAX_COMMANDS]:
        if c.skipped:
            state = "skipped (a lint command failed)"
        elif c.timed_out:
            state = "timed out"
        else:
            state = f"exit {c.exit_code}"
        note = " [only the previously failing tests]" if c.targeted else ""
        command = c.command if len(c.command) <= 200 else c.command[:197] + "..."
        lines.append(f"- {c.kind}: `{command}` -> {state}{note}")
    if len(commands) > MAX_COMMANDS:
        lines.append(f"- ... and {len(commands) - MAX_COMMANDS} more")
    return "Commands:\n" + "\n".join(lines)


def _targeted(rnd: Round) -> bool:
    tests = [c for c in rnd.commands if c.kind == "test" and not c.skipped]
    return bool(tests) and all(c.targeted for c in tests)


def _failures(
    title: str,
    failures: list[Failure],
    cases: dict[str, JUnitCase],
    clean: Callable[[str], str],
    budget: int,
    detailed: int,
) -> str:
    """A numbered list within `budget` characters, fenced as data, with a count of the rest;
    the first `detailed` entries carry a trimmed traceback."""
    entries: list[Untrusted] = []
    used = 0
    for n, failure in enumerate(failures, 1):
        loc = location(clean(failure.file), failure.line) if failure.file else ""
        where = f" ({loc})" if loc else ""
        first = failure.message.map(
            lambda m: next((ln.strip() for ln in clean(m).splitlines() if ln.strip()), "")
        ).map(strip_invisible)
        name = failure.id.map(lambda i: strip_invisible(clean(i))[:MAX_LINE_CHARS])
        entry = Untrusted(f"{n}. ") + name + Untrusted(f"{where}: ")
        entry += first.map(lambda m: m[:MAX_LINE_CHARS])
        case = cases.get(failure.key)
        if n <= detailed and case and case.details.map(str.strip):
            trace = case.details.map(lambda d: trim_traceback(strip_invisible(clean(d))))
            entry += trace.map(lambda t: "\n" + "\n".join("    " + ln for ln in t.splitlines()))
        if entries and used + len(entry) > budget:
            break
        entries.append(entry)
        used += len(entry) + 1
    shown = f" (showing {len(entries)})" if len(entries) < len(failures) else ""
    text = Untrusted.join("\n", entries)
    if len(entries) < len(failures):
        text += Untrusted(f"\n... and {len(failures) - len(entries)} more not shown")
    return f"{title}: {len(failures)}{shown}\n" + fence("test failures", text)


def trim_traceback(text: str, max_chars: int = MAX_TRACE_CHARS) -> str:
    """Keep what locates and states the failure within `max_chars`: the test's own first
    lines, the innermost `file:line` frames, pytest's `E` lines, and the end."""
    text = text.strip("\n")
    if len(text) <= max_chars:
        return text
    lines = [ln[:MAX_LINE_CHARS] for ln in text.splitlines()]
    located = [n for n, ln in enumerate(lines) if FILE_LINE.search(ln)][-6:]
    stated = [n for n, ln in enumerate(lines) if ln.startswith("E ")][:10]
    keep = sorted(
        {*range(min(3, len(lines))), *located, *stated, *range(max(0, len(lines) - 4), len(lines))}
    )
    out: list[str] = []
    for previous, n in zip([-1, *keep], keep, strict=False):
        if n != previous + 1:
            out.append("...")
        out.append(lines[n])
    return head_tail("\n".join(out), max_chars)
