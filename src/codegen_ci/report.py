"""What a run leaves behind: `report.json` (the shape docs/contract.md fixes) and its parts."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_serializer, field_validator

from codegen_ci.security import guarded_write
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted

CommandKind = Literal["setup", "lint", "test"]
DEPENDENCY_PARTS = ("node_modules/", "site-packages/", "dist-packages/", "/pkg/mod/", "vendor/")


class Status(StrEnum):
    """How a run ended: `status` in report.json."""

    SUCCESS = "success"
    FAILED = "failed"  # the change does not pass validation (or a budget ran out)
    ERROR = "error"  # the run could not go on: bad configuration, environment, interruption


class Reason(StrEnum):
    """Why a run ended as it did: `reason` in report.json (null when a run succeeded)."""

    # status failed
    MAX_ITERATIONS = "max_iterations"  # the last validation round still failed
    STUCK = "stuck"  # the same failures repeated for `limits.stuck_rounds` rounds
    UNPROVEN = "unproven"  # passed, but `validation.proof.tests: required` found no proof
    BUDGET = "budget"  # tokens, billed tokens, cost or wall clock used up
    NO_CHANGE = "no_change"  # the gate passed, but on no change: nothing to commit
    # status success or failed: the pre-flight of `--dry-run` passed or not
    DRY_RUN = "dry-run"
    # status error
    INTERRUPTED = "interrupted"  # resume it with `codegen-ci resume`
    CONFIG = "config"  # the spec or its commands cannot work as configured (exit 2)
    ENVIRONMENT = "environment"  # a command could not write outside the code (exit 3)
    SANDBOX = "sandbox"  # confinement could not be set up (exit 3)
    ERROR = "error"  # anything else: the model service failing after its retries, a bug


class CommandResult(BaseModel):
    command: str
    kind: CommandKind
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    output_path: str | None = Field(default=None, description="Full output, in the output dir.")
    targeted: bool = Field(default=False, description="Re-ran only the previously failing tests.")
    failing_first: bool = Field(
        default=False,
        description="Ran the previously failing tests first (pytest plugin); also `targeted` "
        "when one still failed and the rest of the suite was not run.",
    )
    skipped: bool = Field(default=False, description="Not run (e.g. tests after a lint failure).")
    collect_only: bool = Field(
        default=False, description="Pre-flight: pytest only collected the tests, ran none."
    )
    junit_tests: int | None = Field(
        default=None, description="Test commands: cases in the JUnit it wrote; null: none written."
    )

    @property
    def state(self) -> str:
        """`exit N`, `timed out` or `skipped`, as every report view shows it; the pre-flight's
        collection of the tests (which ran none) says so, lest `exit 0` read as a passing base."""
        if self.skipped:
            return "skipped"
        if self.timed_out:
            return "timed out"
        return (
            f"exit {self.exit_code}, collected only"
            if self.collect_only
            else f"exit {self.exit_code}"
        )


class TestTotals(BaseModel):
    __test__ = False  # not a pytest class

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0


class Failure(BaseModel):
    # The test's name (the repository's tests chose it) or a linter's code: data. Compared
    # with other runs' ids through `key` only.
    id: Untrusted
    # The test's or linter's words: report.json holds them as the string `message`; the code
    # reads them as `message`, an `Untrusted` (only this module touches `raw_message`).
    raw_message: str = Field(alias="message")
    file: str | None = None
    line: int | None = None
    kind: Literal["failure", "error", "lint", "command", "removed"] = Field(
        default="failure",
        description="removed: a test the base commit ran that the change removed or skipped.",
    )
    new: bool | None = Field(default=None, description="False: also fails on the base commit.")

    @property
    def message(self) -> Untrusted:
        return Untrusted(self.raw_message)

    @property
    def key(self) -> str:
        """The raw id, to compare with the ids of other runs and of JUnit (a base commit's run,
        an earlier round): a lookup, shown to no reader."""
        return self.id.raw_for("matching")

    @property
    def where(self) -> str:
        """`path:line`, marked when outside the repository's own code; "" when unknown."""
        return location(self.file, self.line)


