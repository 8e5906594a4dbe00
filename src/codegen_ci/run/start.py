"""The one entry point of a run: `start(RunRequest) -> Report`. Every command (`run`,
`batch`, `eval`, `action`) builds a `RunRequest` and calls it once; `resume` (resume.py) is
its counterpart for a stopped run.

`start` owns what every run needs and no command should assemble by hand: the run id, the
output directory, the maintainers' instructions (read once, from the commit the run starts
from, or the commit the caller names: the action reads them from the default branch), one
attempt or K candidates (`candidates.py`), run.json (`directory.py`), signals (`attempt.py`)
and, through `exit_code`, the exit status a finished run gives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci.agent.prompt import NO_HISTORY, Briefing, read_instructions
from codegen_ci.cancel import Cancel
from codegen_ci.errors import ExitCode
from codegen_ci.pipeline import ModelFactory, RunContext
from codegen_ci.progress import Progress, make_progress
from codegen_ci.report import Report, Status
from codegen_ci.run import candidates
from codegen_ci.run.attempt import (
    new_run_id,
    prepare_worktree,
    register_secrets,
    run_pipeline,
    service_model,
)
from codegen_ci.run.directory import default_output_dir, make_output_dir
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git, slots
from codegen_ci.workspace.worktree import Worktree


@dataclass(frozen=True)
class RunRequest:
    """What a command asks of a run; everything else `start` decides."""

    spec: Spec
    root: Path  # the repository the run works on
    output_dir: Path | None = None  # default: default_output_dir(root, run id)
    run_id: str | None = None  # default: a new one
    dry_run: bool = False
    sources: Mapping[str, Any] = field(default_factory=dict)  # run.json: where settings came from
    progress: Progress | None = None  # default: a display of the run's own
    # The run's branch, exactly (an existing one is replaced: the action's); default: the
    # spec's `git.branch`, or the first free suffixed name.
    branch: str | None = None
    # The commit the maintainers' instructions are read from; default: the run's base commit.
    instructions_at: str | None = None
    memory: Untrusted = NO_HISTORY  # earlier runs on the same pull request (the action)
    # Held around worktree and branch changes when runs share a repository (batch, eval).
    lock: threading.Lock | None = None
    hidden: tuple[Path, ...] = ()  # kept from the run's commands besides its output directory
    folder: Path | None = None  # the private folder K candidates go in (default: a new one)
    # An eval's run: its worktree and branch go when it ends, whatever happened.
    disposable: bool = False
    # Set by the thread that gets the signals (a batch's, an eval's): the run stops at its
    # next step. Runs on the main thread stop on the signal itself.
    cancel: Cancel | None = None
    # Where each attempt gets its model, asked with the attempt's spec (a candidate's names
    # the candidate's model); default: the OpenAI-compatible client from the spec and the
    # environment. Tests hand in a deterministic model here.
    model_factory: ModelFactory = service_model


def start(request: RunRequest) -> Report:
    """Run the task once: one attempt, or K candidates when `candidates.count` > 1 (not in a
    dry run). Errors are the error tree's (`CodegenError`); the report is written either way."""
    spec, root = request.spec, request.root
    run_id = request.run_id or new_run_id(spec)
    out = make_output_dir((request.output_dir or default_output_dir(root, run_id)).resolve())
    register_secrets()
    lock = request.lock or threading.Lock()
    if spec.candidates.count > 1 and not request.dry_run:
        base = git.git(
            ["rev-parse", "--verify", f"{spec.git.base or 'HEAD'}^{{commit}}"], root
        ).strip()
        return candidates.start(
            spec,
            root,
            out,
            run_id,
            briefing=_briefing(request, base),
            sources=request.sources,
            lock=lock,
            progress=request.progress,
            branch=request.branch,
            hidden=request.hidden,
            folder=request.folder,
            cancel=request.cancel,
            model_factory=request.model_factory,
            stable=not request.disposable,
            keep_caches=_trusted_base(request, base),
        )
    worktree: Worktree | None = None
    # The stable place of the repository's worktree, warm caches and all (an eval's run, in a
    # repository of its own made for it, keeps nothing: a fresh temporary folder).
    slot = None if request.disposable else slots.take(root)
    try:
        # Branch names are chosen and created under the lock, so two runs never pick the
        # same name and concurrent `git worktree add` calls never race for the repo's locks.
        with lock:
            worktree = prepare_worktree(
                root,
                spec,
                run_id,
                branch=request.branch,
                reset=request.branch is not None,
                slot=slot,
            )
        ctx = RunContext(
            root,
            out,
            run_id,
            worktree,
            request.progress or make_progress(),
            request.model_factory,
            dry_run=request.dry_run,
            briefing=_briefing(request, worktree.base_commit),
            hidden=(*request.hidden, *slots.hidden(slot)),
            cancel=request.cancel or Cancel(),
            caches=slot.caches if slot else None,
            keep_caches=_trusted_base(request, worktree.base_commit),
        )
        return run_pipeline(spec, ctx, request.sources)
    finally:
        if worktree is not None and request.disposable:
            _remove(root, worktree, lock)
        elif worktree is not None and request.lock is not None:
            _drop_empty_branch(root, worktree, lock)
        if slot is not None:
            slot.release()


