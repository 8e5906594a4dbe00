"""`codegen-ci resume RUN_DIR`: continue a stopped or failed run where it ended."""

from __future__ import annotations

import os
from pathlib import Path

from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.prompt import Briefing
from codegen_ci.commands import run_state
from codegen_ci.commands.run import show_result
from codegen_ci.commands.run_driver import run_pipeline
from codegen_ci.commands.run_files import read_report, read_run_state, read_transcript
from codegen_ci.commands.run_prepare import environment_layer, register_secrets
from codegen_ci.errors import InputError
from codegen_ci.report import Report, Status
from codegen_ci.workspace import git
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.git import trust_directory
from codegen_ci.workspace.private_dir import check_private
from codegen_ci.workspace.worktree import Worktree, worktrees_root


def resume_command(run_dir: Path, spec_file: Path | None = None, base_url: str | None = None
                   ) -> int:  # fmt: skip
    """Continue a stopped (interrupted) or failed run with its spec, worktree or branch, and
    transcript. A run that already succeeded has nothing to resume. Sensitive settings in
    run.json must match the run's sources unless restated (run_state.py). A multi-candidate
    run (OUT/candidates.json) goes on where it stopped: the interrupted attempt resumes, the
    ones not started yet run, then the gate chooses."""
    from codegen_ci.commands import run_candidates

    run_dir = run_dir.resolve()
    if run_candidates.is_multi(run_dir):
        register_secrets()
        plan = run_candidates.Plan.load(run_dir)
        trust_directory(plan.root)
        report = run_candidates.drive(
            plan, Briefing(), resume_one=lambda d: resume_run(d, spec_file, base_url)
        )
        return show_result(report, run_dir)
    return show_result(resume_run(run_dir, spec_file, base_url), run_dir)


def resume_run(run_dir: Path, spec_file: Path | None, base_url: str | None) -> Report:
    """Continue one run (a whole run, or one attempt of a multi-candidate run)."""
    state_file = run_dir / "run.json"
    if not state_file.is_file() or not (run_dir / "report.json").is_file():
        raise InputError(f"{run_dir} is not a codegen-ci run directory (no run.json/report.json)")
    state = read_run_state(run_dir)
    spec = run_state.trusted_spec(state.spec, state.repo, run_state.recorded(run_dir),
                                  environment_layer(os.environ), spec_file=spec_file,
                                  base_url=base_url)  # fmt: skip
    if (run_dir.parent.parent / "candidates.json").is_file():
        # One attempt of a multi-candidate run: its model is the attempt's own.
        spec = spec.model_copy(update={"model": spec.model.model_copy(
            update={"name": state.spec.model.name})})  # fmt: skip
    report = read_report(run_dir)
    if report.status == "success":
        raise InputError(f"the run in {run_dir} already succeeded; nothing to resume")
    if not state.repo.is_dir():
        raise InputError(f"{state_file}: the repository {state.repo} is not there any more")
    root = state.repo
    trust_directory(root)  # the repository the run was started on (workspace/git.py)
    conversation = read_transcript(run_dir / "transcript.jsonl", Conversation.load)
    register_secrets()
    branch = state.branch
    tree_path = Path(report.worktree) if report.worktree else state.worktree
    if tree_path.exists() or tree_path.is_symlink():
        # An interrupted run's worktree: still in the run's private folder, and still ours.
        check_private(tree_path.parent)
        if tree_path.is_symlink() or not tree_path.is_dir():
            raise InputError(f"{tree_path} is not the run's worktree (not a directory)")
        trust_directory(tree_path)
    else:
        # A failed run's worktree was removed (its folder too, or reused by someone else):
        # a new private folder; its branch stays only when it holds a commit.
        tree_path = worktrees_root(root) / tree_path.name
        trust_directory(tree_path)
        git.git(["worktree", "prune"], root, check=False)
        if git.branch_exists(root, branch):
            git.git(["worktree", "add", "-q", str(tree_path), branch], root)
        else:
            git.git(["worktree", "add", "-q", "-b", branch, str(tree_path),
                     state.base_commit], root)  # fmt: skip
    worktree = Worktree(root, tree_path, branch, state.base_commit, tuple(spec.protected_paths),
                        artifacts=set(report.artifacts), links=link_dependencies(root, tree_path),
                        named=tuple(spec.outputs))  # fmt: skip
    conversation.resume_note(report.rounds[-1:])
    report.finish(Status.ERROR)
    return run_pipeline(spec, root, run_dir, state.run_id, worktree, report=report,
                        conversation=conversation,
                        sources=run_state.recorded(run_dir))  # fmt: skip
