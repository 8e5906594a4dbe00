"""A multi-candidate run (`candidates.count` > 1): each attempt a whole run of the usual loop
(its own worktree, branch, conversation, rounds, sandbox and output directory
`OUT/candidates/<i>/`) from the same base commit; the gate's verdicts choose (`candidates.py`),
and only the chosen attempt's one commit ends up on the run's branch.

Attempts are strangers: each works in a repository of its own (workspace/isolated_repo.py:
the user's objects read through alternates, no ref) in its own private folder, all inside
the run's one private folder, and its sandbox hides that folder and `OUT` but for its own
parts. So one attempt's commands cannot list, read or change another's worktree, branch,
commits, scratch or output; the chosen commit is fetched into the user's repository at the end.

escalate runs them one after another and stops at the first that passes; race runs them at
once (at most `concurrency`) and chooses when all have finished. `OUT/candidates.json` records
the plan and every finished attempt, so `resume OUT` continues an interrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci.agent.prompt import Briefing
from codegen_ci.cancel import Cancel
from codegen_ci.candidates import (
    carry_note,
    choose,
    race_limits,
    remaining_limits,
    summarize,
    total_usage,
)
from codegen_ci.errors import CodegenError, InputError, Interrupted
from codegen_ci.pipeline import ModelFactory, RunContext
from codegen_ci.progress import Progress, make_progress
from codegen_ci.report import Candidate, Reason, Report, Status
from codegen_ci.run.attempt import (
    SpecProgress,
    branch_for,
    prepare_worktree,
    run_pipeline,
    service_model,
    sigterm_as_interrupt,
)
from codegen_ci.run.directory import RunState, is_run_dir
from codegen_ci.security import guarded_write
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Limits, Spec
from codegen_ci.workspace import git, isolated_repo, slots
from codegen_ci.workspace.private_dir import private_folder
from codegen_ci.workspace.worktree import worktrees_root

STATE = "candidates.json"


@dataclass
class Plan:
    """What a multi-candidate run is, fixed when it starts (and read back by `resume`)."""

    spec: Spec
    root: Path
    out: Path
    run_id: str
    branch: str
    base_commit: str
    sources: dict[str, Any] = field(default_factory=dict)
    done: list[Candidate] = field(default_factory=list)
    elapsed_s: float = 0.0
    note: str | None = None
    # Held around `git worktree add` and branch moves (a batch shares one per repository).
    lock: threading.Lock = field(default_factory=threading.Lock)
    progress: Progress | None = None  # default: a display of its own per candidate
    # The run's private folder: one private folder per attempt inside (its repository,
    # worktree, base tree and sandbox scratch); hidden from every attempt but for its own.
    folder: Path | None = None
    hidden: tuple[Path, ...] = ()  # kept from every attempt besides (an eval's user repository)
    cancel: Cancel | None = None  # the caller's (a batch's, an eval's): every attempt checks it
    # Each attempt's model, asked with the attempt's spec (`RunRequest.model_factory`).
    model_factory: ModelFactory = service_model
    # Each attempt's worktree in a slot of the repository's (workspace/slots.py), at a path
    # the next run's attempts get again (warm caches); False: in its own folder (an eval's).
    stable: bool = True
    keep_caches: bool = True  # the attempts' pre-flights may leave caches for the repository

    def apart(self) -> tuple[Path, ...]:
        """What every attempt's commands must not see: the run's output and its folder (each
        attempt's own parts in it are shown again), and what the caller hides besides."""
        return (self.out, *([self.folder] if self.folder else []), *self.hidden)

    def model(self, index: int) -> str:
        return self.spec.candidates.model_for(index, self.spec.model.name)

    def describe(self) -> str:
        c = self.spec.candidates
        models = ", ".join(self.model(i) for i in range(c.count))
        extra = f"concurrency {self.concurrency()}" if c.strategy == "race" else f"carry {c.carry}"
        return f"candidates: up to {c.count}, {c.strategy} ({extra}); models: {models}"

    def concurrency(self) -> int:
        c = self.spec.candidates
        return max(1, min(c.count, c.concurrency or os.cpu_count() or 1))

    def save(self) -> None:
        data = {
            "spec": self.spec.model_dump(mode="json"),
            "repo": str(self.root),
            "run_id": self.run_id,
            "branch": self.branch,
            "base_commit": self.base_commit,
            "sources": self.sources,
            "elapsed_s": self.elapsed_s,
            "done": [c.model_dump(mode="json") for c in self.done],
            "folder": str(self.folder) if self.folder else None,
            "stable": self.stable,
            "keep_caches": self.keep_caches,
        }
        guarded_write.write_into(self.out / STATE, REDACTOR.dumps(data, indent=2))

    @classmethod
    def load(cls, out: Path) -> Plan:
        path = out / STATE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                Spec.model_validate(data["spec"]),
                Path(data["repo"]),
                out,
                data["run_id"],
                data["branch"],
                data["base_commit"],
                dict(data.get("sources") or {}),
                [Candidate.model_validate(c) for c in data["done"]],
                float(data.get("elapsed_s", 0.0)),
                folder=Path(data["folder"]) if data.get("folder") else None,
                stable=bool(data.get("stable", True)),
                keep_caches=bool(data.get("keep_caches", False)),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path} is corrupt: {type(exc).__name__}: {exc}"[:500]) from None


