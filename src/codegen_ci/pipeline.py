"""The order of the stages, and nothing else:

spec -> worktree -> [model turn -> protected-path check -> validation -> baseline ->
reflection]* -> commit + diff + report. Publishing (push, PR, comments) is the caller's.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.agent.budget import Budget, LimitReached
from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.loop import Agent
from codegen_ci.agent.model import Model
from codegen_ci.agent.prompt import Briefing, first_messages
from codegen_ci.agent.tools import Toolbox
from codegen_ci.cancel import Cancel, Checked
from codegen_ci.errors import CodegenError, InputError, Interrupted
from codegen_ci.gate.added_tests import only_added
from codegen_ci.gate.baseline import Baseline
from codegen_ci.gate.environment_check import EnvironmentFailure, Places, check_environment
from codegen_ci.gate.flaky import Rerunner, merge_flaky, set_flaky_aside, unnamed_failures
from codegen_ci.gate.kept_tests import check_kept, noticed
from codegen_ci.gate.preflight import ConfigError, dry_run, note_missing_junit, run_preflight
from codegen_ci.gate.proof import Prover, missing
from codegen_ci.gate.reflection import reflection_message
from codegen_ci.gate.validation import Validator, round_tag
from codegen_ci.progress import Progress
from codegen_ci.report import FlakyTest, Reason, Report, Status
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.safe_env import safe_env
from codegen_ci.security.sandbox import Sandbox, SandboxUnavailable, open_sandbox
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git, isolated_repo, output_cap
from codegen_ci.workspace.finalize import NO_CHANGE, enforce_protected, finalize
from codegen_ci.workspace.shell import AgentShell
from codegen_ci.workspace.worktree import Worktree

ModelFactory = Callable[[Spec], Model]


@dataclass
class RunContext:
    """Everything a run needs besides the spec; built by the command that starts it."""

    repo: Path
    output_dir: Path
    run_id: str
    worktree: Worktree
    progress: Progress
    model_factory: ModelFactory
    dry_run: bool = False
    start_iteration: int = 1
    conversation: Conversation | None = None  # set when resuming
    briefing: Briefing = field(default_factory=Briefing)
    # What earlier candidates tried (escalate): a message after the shared, cache-stable prefix.
    carry: str | None = None
    report: Report = field(default_factory=Report)
    # Kept from the run's commands besides its output directory (a candidate's siblings'
    # folders and outputs, an eval task's user repository), and the private folder its
    # sandbox's scratch is made in (default: the temporary directory).
    hidden: tuple[Path, ...] = ()
    scratch_in: Path | None = None
    # The caches codegen-ci keeps for the repository (workspace/slots.py): the pre-flight
    # starts from them and (`keep_caches`: its base is a trusted commit) leaves its own there
    # (security/warm_caches.py). None: none kept.
    caches: Path | None = None
    keep_caches: bool = True
    # Checked before each round, model call and command: set, the run stops (`Interrupted`).
    cancel: Cancel = field(default_factory=Cancel)


def execute(spec: Spec, ctx: RunContext) -> Report:
    """Run the task in `ctx.worktree`; always writes report.json, also on errors."""
    report = ctx.report
    report.run_id, report.model = ctx.run_id, spec.model.name
    report.title = spec.title or Untrusted(spec.slug)
    report.output_dir, report.branch = str(ctx.output_dir), ctx.worktree.branch
    report.base_commit = ctx.worktree.base_commit
    if ctx.briefing.instructions is not None:
        report.instructions = ctx.briefing.instructions.name
    started = time.monotonic() - report.duration_s
    base_tree = ctx.worktree.path.with_name(ctx.worktree.path.name + "-base")
    sandbox = _open_sandbox(ctx)
    report.sandbox, report.landlock_abi = sandbox.kind, sandbox.landlock_abi
    report.loopback, report.sandbox_gaps = sandbox.loopback, list(sandbox.gaps)
    env = sandbox.environment(safe_env(os.environ, passthrough=spec.env_passthrough))
    validator = Validator(
        spec.validation,
        ctx.worktree,
        ctx.output_dir,
        env,
        Checked(ctx.progress, ctx.cancel),
        sandbox=sandbox,
    )
    baseline = Baseline(
        repo=ctx.repo,
        base_commit=ctx.worktree.base_commit,
        validation=spec.validation,
        work_dir=ctx.output_dir / "baseline",
        env=env,
        tree_path=base_tree,
        sandbox=sandbox,
        sources=lambda: validator.state.imports,  # the base tree's code, as the worktree's
    )
    try:
        if ctx.dry_run:
            try:
                dry_run(
                    validator,
                    report,
                    ctx.worktree.path,
                    ctx.output_dir,
                    lambda: _first_prompt(spec, ctx),
                )
            finally:  # a round that failed for the environment's sake says so, dry or not
                check_environment(report.rounds, _places(ctx, sandbox))
        else:
            prover = Prover(
                repo=ctx.repo,
                base_commit=ctx.worktree.base_commit,
                validation=spec.validation,
                worktree=ctx.worktree,
                work_dir=ctx.output_dir / "proof",
                env=env,
                tree_path=ctx.worktree.path.with_name(ctx.worktree.path.name + "-proof"),
                sandbox=sandbox,
                sources=lambda: validator.state.imports,  # the proof tree's code first
                note=ctx.progress.stage,
            )
            _loop(spec, ctx, validator, baseline, prover)
    except (KeyboardInterrupt, Interrupted):
        report.finish(Status.ERROR, Reason.INTERRUPTED, "interrupted")
        report.worktree = str(ctx.worktree.path)
        raise Interrupted(
            "interrupted; resume with: codegen-ci resume " + str(ctx.output_dir)
        ) from None
    except CodegenError as exc:
        report.finish(Status.ERROR, _error_reason(exc), REDACTOR.redact(exc.message))
        raise
    except Exception as exc:  # a bug of ours: the report says so, not "max_iterations"
        report.finish(Status.ERROR, Reason.ERROR, REDACTOR.redact(f"internal error: {exc!r}"))
        raise
    finally:
        ctx.progress.stage("cleanup: the run's worktrees")
        baseline.close()
        sandbox.close()
        try:
            if ctx.dry_run:
                ctx.worktree.discard()
                report.branch = None
            elif (committed := finalize(spec, ctx.worktree, ctx.output_dir, report)) is not None:
                report.commit, report.files_changed = committed.commit, committed.files
                report.refusals += committed.refusals
                report.branch = report.branch if committed.commit else None
                report.worktree = None
                if committed.no_change:
                    report.finish(Status.FAILED, Reason.NO_CHANGE, NO_CHANGE)
        except CodegenError as exc:  # git failed at the end (its worktree is gone all the same)
            if report.branch and not git.branch_exists(ctx.repo, report.branch):
                report.branch = None
            if report.status != Status.ERROR:  # else the run's own error is the one raised
                report.finish(Status.ERROR, _error_reason(exc), REDACTOR.redact(exc.message))
                raise
        finally:
            report.duration_s = round(time.monotonic() - started, 3)
            report.output_capped = output_cap.read_notes(ctx.output_dir)
            report.write(ctx.output_dir)
            # Logs, JUnit copies and the transcript hold what tests printed: mask them too.
            REDACTOR.redact_tree(ctx.output_dir)
    return report


def _error_reason(exc: CodegenError) -> Reason:
    if isinstance(exc, ConfigError):
        return Reason.CONFIG
    if isinstance(exc, EnvironmentFailure):
        return Reason.ENVIRONMENT
    return Reason.ERROR


def _open_sandbox(ctx: RunContext) -> Sandbox:
    """Confinement for this run's commands; when it cannot be had, the run ends before any
    command runs (report written, worktree and its new branch removed)."""

    def hidden(place: Path) -> bool:
        return any(h == place or h in place.parents for h in ctx.hidden)

    # A repository of the run's own (workspace/isolated_repo.py) shows the user's checkout
    # (its dependencies) and the object store it borrows, unless the run must not see them.
    checkout = isolated_repo.dependencies_of(ctx.repo)
    try:
        return open_sandbox(
            os.environ,
            git_dir=git.common_dir(ctx.repo),
            checkout=ctx.repo if hidden(checkout) else checkout,
            dependencies=[p for p in isolated_repo.shown_by(ctx.repo) if not hidden(p)],
            private=(ctx.output_dir, *ctx.hidden),
            parent=ctx.scratch_in,
            caches=ctx.caches,
            keep_caches=ctx.keep_caches,
        )
    except (SandboxUnavailable, InputError) as exc:
        reason = Reason.SANDBOX if isinstance(exc, SandboxUnavailable) else Reason.CONFIG
        ctx.report.finish(Status.ERROR, reason, exc.message)
        ctx.report.write(ctx.output_dir)
        if ctx.start_iteration == 1:
            ctx.worktree.discard()
        raise


def _places(ctx: RunContext, sandbox: Sandbox | None) -> Places:
    """Where the run's commands may write (gate/environment_check.py)."""
    tree = ctx.worktree
    writable = sandbox.scratch if sandbox and sandbox.enabled else Path(tempfile.gettempdir())
    checkout = isolated_repo.dependencies_of(ctx.repo)  # a repository of ours: the user's
    loopback = sandbox.loopback if sandbox else None
    changed = frozenset(tree.changed_paths())
    return Places(tree.path, tree.links, (writable,), changed, checkout, loopback)


