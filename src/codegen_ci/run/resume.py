"""`resume(run_dir) -> Report`: a stopped (interrupted) or failed run continued with its spec,
worktree or branch, and transcript; the counterpart of `start`. A run that already succeeded
has nothing to resume. Sensitive settings in run.json must match the run's sources unless
restated (directory.py). A multi-candidate run (OUT/candidates.json) goes on where it
stopped: the interrupted attempt resumes, the ones not started yet run, then the gate chooses.
"""

from __future__ import annotations

import os
from pathlib import Path

from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.prompt import Briefing
from codegen_ci.errors import InputError
from codegen_ci.pipeline import ModelFactory, RunContext
from codegen_ci.progress import make_progress
from codegen_ci.report import Report, Status
from codegen_ci.run import candidates
from codegen_ci.run.attempt import (
    environment_layer,
    open_worktree,
    register_secrets,
    run_pipeline,
    service_model,
)
from codegen_ci.run.directory import (
    RUN_FILE,
    RunState,
    read_report,
    read_transcript,
    trusted_spec,
)
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git, slots
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.git import trust_directory
from codegen_ci.workspace.private_dir import check_private
from codegen_ci.workspace.slots import Slot
from codegen_ci.workspace.worktree import Worktree, worktree_git


def resume(
    run_dir: Path,
    spec_file: Path | None = None,
    base_url: str | None = None,
    *,
    model_factory: ModelFactory = service_model,
) -> Report:
    """Continue the run in `run_dir` (one run, or a multi-candidate run). `model_factory`:
    where each attempt gets its model (`RunRequest.model_factory`)."""
    run_dir = run_dir.resolve()
    if candidates.is_multi(run_dir):
        register_secrets()
        plan = candidates.Plan.load(run_dir)
        plan.model_factory = model_factory
        trust_directory(plan.root)
        return candidates.drive(
            plan,
            Briefing(),
            resume_one=lambda d: resume_run(d, spec_file, base_url, model_factory),
        )
    return resume_run(run_dir, spec_file, base_url, model_factory)


def resume_run(
    out: Path,
    spec_file: Path | None,
    base_url: str | None,
    model_factory: ModelFactory = service_model,
) -> Report:
    """Continue one run (a whole run, or one attempt of a multi-candidate run)."""
    state_file = out / RUN_FILE
    if not state_file.is_file() or not (out / "report.json").is_file():
        raise InputError(f"{out} is not a codegen-ci run directory (no run.json/report.json)")
    state = RunState.read(out)
    spec = trusted_spec(
        state.spec,
        state.repo,
        state.sources,
        environment_layer(os.environ),
        spec_file=spec_file,
        base_url=base_url,
    )
    apart: tuple[Path, ...] = ()
    if candidates.is_multi(out.parent.parent):
        # One attempt of a multi-candidate run: its model is the attempt's own, and its
        # siblings stay hidden from it.
        spec = spec.model_copy(
            update={"model": spec.model.model_copy(update={"name": state.spec.model.name})}
        )
        apart = candidates.Plan.load(out.parent.parent).apart()
    report = read_report(out)
    if report.status == Status.SUCCESS:
        raise InputError(f"the run in {out} already succeeded; nothing to resume")
    if not state.repo.is_dir():
        raise InputError(f"{state_file}: the repository {state.repo} is not there any more")
    root = state.repo
    trust_directory(root)  # the repository the run was started on (workspace/git.py)
    conversation = read_transcript(out / "transcript.jsonl", Conversation.load)
    register_secrets()
    slot: Slot | None = None
    try:
        worktree, slot = reopen_worktree(root, spec, state, report, own_slot=not apart)
        conversation.resume_note(report.rounds[-1:])
        report.finish(Status.ERROR)
        own = worktree.path.parent
        ctx = RunContext(
            root,
            out,
            state.run_id,
            worktree,
            make_progress(),
            model_factory,
            start_iteration=report.iterations + 1,
            conversation=conversation,
            report=report,
            hidden=(*apart, *slots.hidden(slot)),
            scratch_in=own if any(p in own.parents for p in apart) else None,
            caches=slot.caches if slot else None,
        )
        return run_pipeline(spec, ctx, state.sources)
    finally:
        if slot is not None:
            slot.release()


def reopen_worktree(
    root: Path, spec: Spec, state: RunState, report: Report, *, own_slot: bool = True
) -> tuple[Worktree, Slot | None]:
    """The worktree `resume` goes on in, and the slot it is in (workspace/slots.py), locked:
    an interrupted run's, where it was; else (a failed run's worktree was removed, its folder
    too, or reused by someone else) a new one, made as a new run's is (in a free slot of the
    repository's, unless `own_slot` is False: a candidate's repository is its own), on the
    run's branch as it is when that holds a commit, else on a new one from the run's base
    commit."""
    tree_path = Path(report.worktree) if report.worktree else state.worktree
    if not (tree_path.exists() or tree_path.is_symlink()):
        worktree_git(root, ["prune"], check=False)  # the removed one still has the branch
        slot = slots.take(root) if own_slot else None
        try:
            worktree = open_worktree(
                root,
                spec,
                tree_path.name,
                state.branch,
                state.base_commit,
                keep_branch=git.branch_exists(root, state.branch),
                artifacts=report.artifacts,
                slot=slot,
            )
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        return worktree, slot
    # An interrupted run's worktree: still in the run's private folder, and still ours.
    check_private(tree_path.parent)
    if tree_path.is_symlink() or not tree_path.is_dir():
        raise InputError(f"{tree_path} is not the run's worktree (not a directory)")
    slot = slots.hold(root, tree_path) if own_slot else None
    try:
        trust_directory(tree_path)
        worktree = Worktree(
            root,
            tree_path,
            state.branch,
            state.base_commit,
            tuple(spec.protected_paths),
            artifacts=set(report.artifacts),
            links=link_dependencies(root, tree_path),
            named=tuple(spec.outputs),
        )
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    return worktree, slot