def location(file: str | None, line: int | None) -> str:
    """`path:line` (paths are repository-relative), marked when it lies in a dependency folder
    or outside the repository; "" when unknown."""
    if not (file and line):
        return ""
    outside = file.startswith("/") or any(part in file for part in DEPENDENCY_PARTS)
    return f"{file}:{line}" + (" (in a dependency, not the repository's code)" if outside else "")


class Round(BaseModel):
    iteration: int
    commands: list[CommandResult] = []
    tests: TestTotals = Field(
        default_factory=TestTotals,
        description="Totals from JUnit; null when unknown (no test command wrote JUnit, or "
        "none ran), never a misleading 0/0.",
    )
    tests_carried: int = Field(
        default=0,
        description="Of `tests`, those this round did not run (it stopped after the previously "
        "failing tests, which still fail), counted as they ran in the last full run; 0: every "
        "test counted ran in this round.",
    )
    failures: list[Failure] = []
    parse_problems: list[str] = []
    passed: bool = False
    baseline_unavailable: str | None = Field(
        default=None,
        description="Why the base-commit run could not tell new failures from pre-existing ones.",
    )
    removed_tests: list[RemovedTest] = Field(
        default=[],
        description="The base commit's tests whose removal, skip or weakening refused this round "
        "(each also a failure of kind `removed`), with their counts.",
    )

    @property
    def tests_unknown(self) -> bool:
        """Tests ran, but no JUnit says which: the gate went by exit codes only."""
        ran = [c for c in self.commands if c.kind == "test" and not c.skipped]
        return bool(ran) and not self.tests.total and any(c.junit_tests is None for c in ran)

    @property
    def tests_known(self) -> bool:
        """Some test command wrote JUnit (even one listing no test): the totals are real."""
        wrote = any(c.kind == "test" and c.junit_tests is not None for c in self.commands)
        return wrote or self.tests.total > 0

    def tests_text(self) -> str:
        """`3/4 passed`, `unknown (no JUnit)` or `not run`: never a misleading `0/0`."""
        if self.tests_unknown:
            return "unknown (no JUnit)"
        if not self.tests_known:
            return "not run"
        carried = f" ({self.tests_carried} as in the last full run)" if self.tests_carried else ""
        return f"{self.tests.passed}/{self.tests.total} passed{carried}"

    @field_serializer("tests")
    def _totals_or_null(self, tests: TestTotals) -> dict[str, int] | None:
        return tests.model_dump() if self.tests_known else None

    @field_validator("tests", mode="before")
    @classmethod
    def _null_totals(cls, value: object) -> object:
        return TestTotals() if value is None else value


class RemovedTest(BaseModel):
    """A test the base commit ran that the change removed or skipped (gate/kept_tests.py)."""

    # The repository's tests named it (a file's path for `weakened`): data, compared through
    # `key` only
    id: Untrusted = Field(
        description="Its JUnit id (or the name its runner printed); for `weakened`, the test "
        "file, or the doctest's JUnit id."
    )
    how: Literal["removed", "skipped", "weakened"] = Field(
        description="weakened: the file's tests hold fewer assertions than on the base commit, "
        "or the doctest runs fewer examples."
    )
    count: int = Field(
        default=1,
        description="How many of its runs (a repeated id), assertions, or doctest examples "
        "are gone.",
    )
    # weakened: a doctest that runs fewer examples (`id` is the test's), not a test file with
    # fewer assertions. How the tool words it; report.json's `id` already says which.
    doctest: bool = Field(default=False, exclude=True)

    @property
    def key(self) -> str:
        """The raw id, to compare with the ids of the base commit's runs: a lookup."""
        return self.id.raw_for("matching")