def _first_prompt(spec: Spec, ctx: RunContext) -> str:
    return "\n\n".join(m["content"] for m in first_messages(spec, ctx.worktree, ctx.briefing))


def _loop(
    spec: Spec, ctx: RunContext, validator: Validator, baseline: Baseline, prover: Prover
) -> None:
    report, limits = ctx.report, spec.limits
    report.removed_tests_allowed = not spec.validation.keep_tests
    if ctx.start_iteration == 1 and ctx.conversation is None:
        try:
            run_preflight(validator, baseline, report, ctx.worktree.path, prover)
        finally:  # an environment failure is named as such, before a "setup failed"
            check_environment([report.preflight], _places(ctx, validator.sandbox))
    conversation = ctx.conversation or Conversation(ctx.output_dir / "transcript.jsonl")
    if not conversation.messages:
        for message in first_messages(spec, ctx.worktree, ctx.briefing):
            conversation.add(message)
        if ctx.carry:
            conversation.add({"role": "user", "content": REDACTOR.redact(ctx.carry)})
    budget = Budget(limits, spec.model, usage=report.usage)
    shell = AgentShell(
        ctx.worktree,
        validator.command_env(),  # the worktree's own code first, as the commands get it
        ctx.output_dir / "logs",
        spec.validation.timeout,
        protect_tests=spec.validation.refuse_test_edits,
        time_left=budget.remaining_s,
        sandbox=validator.sandbox,
        network="run_command" in spec.validation.network,
    )
    toolbox = Toolbox(ctx.worktree, shell.run, protect_tests=spec.validation.refuse_test_edits)
    agent = Agent(
        ctx.model_factory(spec),
        toolbox,
        conversation,
        budget,
        Checked(ctx.progress, ctx.cancel),
        limits.max_steps,
    )
    signatures: list[frozenset[str]] = []
    flaky: list[FlakyTest] = []
    last = ctx.start_iteration + limits.max_iterations - 1
    report.finish(Status.FAILED, Reason.MAX_ITERATIONS)
    try:
        for iteration in range(ctx.start_iteration, last + 1):
            ctx.cancel.check()
            ctx.progress.round_started(iteration, last)
            try:
                agent.turn()
            except LimitReached as exc:
                report.finish(Status.FAILED, exc.reason, exc.detail)
                break
            finally:
                enforce_protected(ctx.worktree, report, toolbox.refusals, shell.refusals)
            outcome = validator.run_round(iteration)
            report.proof = None  # of this round, once it passes
            if not outcome.passed:  # a test that passes on a re-run is not the model's failure
                if (failing := len(outcome.failing_ids())) and spec.validation.proof.reruns:
                    # a Go or jest suite re-runs whole: seconds that would pass in silence
                    ctx.progress.stage(f"round {iteration}: re-running {failing} failing test(s)")
                elif (unnamed := unnamed_failures(outcome)) and spec.validation.proof.reruns:
                    ctx.progress.stage(
                        f"round {iteration}: re-running {len(unnamed)} failed test command(s) "
                        "that wrote no JUnit"
                    )
                aside = set_flaky_aside(outcome, Rerunner.of(validator, round_tag(iteration)))
                flaky = merge_flaky(flaky, aside)
            if not outcome.passed:
                try:  # never handed to the model as its failure
                    check_environment([outcome.round], _places(ctx, validator.sandbox))
                except EnvironmentFailure:
                    report.rounds.append(outcome.round)
                    report.iterations = iteration
                    raise
                baseline.classify(outcome)
            kept_checked = (
                outcome.passed
                or outcome.ran_no_tests
                or (
                    spec.validation.allow_preexisting_failures
                    and baseline.only_preexisting(outcome)
                )
            )
            if kept_checked:  # would pass, or ran none: were the base's tests kept? (kept_tests.py)
                report.removed_tests = check_kept(outcome, baseline, spec.validation, ctx.worktree)
            report.rounds.append(outcome.round)
            ctx.progress.round_finished(outcome.round)
            note_missing_junit(report, outcome.round, ctx.worktree.path)
            report.iterations = iteration
            report.artifacts = sorted(ctx.worktree.artifacts)
            report.write(ctx.output_dir)
            if outcome.passed or (
                spec.validation.allow_preexisting_failures and baseline.only_preexisting(outcome)
            ):
                report.proof = prover.prove(outcome, flaky)
                ask = missing(spec.validation, report.proof, iteration=iteration, last=last)
                if ask is None:
                    report.finish(Status.SUCCESS)
                    return
                if iteration == last:
                    report.finish(Status.FAILED, Reason.UNPROVEN, report.proof.reason)
                else:  # gate/proof.py: ask for a test that fails without the change
                    conversation.add({"role": "user", "content": REDACTOR.redact(ask)})
                continue
            signatures.append(outcome.signature())
            if _stuck(signatures, limits.stuck_rounds):
                report.finish(
                    Status.FAILED,
                    Reason.STUCK,
                    f"the same failures repeated for {limits.stuck_rounds} rounds in a row",
                )
                return
            if iteration < last:
                # failing anyway: the tests it removed too, as far as the base runs so far tell
                also = (
                    []
                    if kept_checked
                    else noticed(outcome, baseline, spec.validation, ctx.worktree)
                )
                reflection = reflection_message(
                    outcome,
                    iteration=iteration,
                    max_iterations=last,
                    roots=[str(ctx.worktree.path), str(ctx.output_dir)],
                    noticed=also,
                )
                conversation.add({"role": "user", "content": REDACTOR.redact(reflection)})
    finally:
        report.tests_touched = sorted(toolbox.tests_touched | shell.tests_touched)
        report.tests_added = only_added(ctx.worktree, report.tests_touched)


def _stuck(signatures: list[frozenset[str]], rounds: int) -> bool:
    recent = signatures[-rounds:]
    return len(recent) == rounds and len(set(recent)) == 1
