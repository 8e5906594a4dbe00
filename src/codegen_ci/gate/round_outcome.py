"""A finished validation round: the report's view of it, plus what baseline and reflection
need (the JUnit results, the lint errors, the commands that failed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.report import CommandKind, Failure, Round
from codegen_ci.security.untrusted import strip_ansi


@dataclass(frozen=True)
class FailedCommand:
    command: str
    kind: CommandKind
    output: str  # head and tail of its output
    explained: bool  # failing JUnit cases or parsed lint errors account for the failure


@dataclass
class RoundOutcome:
    """A finished round: the report's view, plus what baseline and reflection need."""

    round: Round
    junit: JUnitResult = field(default_factory=JUnitResult)
    lint_errors: list[str] = field(default_factory=list)
    failed: list[FailedCommand] = field(default_factory=list)
    preexisting_lint: dict[str, list[str]] = field(default_factory=dict)  # pre-flight only

    @property
    def passed(self) -> bool:
        return self.round.passed

    def signature(self) -> frozenset[str]:
        """What failed, for the stuck check: test ids, lint errors, and failed commands whose
        failure neither explains."""
        sig = {f"test:{test_id}" for test_id in self.failing_ids()}
        sig |= {f"lint:{e}" for e in self.lint_errors}
        sig |= {f"cmd:{f.kind}:{f.command}" for f in self.failed if not f.explained}
        return frozenset(sig)

    def failing_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for c in self.junit.failing()))

    def finish(self) -> RoundOutcome:
        """Fill in the report's view of the round from what was collected."""
        rnd = self.round
        rnd.tests = self.junit.totals()
        rnd.parse_problems = list(self.junit.problems)
        rnd.failures = [
            *self.junit.failures(),
            *(Failure(id=e, message=e, kind="lint") for e in self.lint_errors),
            *(
                Failure(id=e, message=e, kind="lint", new=False)  # the pre-flight's: the base's
                for errors in self.preexisting_lint.values()
                for e in errors
            ),
            *(
                Failure(id=f"{f.kind}: {f.command}", message=summary_line(f.output), kind="command")
                for f in self.failed
                if not f.explained
            ),
        ]
        rnd.passed = not self.failed
        return self


# Lines that say nothing about what failed: closing brackets of a printed object, package
# managers' epilogues, runtime banners, stack frames (in dependency folders or anywhere).
NOISE = re.compile(
    r"^\s*(?:[\]})>,;]+|[\[{(]+|at .*|\.\.\. \d+ lines? .*|\^+|"
    r"(?:npm|pnpm|yarn) (?:ERR!|error|ERROR|WARN).*|.*ELIFECYCLE.*|.*See above for more.*|"
    r"Node\.js v[\d.]+|error Command failed with exit code \d+\.?|"
    r"info Visit https://yarnpkg.*|Traceback \(most recent call last\):|"
    r"make(?:\[\d+\])?: \*\*\*.*|exit status \d+|FAIL(?:ED)?|"
    r"\d+ (?:passing|failing|pending).*|Tests?:? .*\d+ (?:failed|passed).*|"
    r"(?:ERROR|error): (?:Test failed|command failed|Recipe for target).*)\s*$"
)
ERROR_LINE = re.compile(
    r"\b(?:[A-Z]\w*(?:Error|Exception)|Error|ERR_[A-Z_]+|FAIL|AssertionError|panic|"
    r"not ok|fatal|failed|cannot|Cannot|No such|not found)\b|[✗✕×]"
)


# A line that starts by stating an error: `TypeError: ...`, `Error: ...`, `E   assert ...`,
# `FAIL src/x.test.ts > adds`, `not ok 1 - adds`, `panic: ...`, `error[E0308]: ...`.
STATES_ERROR = re.compile(
    r"(?:\w*(?:Error|Exception)\b(?: \[\w+\])?:|E\s{2,}\S|FAIL\s+\S|not ok\b|panic:|"
    r"error(?:\[\w+\])?:|fatal:|ERROR:?\s)"
)


def summary_line(text: str) -> str:
    """One line that says what went wrong: the first line that reads as an error (not a
    stack frame, a lone bracket or a package manager's `ELIFECYCLE ... See above`), else the
    last line that is not noise, else the last line."""
    lines = [ln.strip() for ln in strip_ansi(text).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not NOISE.fullmatch(ln) and "node_modules/" not in ln]
    chosen = next((ln for ln in useful if STATES_ERROR.match(ln)), None)
    chosen = chosen or next((ln for ln in useful if ERROR_LINE.search(ln)), None)
    chosen = chosen or (useful[-1] if useful else lines[-1] if lines else "(no output)")
    return chosen[:300]
