"""`codegen-ci batch DIR_OR_GLOB...`: many specs at once, each in its own worktree, on its own
branch, with its own report directory; or, with `--matrix`, the GitHub Actions matrix that fans
the same specs out over jobs (which is how a batch scales past one machine).

Every spec is checked before anything runs. Exit status, first match wins:
2 an argument matches no spec or a spec is invalid (nothing runs) · 1 a spec failed ·
3 an infrastructure error or an interruption, and no spec failed · 0 all succeeded.

The plan: the arguments expanded to spec files, every spec resolved against `.codegen.yml`
and checked, and the matrix. What it shows: each spec's progress lines, prefixed with its name
(`run.attempt.SpecProgress`), and the summary table at the end (a rich table in a terminal,
plain columns otherwise).
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from codegen_ci.cancel import Cancel
from codegen_ci.errors import (
    CodegenError,
    ExitCode,
    InputError,
    Interrupted,
    SpecError,
    SpecProblem,
)
from codegen_ci.pipeline import ModelFactory
from codegen_ci.progress import LiveTally, Tally, TallyStream, interactive
from codegen_ci.publish.job_summary import job_summary
from codegen_ci.publish.markdown import escape_cell
from codegen_ci.publish.mermaid import fenced, outcomes_pie
from codegen_ci.report import Reason, Report, Status
from codegen_ci.run.attempt import (
    SpecProgress,
    environment_layer,
    register_secrets,
    service_model,
    sigterm_as_interrupt,
)
from codegen_ci.run.directory import make_output_dir
from codegen_ci.run.start import RunRequest, exit_code, start
from codegen_ci.security import guarded_write
from codegen_ci.security.inert_text import for_terminal, raw_stream
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.layers import REPO_CONFIG_NAME, load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

SPEC_SUFFIXES = (".yaml", ".yml")
COLUMNS = ("spec", "status", "rounds", "branch", "tokens", "time")


def batch_command(
    specs: tuple[str, ...],
    concurrency: int,
    output_dir: Path | None,
    repo: Path,
    matrix: bool,
    candidates: int | None = None,
    *,
    model_factory: ModelFactory = service_model,
) -> int:
    """`model_factory`: where each spec's run gets its model (`RunRequest.model_factory`)."""
    paths = expand(specs)
    root = git.repo_root(repo.resolve())
    plans = plan(paths, root, check_git=not matrix)
    if candidates:  # `--candidates N` sets every spec's candidates.count
        plans = [
            replace(
                p,
                spec=p.spec.model_copy(
                    update={
                        "candidates": p.spec.candidates.model_copy(update={"count": candidates})
                    }
                ),
            )
            for p in plans
        ]
    if matrix:
        click.echo(json.dumps(matrix_of(plans, root), separators=(",", ":")))
        return 0
    batch_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
    out = make_output_dir((output_dir or default_batch_dir(root, batch_id)).resolve())
    register_secrets()
    outcomes = run_all(plans, root, out, concurrency, model_factory)
    write_summary(outcomes, out)
    show_summary(outcomes, out)
    return batch_exit_code(outcomes)