def not_kept_text(removed: Sequence[RemovedTest]) -> str:
    """`removed 2 and skipped 1 existing tests`, `weakened 1 existing test file`: what the
    change did, counted in tests (an entry may stand for several: an id the base ran more than
    once, a runner's tests it only counted) and in files for `weakened` (its count is
    assertions)."""
    tests = {h: sum(r.count for r in removed if r.how == h) for h in ("removed", "skipped")}
    files = sum(1 for r in removed if r.how == "weakened" and not r.doctest)
    doctests = sum(1 for r in removed if r.how == "weakened" and r.doctest)
    parts = []
    if done := [f"{how} {n}" for how, n in tests.items() if n]:
        total = sum(tests.values())
        parts.append(" and ".join(done) + f" existing test{'s' if total > 1 else ''}")
    if files:
        parts.append(f"weakened {files} existing test file{'s' if files > 1 else ''}")
    if doctests:
        parts.append(f"weakened {doctests} existing doctest{'s' if doctests > 1 else ''}")
    return ", ".join(parts)


class JUnitMissing(BaseModel):
    command: str
    hint: str = Field(description="How to make this runner write JUnit XML.")


class PreexistingLint(BaseModel):
    command: str
    errors: list[str] = Field(
        default=[], description="Its errors on the base commit (`path:line: message`), if read."
    )


class Usage(BaseModel):
    prompt_tokens: int = Field(default=0, description="All input tokens, cached or not.")
    cached_tokens: int = Field(
        default=0, description="Input tokens served from the provider's prompt cache."
    )
    cache_write_tokens: int = Field(
        default=0, description="Input tokens written to the cache, where billed apart."
    )
    completion_tokens: int = 0
    billed_tokens: int = Field(
        default=0, description="Tokens as billed: cached input counted at its discount."
    )
    cost_usd: float | None = Field(default=None, description="As billed; None: no prices.")
    requests: int = 0
    compactions: int = Field(
        default=0, description="Model steps whose request was compacted (not a cache prefix)."
    )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Refusal(BaseModel):
    path: str
    reason: str
    tool: str | None = None


class Candidate(BaseModel):
    """One attempt of a multi-candidate run (`candidates.count` > 1): a whole run of its own."""

    index: int = Field(description="0-based, in the order the attempts started.")
    model: str
    status: Status = Status.ERROR
    reason: Reason | None = None
    rounds: int = Field(default=0, description="Validation rounds it ran.")
    # `Failure.id`s: the repository's tests named them; carried into later attempts' notes
    failing_tests: list[Untrusted] = Field(default=[], description="Failing after its last round.")
    new_failures: int = Field(
        default=0, description="Of those, failures that do not also fail on the base commit."
    )
    lint_passed: bool = Field(default=False, description="Every lint command passed, last round.")
    lines_changed: int = Field(default=0, description="Added plus removed lines of its diff.")
    # the model's change named them: data (the carry note fences them)
    files_changed: list[Untrusted] = []
    usage: Usage = Field(default_factory=Usage, description="Its own usage (cached tokens too).")
    cost_usd: float | None = None
    duration_s: float = 0.0
    started_at: float | None = Field(default=None, description="Unix time it started.")
    commit: str | None = Field(
        default=None, description="Its commit (only the chosen one's stays on a branch)."
    )
    output_dir: str = Field(default="", description="Its own report.json and logs.")
    diff_path: str | None = None
    transcript_path: str | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.SUCCESS


class ProofStatus(StrEnum):
    """`proof.status` in report.json (gate/proof.py)."""

    PROVEN = "proven"  # some test fails on the base commit and passes with the change
    UNPROVEN = "unproven"  # the suite passes, but no test shows the change does anything
    NOT_APPLICABLE = "not_applicable"  # nothing to prove with (policy off, no JUnit, ...)


