"""JUnit results for people and for `codegen-ci junit --json`."""

from __future__ import annotations

from typing import Any

from codegen_ci.gate.junit.parse import JUnitResult


def summary_json(result: JUnitResult) -> dict[str, Any]:
    """The CONTRACT shape of `codegen-ci junit --json`, plus the list of parse problems."""
    totals = result.totals()
    return {
        **totals.model_dump(),
        "failures": [
            {"id": c.id, "message": c.message, "file": c.file, "line": c.line}
            for c in result.failing()
        ],
        "problems": list(result.problems),
    }


def render_text(result: JUnitResult, *, max_failures: int = 20) -> str:
    """What a person (or the reflection prompt) reads: totals, the first `max_failures`
    failing cases with the tail of their details, then the files that could not be parsed."""
    t = result.totals()
    lines = [
        f"{t.total} tests: {t.passed} passed, {t.failed} failed, {t.errors} errors, "
        f"{t.skipped} skipped ({len(result.files)} file{'s' if len(result.files) != 1 else ''})"
    ]
    failing = result.failing()
    for case in failing[:max_failures]:
        where = f" ({case.file}:{case.line})" if case.file and case.line else ""
        lines.append(f"{case.outcome.upper()} {case.id}{where}: {case.message}".rstrip())
        lines.extend(f"    {ln}" for ln in _tail(case.details))
    if len(failing) > max_failures:
        lines.append(f"... and {len(failing) - max_failures} more failing tests")
    if result.problems:
        lines.append("Problems:")
        lines.extend(f"  {problem}" for problem in result.problems)
    return "\n".join(lines)


def _tail(details: str, max_lines: int = 25, max_width: int = 300) -> list[str]:
    """The end of a traceback is where the failure is; long lines are cut."""
    lines = details.strip("\n").splitlines()
    cut = lines[-max_lines:]
    if len(lines) > max_lines:
        cut.insert(0, f"[... {len(lines) - max_lines} lines omitted]")
    return [ln if len(ln) <= max_width else ln[:max_width] + " [...]" for ln in cut]