def _briefing(request: RunRequest, base: str) -> Briefing:
    """The maintainers' instructions, from the commit the run starts from (not from the
    working tree), or from the one the caller names."""
    at = request.instructions_at or base
    return Briefing(read_instructions(request.root, at, request.spec.instructions), request.memory)


def _trusted_base(request: RunRequest, base: str) -> bool:
    """Whether the run's pre-flight may leave its caches for the repository's next runs: its
    base is the commit the caller trusts for the maintainers' instructions (the action's
    default branch), or the base the user chose (no such commit named). Not a pull request's
    head (the action's work on a pull request: code a model or a contributor wrote), whose
    transform cache could hold entries keyed for another commit's files."""
    if request.instructions_at is None:
        return True
    trusted = git.git(
        ["rev-parse", "--verify", "-q", f"{request.instructions_at}^{{commit}}"],
        request.root,
        check=False,
    )
    return trusted.strip() == base


def exit_code(report: Report) -> ExitCode:
    """A finished run's exit status: 0 it succeeded, 1 it did not (an error is the error
    tree's, `CodegenError.exit_code`)."""
    return ExitCode.SUCCESS if report.status == Status.SUCCESS else ExitCode.FAILED


def _drop_empty_branch(root: Path, worktree: Worktree, lock: threading.Lock) -> None:
    """The pipeline deletes a branch that got no commit, but a concurrent ref update can make
    that delete fail (packed-refs.lock); retry it under the lock. A branch whose worktree is
    still there (interrupted) is kept for `resume`."""
    if worktree.path.exists():
        return
    with lock:
        for _ in range(3):
            head = git.git(
                ["rev-parse", "--verify", "-q", f"refs/heads/{worktree.branch}"], root, check=False
            ).strip()
            if head != worktree.base_commit:
                return
            git.git(["branch", "-D", worktree.branch], root, check=False)
            time.sleep(0.1)


def _remove(root: Path, worktree: Worktree, lock: threading.Lock) -> None:
    """A disposable run's worktree and branch go, whatever happened (an eval keeps nothing
    for `resume`; its report and diff.patch stay in the output directory)."""
    with lock:
        if worktree.path.exists():
            worktree.remove()
        for _ in range(3):
            ref = f"refs/heads/{worktree.branch}"
            if not git.ok(["rev-parse", "--verify", "-q", ref], root):
                return
            git.git(["update-ref", "-d", ref], root, check=False)
            time.sleep(0.05)


__all__ = ["RunRequest", "exit_code", "start"]
