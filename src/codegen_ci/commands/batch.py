"""`codegen-ci batch DIR_OR_GLOB...`: many specs at once, each in its own worktree, on its own
branch, with its own report directory; or, with `--matrix`, the GitHub Actions matrix that fans
the same specs out over jobs (which is how a batch scales past one machine).

Every spec is checked before anything runs. Exit status, first match wins:
2 an argument matches no spec or a spec is invalid (nothing runs) · 1 a spec failed ·
3 an infrastructure error or an interruption, and no spec failed · 0 all succeeded.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

import click

from codegen_ci.commands.batch_plan import Outcome, Planned, expand, matrix_of, plan
from codegen_ci.commands.batch_view import SpecProgress, show_summary
from codegen_ci.commands.run import (
    new_run_id,
    prepare_worktree,
    register_secrets,
    run_pipeline,
    sigterm_as_interrupt,
)
from codegen_ci.commands.run_dir import make_output_dir
from codegen_ci.errors import CodegenError, Interrupted
from codegen_ci.report import Report
from codegen_ci.workspace import git
from codegen_ci.workspace.worktree import Worktree

EXIT_INTERRUPTED = 3


def batch_command(
    specs: tuple[str, ...],
    concurrency: int,
    output_dir: Path | None,
    repo: Path,
    matrix: bool,
    candidates: int | None = None,
) -> int:
    paths = expand(specs)
    root = git.repo_root(repo.resolve())
    plans = plan(paths, root, check_git=not matrix)
    if candidates:  # `--candidates N` sets every spec's candidates.count
        plans = [replace(p, spec=p.spec.model_copy(update={
            "candidates": p.spec.candidates.model_copy(update={"count": candidates})}))
            for p in plans]  # fmt: skip
    if matrix:
        click.echo(json.dumps(matrix_of(plans, root), separators=(",", ":")))
        return 0
    batch_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
    out = make_output_dir((output_dir or default_batch_dir(root, batch_id)).resolve())
    register_secrets()
    outcomes = run_all(plans, root, out, concurrency)
    write_summary(outcomes, out)
    show_summary(outcomes, out)
    return exit_code(outcomes)


def default_batch_dir(root: Path, batch_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / "batches" / batch_id
    return git.common_dir(root) / "codegen" / "batches" / batch_id


def run_all(plans: list[Planned], root: Path, out: Path, concurrency: int) -> list[Outcome]:
    """Run the specs on `concurrency` threads. Signals reach only this (the main) thread: it
    sets `stop`, and each running spec stops at its next step, keeping its worktree for
    `codegen-ci resume`; specs not yet started are skipped."""
    stop = threading.Event()
    git_lock = threading.Lock()
    width = max(len(p.name) for p in plans)
    click.echo(f"batch: {len(plans)} spec(s), {concurrency} at a time; output {out}", err=True)
    futures: list[Future[Outcome]] = []
    # The handler is installed before the first spec starts and stays while the specs wind
    # down: it ignores the SIGTERM a cancelled workflow sends after SIGINT, so every report
    # still gets written.
    with (
        sigterm_as_interrupt(),
        ThreadPoolExecutor(concurrency, thread_name_prefix="codegen-batch") as pool,
    ):
        try:
            for p in plans:
                progress = SpecProgress(p.name, width, stop)
                futures.append(pool.submit(run_one, p, root, out / p.name, progress, git_lock))
            wait(futures)
        except (KeyboardInterrupt, Interrupted):
            stop.set()
            click.echo("batch: interrupted; stopping the running specs", err=True)
            wait(futures)
    outcomes = [f.result() for f in futures]
    return outcomes + [_not_started(p) for p in plans[len(outcomes) :]]


def _not_started(planned: Planned) -> Outcome:
    return Outcome(planned, EXIT_INTERRUPTED, error="not started: the batch was interrupted")


def run_one(
    planned: Planned, root: Path, out: Path, progress: SpecProgress, git_lock: threading.Lock
) -> Outcome:
    if progress.stop.is_set():
        return _not_started(planned)
    spec = planned.spec
    run_id = new_run_id(spec)
    worktree: Worktree | None = None
    try:
        if spec.candidates.count > 1:
            from codegen_ci.agent.briefing import Briefing
            from codegen_ci.commands.run_candidates import start

            out.mkdir(parents=True, exist_ok=True)
            report = start(spec, root, out, run_id, briefing=Briefing(), sources={},
                           lock=git_lock, progress=progress)  # fmt: skip
            progress.line(f"report: {out / 'report.json'}")
            return Outcome(planned, 0 if report.status == "success" else 1, report)
        # Branch names are chosen and created under one lock, so two specs never pick the
        # same name and concurrent `git worktree add` calls never race for the repo's locks.
        with git_lock:
            worktree = prepare_worktree(root, spec, run_id)
        report = run_pipeline(spec, root, out, run_id, worktree, progress=progress)
    except CodegenError as exc:
        progress.line(f"error: {exc.message}")
        saved = Report.read(out) if (out / "report.json").is_file() else None
        return Outcome(planned, exc.exit_code, saved, exc.message)
    except Exception as exc:  # a bug in one spec's run must not take the others down
        progress.line("internal error:\n" + traceback.format_exc())
        return Outcome(planned, 3, error=f"internal error: {exc!r}")
    finally:
        if worktree is not None:
            _drop_empty_branch(root, worktree, git_lock)
    progress.line(f"report: {out / 'report.json'}")
    return Outcome(planned, 0 if report.status == "success" else 1, report)


def _drop_empty_branch(root: Path, worktree: Worktree, git_lock: threading.Lock) -> None:
    """The pipeline deletes a branch that got no commit, but a concurrent ref update can make
    that delete fail (packed-refs.lock); retry it under the lock. A branch whose worktree is
    still there (interrupted) is kept for `resume`."""
    if worktree.path.exists():
        return
    with git_lock:
        for _ in range(3):
            head = git.git(
                ["rev-parse", "--verify", "-q", f"refs/heads/{worktree.branch}"], root, check=False
            ).strip()
            if head != worktree.base_commit:
                return
            git.git(["branch", "-D", worktree.branch], root, check=False)
            time.sleep(0.1)


def write_summary(outcomes: list[Outcome], out: Path) -> None:
    rows = [
        {
            "spec": str(o.planned.path),
            "name": o.planned.name,
            "status": o.status,
            "exit_code": o.exit_code,
            "branch": o.report.branch if o.report else None,
            "report": str(out / o.planned.name / "report.json"),
            "error": o.error,
        }
        for o in outcomes
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def exit_code(outcomes: list[Outcome]) -> int:
    codes = {o.exit_code for o in outcomes}
    for code in (2, 1, 3):
        if code in codes:
            return code
    return 0