class LocatedTest(BaseModel):
    """A test by its id and place: what proof's lists of tests share."""

    id: Untrusted  # the repository's tests named it: data, compared through `key` only
    file: str | None = None
    line: int | None = None

    @property
    def key(self) -> str:
        """The raw id, to re-run the test by it: a lookup."""
        return self.id.raw_for("matching")

    @property
    def where(self) -> str:
        return location(self.file, self.line)


class ProvingTest(LocatedTest):
    """A test that fails on the base commit and passes with the change."""

    on_base: str = Field(description="How it ended on the base: failure, error, or not run.")


class FlakyTest(BaseModel):
    """A test that failed and then passed on the same code (gate/flaky.py)."""

    id: Untrusted  # the repository's tests named it: data, compared through `key` only
    runs: int = Field(description="Runs it took to pass (the first one failed).")
    where: Literal["change", "base", "both"] = Field(
        description="Flaky with the change, on the base commit, or both: the repository's."
    )

    @property
    def key(self) -> str:
        """The raw id, to compare with JUnit's ids (a round's, the base run's): a lookup."""
        return self.id.raw_for("matching")


class ChangedLines(BaseModel):
    """Which changed executable lines the tests ran (gate/coverage.py)."""

    measured: bool = False
    covered: int = 0
    total: int = 0
    # `file:line` names the change's files (whoever wrote the change named them): data
    uncovered: list[Untrusted] = Field(default=[], description="`file:line` or `file:first-last`.")
    reason: str = Field(default="", description="Why it was not measured, when it was not.")

    @property
    def share(self) -> float:
        return self.covered / self.total if self.total else 1.0


class WeakenedTest(LocatedTest):
    """An existing test the change edited whose base-commit version fails with the change's
    code (gate/original_tests.py): the change altered what the test checked, and the test."""

    outcome: str = Field(description="How its base version ended with the change: failure, error.")


class Proof(BaseModel):
    status: ProofStatus = ProofStatus.NOT_APPLICABLE
    # The tool's own words, one line: counts, never a test's id (the ids are the typed fields
    # below; a reader shows them through the neutralising functions, publish/proof_text.py)
    reason: str = ""
    fail_to_pass: list[ProvingTest] = []
    pass_to_pass: int = Field(default=0, description="Tests passing on the base and with it.")
    # ids, as the repository's tests named them: data
    not_proof: list[Untrusted] = Field(
        default=[], description="Tests the change added or edited that pass on the base too."
    )
    flaky: list[FlakyTest] = Field(
        default=[], description="Failed, then passed on a re-run: never the model's, never proof."
    )
    changed_lines: ChangedLines | None = Field(
        default=None, description="Changed executable lines the tests ran; null: not measured."
    )
    weakened: list[WeakenedTest] = Field(
        default=[],
        description="Existing tests the change edited whose base versions fail with its code.",
    )


