"""A finished validation round: the report's view of it, plus what baseline and reflection
need (the JUnit results, the lint errors, the commands that failed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.report import CommandKind, Failure, Round
from codegen_ci.security.output_normalise import strip_ansi


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
                Failure(id=f"{f.kind}: {f.command}", message=_last_line(f.output), kind="command")
                for f in self.failed
                if not f.explained
            ),
        ]
        rnd.passed = not self.failed
        return self


def _last_line(text: str) -> str:
    lines = [line for line in strip_ansi(text).strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