def is_multi(out: Path) -> bool:
    return (out / STATE).is_file()


def start(
    spec: Spec,
    root: Path,
    out: Path,
    run_id: str,
    *,
    briefing: Briefing,
    sources: Mapping[str, Any],
    lock: threading.Lock | None = None,
    progress: Progress | None = None,
    branch: str | None = None,
    hidden: tuple[Path, ...] = (),
    folder: Path | None = None,
    cancel: Cancel | None = None,
    model_factory: ModelFactory = service_model,
    stable: bool = True,
    keep_caches: bool = True,
) -> Report:
    """Plan and drive a multi-candidate run. `hidden`: kept from every attempt besides its
    siblings; `folder`: the run's private folder (default: a new one); `stable`: each
    attempt's worktree in a slot of the repository's (`Plan.stable`), its pre-flight's caches
    kept for the repository unless `keep_caches` is False (`RunContext.keep_caches`)."""
    lock = lock or threading.Lock()
    base = git.git(["rev-parse", "--verify", f"{spec.git.base or 'HEAD'}^{{commit}}"], root).strip()
    wanted = spec.branch_name
    if branch is None:  # the action names its own branch (and replaces it)
        with lock:
            branch = branch_for(root, wanted, spec)
    plan = Plan(spec, root, out, run_id, branch, base, dict(sources), lock=lock, progress=progress)
    plan.folder, plan.hidden, plan.cancel = folder or worktrees_root(root), hidden, cancel
    plan.model_factory, plan.stable, plan.keep_caches = model_factory, stable, keep_caches
    plan.save()
    return drive(plan, briefing)


def drive(
    plan: Plan, briefing: Briefing, resume_one: Callable[[Path], Report] | None = None
) -> Report:
    """Run (or go on running) the candidates, then choose and put the winner on the branch.
    `resume_one` continues an attempt an interruption left unfinished."""
    (plan.progress or make_progress()).stage(plan.describe())
    try:
        if plan.spec.candidates.strategy == "race":
            _race(plan, briefing, resume_one)
        else:
            _escalate(plan, briefing, resume_one)
    except Interrupted:  # the attempts' folders stay: `resume` goes on in them
        stopped = Report(
            run_id=plan.run_id,
            output_dir=str(plan.out),
            base_commit=plan.base_commit,
            candidates=list(plan.done),
            usage=total_usage(plan.done),
        )
        stopped.finish(Status.ERROR, Reason.INTERRUPTED, "interrupted")
        stopped.write(plan.out)
        raise Interrupted("interrupted; resume with: codegen-ci resume " + str(plan.out)) from None
    except Exception:  # an error; Ctrl-C outside a pipeline (KeyboardInterrupt) keeps them too
        _drop_folder(plan)
        raise
    try:
        return _finish(plan)
    finally:
        _drop_folder(plan)


def _drop_folder(plan: Plan) -> None:
    """Every attempt's repository, worktree and scratch go once the run has ended, whether it
    finished or an error stopped it (an interrupted run keeps them: `resume` goes on in them);
    each attempt's report, diff and transcript stay in OUT/candidates/<i>/."""
    if plan.folder is not None:
        shutil.rmtree(plan.folder, ignore_errors=True)


