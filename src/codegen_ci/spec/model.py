"""The task spec's schema (YAML, `version: 1`): frozen pydantic models, one per section.

`RepoConfig` is `.codegen.yml` (repository defaults); `Spec` adds the task. Reading, merging and
validating the layers lives in `spec/layers.py`; the JSON schema is generated from `Spec`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from codegen_ci.security.untrusted import Untrusted

DEFAULT_PROTECTED = [".github/**", ".gitlab-ci.yml", ".env*", "**/*.pem", "**/*.key"]


def _as_list(value: Any) -> Any:
    """Accept a single string where a list of strings is expected (`test: pytest -q`)."""
    return [value] if isinstance(value, str) else value


StrList = Annotated[list[str], BeforeValidator(_as_list)]
# Commands that run repository code, each confined (the sandbox); `run_command` is the model's.
CommandKindName = Literal["setup", "lint", "test", "run_command"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _off(value: Any) -> Any:
    """YAML reads a bare `off` as false: `tests: off` means what it says."""
    return "off" if value is False else value


ProofTests = Annotated[Literal["required", "preferred", "off"], BeforeValidator(_off)]


class ProofPolicy(_Strict):
    """What a success must show beyond a passing suite (gate/proof.py)."""

    tests: ProofTests = Field(
        default="preferred",
        description="Tests that fail on the base commit and pass with the change. required: "
        "a passing change without one is not yet a success (the model is asked for one); "
        "preferred: the run succeeds and says `unproven`; off: not measured.",
    )
    reruns: int = Field(
        default=1,
        ge=0,
        le=5,
        description="Re-runs of a failing test before it counts as failing; one that passes on "
        "a re-run is flaky: never the model's failure, never proof.",
    )
    coverage: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the change's executable lines the tests must run (e.g. 0.8); a "
        "lower share is a reflection naming the lines no test runs. Null: reported only.",
    )


class Validation(_Strict):
    """The repository's own commands; the harness runs them, not the model."""

    setup: StrList = Field(default=[], description="Run once before the first round.")
    lint: StrList = Field(default=[], description="Lint commands; every round, before tests.")
    test: StrList = Field(default=[], description="Test commands; every round.")
    junit: StrList = Field(
        default=[],
        description="Globs of JUnit XML files the test commands write (relative to the repo).",
    )
    timeout: int = Field(default=600, gt=0, le=86_400, description="Seconds allowed per command.")
    allow_preexisting_failures: bool = Field(
        default=False,
        description="Succeed when every failing test also fails on the base commit.",
    )
    allow_no_tests: bool = Field(
        default=False,
        description="Let a run succeed although no test runs (no test command, or test "
        "commands that collect nothing): lint and exit codes alone decide. Off by default: "
        "a gate without tests cannot tell a fix from a break.",
    )
    protect_tests: bool | Literal["keep"] = Field(
        default="keep",
        description="keep (the default): every test the base commit ran must still run, "
        "neither removed nor skipped (compared by JUnit ids); the model may edit tests and "
        "add new ones. true: keep, and refuse any edit to test files and test configuration. "
        "false: the task may remove or skip tests (a task about the tests); the PR says so.",
    )
    network: list[CommandKindName] = Field(
        default=[],
        description="Kinds of command that may use the network inside the sandbox, e.g. "
        "[setup] for package installs; none by default (see docs/sandbox.md).",
    )
    proof: ProofPolicy = Field(
        default_factory=ProofPolicy, description="The proof behind a success (fail to pass)."
    )

    @property
    def refuse_test_edits(self) -> bool:
        """`protect_tests: true`: test files and test configuration may not be edited."""
        return self.protect_tests is True

    @property
    def keep_tests(self) -> bool:
        """Every test the base commit ran must still run (all but `protect_tests: false`)."""
        return self.protect_tests is not False


class Limits(_Strict):
    """Bounds on one run."""

    max_iterations: int = Field(default=3, ge=1, le=50, description="Validation rounds.")
    max_tokens: int = Field(
        default=400_000,
        gt=0,
        le=10**12,
        description="Whole-run token budget: every prompt token (cached or not) plus every "
        "completion token, as the model service reports them.",
    )
    max_billed_tokens: int | None = Field(
        default=None,
        gt=0,
        le=10**12,
        description="Whole-run budget on billed tokens: uncached prompt and completion tokens "
        "in full, cached prompt tokens at the model's cached-input discount.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="Whole-run cost budget (US$, as billed: cached input at its price); needs "
        "the model's prices.",
    )
    timeout_minutes: float = Field(
        default=30, gt=0, le=10_080, description="Whole-run wall clock (at most a week)."
    )
    stuck_rounds: int = Field(
        default=3, ge=2, le=50, description="Stop when the same failures repeat this many rounds."
    )
    max_steps: int = Field(
        default=60, ge=1, le=10_000, description="Tool calls allowed per model turn."
    )