def default_batch_dir(root: Path, batch_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / "batches" / batch_id
    return git.common_dir(root) / "codegen" / "batches" / batch_id


def run_all(
    plans: list[Planned],
    root: Path,
    out: Path,
    concurrency: int,
    model_factory: ModelFactory = service_model,
) -> list[Outcome]:
    """Run the specs on `concurrency` threads. Signals reach only this (the main) thread: it
    sets `stop`, and each running spec stops at its next step, keeping its worktree for
    `codegen-ci resume`; specs not yet started are skipped."""
    stop = Cancel("batch")
    git_lock = threading.Lock()
    width = max(len(p.name) for p in plans)
    click.echo(f"batch: {len(plans)} spec(s), {concurrency} at a time; output {out}", err=True)
    futures: list[Future[Outcome]] = []
    tally = LiveTally() if interactive() else None  # CI logs: the specs' lines, as they are
    if tally is not None:
        tally.start("batch", len(plans), "succeeded")
    # The handler is installed before the first spec starts and stays while the specs wind
    # down: it ignores the SIGTERM a cancelled workflow sends after SIGINT, so every report
    # still gets written.
    with (
        sigterm_as_interrupt(),
        ThreadPoolExecutor(concurrency, thread_name_prefix="codegen-batch") as pool,
    ):
        try:
            for p in plans:
                progress = SpecProgress(p.name, width)
                if tally is not None:
                    progress.stream = TallyStream(tally)
                futures.append(
                    pool.submit(
                        run_one, p, root, out / p.name, progress, git_lock, stop, model_factory
                    )
                )
                if tally is not None:
                    futures[-1].add_done_callback(_tallied(tally))
            wait(futures)
        except (KeyboardInterrupt, Interrupted):
            stop.set()
            click.echo("batch: interrupted; stopping the running specs", err=True)
            wait(futures)
    if tally is not None:
        tally.close()
    outcomes = [f.result() for f in futures]
    return outcomes + [_not_started(p) for p in plans[len(outcomes) :]]


def _tallied(tally: Tally) -> Callable[[Future[Outcome]], None]:
    """What counts a spec on the live bar once it ends."""

    def done(future: Future[Outcome]) -> None:
        outcome = future.result()
        r = outcome.report
        tally.task_done(
            f"{outcome.planned.name}: {outcome.status}",
            resolved=outcome.status == Status.SUCCESS,
            tokens=r.usage.billed_tokens if r else 0,
            cost=r.usage.cost_usd if r else None,
        )

    return done


def _not_started(planned: Planned) -> Outcome:
    return Outcome(planned, ExitCode.INFRA, error="not started: the batch was interrupted")


def run_one(
    planned: Planned,
    root: Path,
    out: Path,
    progress: SpecProgress,
    git_lock: threading.Lock,
    stop: Cancel,
    model_factory: ModelFactory = service_model,
) -> Outcome:
    if stop.is_set():
        return _not_started(planned)
    try:
        request = RunRequest(
            planned.spec,
            root,
            out,
            progress=progress,
            lock=git_lock,
            cancel=stop,
            model_factory=model_factory,
        )
        report = start(request)
    except CodegenError as exc:
        progress.line(f"error: {exc.message}")
        saved = Report.read(out) if (out / "report.json").is_file() else None
        return Outcome(planned, exc.exit_code, saved, exc.message)
    except Exception as exc:  # a bug in one spec's run must not take the others down
        progress.line("internal error:\n" + traceback.format_exc())
        return Outcome(planned, ExitCode.INFRA, error=f"internal error: {exc!r}")
    progress.line(f"report: {out / 'report.json'}")
    return Outcome(planned, exit_code(report), report)


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
    guarded_write.write_into(out / "summary.json", json.dumps(rows, indent=2) + "\n")
    text = REDACTOR.redact(summary_markdown(outcomes))
    guarded_write.write_into(out / "summary.md", text)
    job_summary(text)


def summary_markdown(outcomes: Sequence[Outcome]) -> str:
    """The outcomes as a Mermaid pie (how many ended how) and the summary table."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    done = counts.get(Status.SUCCESS, 0)
    lines = [
        f"## codegen-ci batch: {done}/{len(outcomes)} succeeded",
        "",
        fenced(outcomes_pie(counts, f"{len(outcomes)} spec(s) by outcome")),
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += [
        "| " + " | ".join(escape_cell(v) for v in row) + " |" for row in summary_rows(outcomes)
    ]
    return "\n".join(lines) + "\n"


def batch_exit_code(outcomes: list[Outcome]) -> ExitCode:
    codes = {o.exit_code for o in outcomes}
    for code in (ExitCode.INPUT, ExitCode.FAILED, ExitCode.INFRA):
        if code in codes:
            return code
    return ExitCode.SUCCESS


# -- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    path: Path  # as the user named it
    name: str  # the spec's output sub-directory; unique within the batch
    spec: Spec


def expand(args: tuple[str, ...]) -> list[Path]:
    """Spec files named by the arguments, in order, each once. A directory gives its own
    `*.yaml`/`*.yml` files, sorted, not its sub-directories' (a `**` glob reaches those), and
    never `.codegen.yml` or other hidden files; a glob expands with `glob` semantics."""
    found: dict[Path, Path] = {}
    unmatched = []
    for arg in args:
        matched = _expand_one(arg)
        if not matched:
            unmatched.append(arg)
        for path in matched:
            found.setdefault(path.resolve(), path)
    if unmatched:
        raise InputError("no spec files match: " + ", ".join(repr(a) for a in unmatched))
    return list(found.values())


def _expand_one(arg: str) -> list[Path]:
    path = Path(arg)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in SPEC_SUFFIXES and _is_spec(p))
    if path.is_file():
        return [path]
    if glob.has_magic(arg):
        # glob.glob, not Path.glob: the pattern may be absolute
        matched = glob.glob(arg, recursive=True)  # noqa: PTH207
        return sorted(Path(m) for m in matched if _is_spec(Path(m)))
    return []


def _is_spec(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.name != REPO_CONFIG_NAME


def plan(paths: list[Path], root: Path, *, check_git: bool) -> list[Planned]:
    """Resolve every spec against `.codegen.yml` and the environment; all problems at once."""
    repo_layer, _ = load_repo_config(root)
    env_layer = environment_layer(os.environ)
    problems: list[SpecProblem] = []
    plans: list[Planned] = []
    names: set[str] = set()
    for path in paths:
        try:
            spec = resolve_spec(
                env_layer, repo_layer, load_layer_file(path, is_spec=True), name=str(path)
            )
            if check_git:
                _check_git(root, spec, str(path))
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        plans.append(Planned(path, _unique(path.stem, names), spec))
    if problems:
        raise SpecError(problems)
    return plans


def _check_git(root: Path, spec: Spec, name: str) -> None:
    """What would stop the run before it starts: the base commit and the branch name."""
    problems = []
    try:
        git.rev_parse(root, spec.git.base or "HEAD")
    except InputError as exc:
        problems.append(SpecProblem(name, None, "git.base", exc.message))
    try:
        git.check_branch_name(root, spec.branch_name)
    except InputError as exc:
        problems.append(SpecProblem(name, None, "git.branch", exc.message))
    if problems:
        raise SpecError(problems)


def _unique(stem: str, taken: set[str]) -> str:
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    taken.add(name)
    return name


def matrix_of(plans: list[Planned], root: Path) -> dict[str, Any]:
    """Spec paths relative to the repository root, as the action's `spec` input takes them."""
    include = []
    for p in plans:
        resolved = p.path.resolve()
        rel = resolved.relative_to(root) if resolved.is_relative_to(root) else p.path
        include.append(
            {
                "spec": rel.as_posix(),
                # the job's name in the matrix: the maintainers' own spec file
                "title": p.spec.title.raw_for("record") if p.spec.title else p.spec.slug,
                "slug": p.spec.slug,
            }
        )
    return {"include": include}


@dataclass
class Outcome:
    planned: Planned
    exit_code: int  # what this spec alone would exit with
    report: Report | None = None
    error: str | None = None

    @property
    def status(self) -> Status:
        return self.report.status if self.report else Status.ERROR


# -- what it shows ------------------------------------------------------------------------


def summary_rows(outcomes: Sequence[Outcome]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for o in outcomes:
        r = o.report
        reason = r.reason if r and r.status != Status.SUCCESS and r.reason != Reason.ERROR else None
        status = o.status + (f" ({reason})" if reason else "")
        if o.status == Status.ERROR and o.error:
            status += f": {o.error.splitlines()[0][:60]}"
        rows.append(
            (
                o.planned.name,
                status,
                str(r.iterations) if r else "-",
                (r.branch or "-") if r else "-",
                str(r.usage.total_tokens) if r else "-",
                f"{r.duration_s:.0f}s" if r else "-",
            )
        )
    return rows


def show_summary(outcomes: Sequence[Outcome], out: Path) -> None:
    rows = summary_rows(outcomes)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(*COLUMNS, title="codegen-ci batch")
        for row in rows:
            style = "green" if row[1] == "success" else "red"
            table.add_row(*(Text(for_terminal(v, one_line=True)) for v in row), style=style)
        # rich's styling is ours; the cells are plain text (no markup) with no control
        Console(file=raw_stream(sys.stdout), highlight=False).print(table)
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
        for row in [COLUMNS, *rows]:
            click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    done = sum(o.status == Status.SUCCESS for o in outcomes)
    click.echo(f"{done}/{len(outcomes)} succeeded; reports under {out} (summary.json)")