def _escalate(plan: Plan, briefing: Briefing, resume_one: Callable[[Path], Report] | None) -> None:
    cfg = plan.spec.candidates
    began = time.monotonic() - plan.elapsed_s
    for index in range(len(plan.done), cfg.count):
        if plan.done and plan.done[-1].passed:
            if index < cfg.count:
                plan.note = f"stopped after candidate {plan.done[-1].index}: it passed the gate"
            return
        cand_out = plan.out / "candidates" / str(index)
        if resume_one is not None and _resumable(cand_out):
            report = resume_one(cand_out)
            candidate = summarize(index, plan.model(index), report, cand_out, time.time())
        else:
            limits, why = remaining_limits(plan.spec.limits, plan.done, time.monotonic() - began)
            if limits is None:
                plan.note = f"candidate {index} and later not started: {why}"
                shown = plan.progress or make_progress()
                shown.stage(f"candidate {index}: not started ({why})")
                return
            carry = carry_note(plan.done) if cfg.carry == "summary" else None
            candidate = _run_one(plan, index, limits, briefing, carry)
        plan.done.append(candidate)
        plan.elapsed_s = time.monotonic() - began
        plan.save()
    if plan.done and plan.done[-1].passed and len(plan.done) < cfg.count:
        plan.note = f"stopped after candidate {plan.done[-1].index}: it passed the gate"


def _race(plan: Plan, briefing: Briefing, resume_one: Callable[[Path], Report] | None) -> None:
    """Run the attempts at once. Signals reach only the main thread: on Ctrl-C or SIGTERM it
    sets `stop`, and each running attempt stops at its next step (as a batch's specs do),
    keeping its worktree for `resume`."""
    cfg = plan.spec.candidates
    began = time.monotonic() - plan.elapsed_s
    limits = race_limits(plan.spec.limits, cfg.count)
    finished = {c.index for c in plan.done}
    todo = [i for i in range(cfg.count) if i not in finished]
    state_lock = threading.Lock()
    stop = Cancel("batch")

    def one(index: int) -> None:
        progress = plan.progress or SpecProgress(f"candidate {index}", 11)
        cand_out = plan.out / "candidates" / str(index)
        if resume_one is not None and _resumable(cand_out):
            candidate = summarize(
                index, plan.model(index), resume_one(cand_out), cand_out, time.time()
            )
        else:
            candidate = _run_one(plan, index, limits, briefing, None, progress, plan.cancel or stop)
        with state_lock:
            plan.done.append(candidate)
            plan.done.sort(key=lambda c: c.index)
            plan.elapsed_s = time.monotonic() - began
            plan.save()

    interrupted = False
    with (
        sigterm_as_interrupt(),
        ThreadPoolExecutor(plan.concurrency(), thread_name_prefix="codegen-candidate") as pool,
    ):
        futures = [pool.submit(one, i) for i in todo]
        try:
            wait(futures)
        except (KeyboardInterrupt, Interrupted):
            interrupted = True
            stop.set()
            wait(futures)
    errors = [exc for f in futures if (exc := f.exception()) is not None]
    if interrupted or any(isinstance(exc, Interrupted) for exc in errors):
        raise Interrupted("interrupted")
    for exc in errors:
        raise exc


def _resumable(cand_out: Path) -> bool:
    """An attempt `resume` goes on with: one that started, and whose repository is still
    there (a run that ended in an error removed every attempt's folder; such an attempt
    starts afresh)."""
    return is_run_dir(cand_out) and RunState.read(cand_out).repo.is_dir()