class Report(BaseModel):
    status: Status = Status.ERROR
    reason: Reason | None = Field(
        default=None,
        description="Why the run ended as it did. Status failed: max_iterations, stuck, budget, "
        "unproven (`validation.proof.tests: required` found no test that fails without the "
        "change), no_change (the gate passed with nothing changed: no branch, no commit). "
        "Status error: interrupted, config, environment (a command could not write outside the "
        "code), sandbox (confinement could not be set up), error. A dry run (success or "
        "failed): dry-run. Null when a run succeeded.",
    )
    iterations: int = 0
    preflight: Round | None = Field(
        default=None, description="Setup and test commands on the untouched code, before the model."
    )
    rounds: list[Round] = []
    junit_missing: list[JUnitMissing] = Field(
        default=[], description="Test commands that wrote no JUnit report, with how to get one."
    )
    preexisting_lint: list[PreexistingLint] = Field(
        default=[],
        description="Lint commands that already fail on the base commit: left to the user; in "
        "the rounds only lint errors the change adds count.",
    )
    imports: list[str] = Field(
        default=[],
        description="Where the commands' interpreters import the repository's own Python "
        "code from, as the pre-flight found it, and any redirect to the worktree.",
    )
    files_changed: list[str] = []
    tests_touched: list[str] = Field(default=[], description="Test files or config edited.")
    tests_added: list[str] = Field(
        default=[],
        description="Of tests_touched, the test files the change only added tests to (a new "
        "file, or new tests with every existing line kept); the others changed existing tests.",
    )
    removed_tests: list[RemovedTest] = Field(
        default=[],
        description="Tests the base commit ran that the change removed or skipped, as of the "
        "last round that otherwise passed (validation.protect_tests).",
    )
    removed_tests_allowed: bool = Field(
        default=False,
        description="validation.protect_tests was false: the task may remove or skip tests.",
    )
    artifacts: list[str] = Field(
        default=[],
        description="Files commands created (or deleted); left out of the commit. A file a "
        "command rewrote in place (a formatter) stays in it.",
    )
    branch: str | None = None
    base_commit: str | None = None
    instructions: str | None = Field(
        default=None, description="The maintainers' instructions file(s) the model was given."
    )
    commit: str | None = None
    pr_url: str | None = None
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    error: str | None = None
    refusals: list[Refusal] = []
    output_capped: list[str] = Field(
        default=[], description="Logs cut and JUnit copies left out: the output dir's size cap."
    )
    run_id: str = ""
    title: Untrusted = Untrusted("")  # the spec's title (see `Spec.title`): data
    model: str = ""
    output_dir: str = ""
    worktree: str | None = Field(default=None, description="Kept for inspection or resume.")
    sandbox: str | None = Field(
        default=None,
        description="How commands were confined: bwrap, landlock (Landlock and seccomp: "
        "docs/sandbox.md) or off; null: the run ended before any command.",
    )
    landlock_abi: int | None = Field(
        default=None,
        description="The kernel's Landlock ABI, when `sandbox` is landlock, or bwrap with "
        "its Landlock layer for write rights.",
    )
    loopback: str | None = Field(
        default=None,
        description="What commands without the network have of 127.0.0.1: `own` (bwrap: a "
        "loopback of their own, a test's own server works), `none` (landlock: no inet socket); "
        "null when off or before any command (docs/sandbox.md).",
    )
    sandbox_gaps: list[str] = Field(
        default=[],
        description="What this run's bwrap confinement left open (docs/sandbox.md): "
        "`named-pipes` (no Landlock layer inside bubblewrap: a command can write into a FIFO "
        "outside the hidden places), `new-sockets` (no guard inside: a named socket made after "
        "the start outside the hidden places is reachable); empty when none.",
    )
    proof: Proof | None = Field(
        default=None, description="Fail to pass: the tests that fail without the change."
    )
    candidates: list[Candidate] = Field(
        default=[], description="Every attempt of a multi-candidate run; empty for one run."
    )
    chosen: int | None = Field(
        default=None, description="The index of the candidate whose commit is on the branch."
    )
    chosen_why: str | None = Field(default=None, description="Why the gate chose it, in one line.")
    candidates_note: str | None = Field(
        default=None,
        description="Why fewer candidates ran than `count` (a passing one, or the budget).",
    )

    def finish(
        self, status: Status, reason: Reason | None = None, error: str | None = None
    ) -> None:
        """The one place a run's outcome is set: its status, why, and the error message."""
        self.status, self.reason, self.error = status, reason, error

    def write(self, output_dir: Path) -> Path:
        output_dir.mkdir(parents=True, exist_ok=True)
        path = output_dir / "report.json"
        # Strings are redacted before serialisation, so the file always parses. Written to a
        # new name and renamed (security/guarded_write.py): never through a link.
        text = REDACTOR.dumps(
            self.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False
        )
        guarded_write.write_into(path, text + "\n")
        return path

    @classmethod
    def read(cls, output_dir: Path) -> Report:
        return cls.model_validate_json((output_dir / "report.json").read_text(encoding="utf-8"))