class ModelPrice(_Strict):
    """US dollars per million tokens."""

    prompt: float = Field(ge=0, description="Price per million prompt tokens.")
    completion: float = Field(ge=0, description="Price per million completion tokens.")
    cached: float | None = Field(
        default=None,
        ge=0,
        description="Price per million cached prompt tokens (a cache hit); default: `prompt`.",
    )
    cache_write: float | None = Field(
        default=None,
        ge=0,
        description="Price per million prompt tokens written to the cache, where a provider "
        "bills them apart (Anthropic: 1.25x input); default: `prompt`.",
    )


class ModelSettings(_Strict):
    """Which OpenAI-compatible model to talk to."""

    name: str = Field(default="gpt-4o-mini", min_length=1, description="Model name.")
    base_url: str | None = Field(
        default=None, description="Endpoint; defaults to OPENAI_BASE_URL or OpenAI's."
    )
    temperature: float = Field(default=0.2, ge=0, le=2, description="Sampling temperature.")
    price: ModelPrice | None = Field(
        default=None, description="Prices, when the built-in table does not know the model."
    )
    request_timeout: float = Field(
        default=120, gt=0, le=3600, description="Seconds per model request."
    )
    max_retries: int = Field(default=6, ge=1, le=100, description="Attempts per model request.")


class GitSettings(_Strict):
    branch: str = Field(
        default="codegen/{slug}", description="Branch to create; `{slug}` is the title's slug."
    )
    base: str | None = Field(
        default=None, description="Commit or branch to start from; default: the current HEAD."
    )


class PRSettings(_Strict):
    draft: bool = Field(default=False, description="Open the pull request as a draft.")
    labels: StrList = Field(default=["codegen"], description="Labels for the pull request.")
    reviewers: StrList = Field(default=[], description="Users asked to review.")


class Candidates(_Strict):
    """Several attempts at the task, each a whole run from the same base; the gate chooses."""

    count: int = Field(
        default=1, ge=1, le=16, description="Attempts at most (1: a single run, as before)."
    )
    strategy: Literal["escalate", "race"] = Field(
        default="escalate",
        description="escalate: one after another, stop at the first that passes the gate; "
        "race: run them concurrently (up to `concurrency`), then choose.",
    )
    models: StrList = Field(
        default=[],
        description="Model per attempt: attempt i uses models[min(i, len-1)]; default: "
        "`model.name` for every attempt.",
    )
    carry: Literal["summary", "none"] = Field(
        default="summary",
        description="escalate: tell the next attempt, after the shared task prefix, what "
        "earlier attempts changed and how the gate judged them; none: start each afresh.",
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=16,
        description="race: attempts at once; default: the CPU count (at most `count`).",
    )

    def model_for(self, index: int, default: str) -> str:
        """The model attempt `index` (0-based) uses."""
        return self.models[min(index, len(self.models) - 1)] if self.models else default


class RepoConfig(_Strict):
    """`.codegen.yml`: the spec's schema minus `task`, used as repository defaults."""

    version: Literal[1] = Field(default=1, description="Schema version.")
    # Often an issue's, a comment's or a commit's words (the event's layer): data, unwrapped
    # only by the fencing and neutralising functions and `Spec.slug`.
    title: Untrusted | None = Field(
        default=None, description="Used for branch, commit and PR titles."
    )
    context: StrList = Field(default=[], description="Files, dirs or globs shown up front.")
    outputs: StrList = Field(default=[], description="Paths expected to change.")
    constraints: StrList = Field(default=[], description="Rules the model must follow.")
    validation: Validation = Field(default_factory=Validation, description="Commands.")
    limits: Limits = Field(default_factory=Limits, description="Bounds on the run.")
    model: ModelSettings = Field(default_factory=ModelSettings, description="The model.")
    git: GitSettings = Field(default_factory=GitSettings, description="Branch settings.")
    pr: PRSettings = Field(default_factory=PRSettings, description="Pull request settings.")
    protected_paths: StrList = Field(
        default=DEFAULT_PROTECTED, description="Globs the model may never change."
    )
    env_passthrough: StrList = Field(
        default=[],
        description="Secret-looking environment variables the commands may still see.",
    )
    candidates: Candidates = Field(
        default_factory=Candidates,
        description="Several attempts, chosen by the gate (docs/contract.md, Candidates).",
    )
    instructions: StrList = Field(
        default=[],
        description="Maintainers' instruction files, read from the default branch; default: "
        "AGENTS.md, else CLAUDE.md, else .github/copilot-instructions.md.",
    )


class Spec(RepoConfig):
    """One task."""

    task: str = Field(min_length=1, description="What to do, in plain words.")

    @property
    def slug(self) -> str:
        if self.title:  # slugged: only [a-z0-9-] of it is left
            return slugify(self.title.raw_for("branch name"))
        return slugify(self.task.strip().splitlines()[0])

    @property
    def branch_name(self) -> str:
        """The run's branch as the spec names it: `git.branch` with `{slug}` substituted (the
        one place it is)."""
        return self.git.branch.replace("{slug}", self.slug)


def slugify(text: str, max_len: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_len].strip("-") or "task"