def _run_one(
    plan: Plan,
    index: int,
    limits: Limits,
    briefing: Briefing,
    carry: str | None,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
) -> Candidate:
    model = plan.model(index)
    spec = plan.spec.model_copy(
        update={
            "limits": limits,
            "model": plan.spec.model.model_copy(update={"name": model}),
            "git": plan.spec.git.model_copy(update={"base": plan.base_commit}),
        }
    )
    out = plan.out / "candidates" / str(index)
    if out.exists():  # an attempt an error ended before it finished: it starts afresh
        shutil.rmtree(out)
    run_id = f"{plan.run_id}-c{index}"
    progress = progress or plan.progress or make_progress()
    progress.stage(f"candidate {index} (of {plan.spec.candidates.count}): model {model}")
    started_at = time.time()
    # The attempt's worktree: in a slot of the user's repository's (its own while it runs),
    # its repository and scratch in its own folder of the run's.
    slot = slots.take(plan.root) if plan.stable else None
    try:
        with plan.lock:  # racing attempts of a resumed plan make one new folder, not one each
            if plan.folder is None or not plan.folder.is_dir():  # a plan from before, resumed
                plan.folder = worktrees_root(plan.root)
                plan.save()
            folder = private_folder(plan.folder, name=f"candidate-{index}")
            repo = isolated_repo.sharing(plan.root, folder / "repo")
            worktree = prepare_worktree(
                repo,
                spec,
                run_id,
                branch=f"{plan.branch}-candidate-{index}",
                folder=folder,
                slot=slot,
            )
        ctx = RunContext(
            repo,
            out,
            run_id,
            worktree,
            progress,
            plan.model_factory,
            briefing=briefing,
            carry=carry,
            hidden=(*plan.apart(), *slots.hidden(slot)),
            scratch_in=folder,
            cancel=cancel or plan.cancel or Cancel(),
            caches=slot.caches if slot else None,
            keep_caches=plan.keep_caches,
        )
        try:
            report = run_pipeline(spec, ctx, plan.sources)
        except Interrupted:
            raise
        except CodegenError as exc:
            report = Report.read(out) if (out / "report.json").is_file() else Report()
            why = REDACTOR.redact(exc.message)
            report.finish(Status.ERROR, report.reason or Reason.ERROR, why)
    finally:
        if slot is not None:
            slot.release()
    return summarize(index, model, report, out, started_at)


def _finish(plan: Plan) -> Report:
    """Choose, put the chosen commit alone on the run's branch, drop the other attempts'
    branches (their diffs and reports stay in OUT/candidates/<i>/), write OUT/report.json."""
    picked = choose(plan.done)
    if picked is None:
        raise CodegenError(plan.note or "no candidate ran")
    best, why = picked
    best_out = Path(best.output_dir)
    report = Report.read(best_out)
    with plan.lock:
        for c in plan.done:
            git.git(["branch", "-D", f"{plan.branch}-candidate-{c.index}"], plan.root, check=False)
        if best.commit:
            _bring_back(plan, best)
            git.git(["branch", "-f", plan.branch, best.commit], plan.root)
            report.branch, report.commit = plan.branch, best.commit
        else:
            report.branch, report.commit = None, None
    for name in ("diff.patch", "transcript.jsonl"):
        if (best_out / name).is_file():
            guarded_write.copy_into(best_out / name, plan.out / name)
    report.run_id, report.output_dir = plan.run_id, str(plan.out)
    report.candidates, report.chosen, report.chosen_why = list(plan.done), best.index, why
    report.candidates_note = plan.note
    report.usage = total_usage(plan.done)
    report.duration_s = round(plan.elapsed_s, 3)
    report.write(plan.out)
    REDACTOR.redact_tree(plan.out)
    return report


def _bring_back(plan: Plan, best: Candidate) -> None:
    """Fetch the chosen commit from the attempt's own repository into the user's (by its
    branch there, which our ref guard kept where the attempt's run left it)."""
    assert best.commit is not None
    if git.ok(["cat-file", "-e", f"{best.commit}^{{commit}}"], plan.root):
        return  # an attempt from before attempts had repositories of their own
    repo = RunState.read(Path(best.output_dir)).repo
    ref = f"refs/heads/{plan.branch}-candidate-{best.index}"
    git.git(["fetch", "-q", "--no-tags", "--no-write-fetch-head", str(repo), ref], plan.root)


def dry_run_plan(spec: Spec, root: Path, out: Path, run_id: str, base: str) -> str:
    """What a multi-candidate run would do, for `run --dry-run`."""
    branch = branch_for(root, spec.branch_name, spec)
    plan = Plan(spec, root, out, run_id, branch, base)
    return (
        f"{plan.describe()}\n"
        f"  each candidate: a whole run from {base[:12]}, in {out / 'candidates'}/<i>/; the "
        f"chosen one's commit goes on {spec.branch_name}\n"
        "  budgets are for all candidates together; choice: passes the gate, fewer new "
        "failures, passes lint, fewer lines changed, lower billed cost, earlier\n"
    )


__all__ = ["Plan", "drive", "dry_run_plan", "is_multi", "start"]
