"""`codegen-ci eval --from-history N`: how often would a model have solved this repository's
own past changes, and at what cost.

Tasks come from history (eval/history.py). Every task is checked first: the gate runs on its
base and on the commit itself, each as a `--dry-run` of the normal pipeline (eval/judge.py
decides from the JUnit reports). `--check` stops there. Otherwise each configuration (one
per `--model`) runs every kept task through the same pipeline `run` uses: a worktree on a
temporary branch, the sandbox, budgets, JUnit, the baseline. Nothing is pushed; the user's
checkout, index and branches are never touched: each run's worktree is outside the checkout
and its branch (`codegen-eval/<eval id>/...`) is deleted when the run ends, whatever happened;
base commits are objects no ref points to.

Exit status: 2 bad input (nothing ran) · 3 an infrastructure error (model service, git) or an
interruption · 1 a kept task was not resolved · 0 every kept task was resolved.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from codegen_ci.cancel import Cancel
from codegen_ci.errors import CodegenError, ExitCode, InputError, Interrupted
from codegen_ci.eval import judge, store
from codegen_ci.eval.history import Task, find_tasks, make_base
from codegen_ci.eval.results import Configuration, TaskRun, document, markdown, write_json
from codegen_ci.eval.shards import check_settings, digest, parse_shard, run_identity
from codegen_ci.eval.texts import github_lookup, task_text
from codegen_ci.gate.preflight import ConfigError
from codegen_ci.progress import Progress, make_tally
from codegen_ci.publish.job_summary import job_summary
from codegen_ci.report import Report, Status
from codegen_ci.run.attempt import (
    environment_layer,
    register_secrets,
    sigterm_as_interrupt,
)
from codegen_ci.run.directory import make_output_dir
from codegen_ci.run.start import RunRequest, start
from codegen_ci.security import guarded_write
from codegen_ci.security.inert_text import for_terminal
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.layers import load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec, slugify
from codegen_ci.workspace import git, isolated_repo
from codegen_ci.workspace.private_dir import private_folder
from codegen_ci.workspace.worktree import worktree_git, worktrees_root

BRANCH_ROOT = "codegen-eval"
T = TypeVar("T")


def eval_command(
    from_history: int,
    repo: Path,
    model: tuple[str, ...],
    candidates: tuple[int, ...],
    base_url: str | None,
    spec_file: Path | None,
    check_only: bool,
    concurrency: int,
    output_dir: Path | None,
    shard: str | None = None,
) -> int:
    share = parse_shard(shard) if shard else None
    root = git.repo_root(repo.resolve())
    layers = _settings_layers(root, spec_file, base_url)
    settings = resolve_spec(
        *layers, {"task": "(settings check)"}, name=str(spec_file or ".codegen.yml")
    )
    if not settings.validation.test:
        where = str(spec_file) if spec_file else f"{root / '.codegen.yml'}"
        raise InputError(
            f"{where}: validation.test is empty; eval judges tasks by the "
            "repository's test commands (set them in .codegen.yml or --spec)"
        )
    models = list(dict.fromkeys(model)) or [settings.model.name]
    counts = list(dict.fromkeys(candidates)) or [settings.candidates.count]
    tasks, examined = find_tasks(root, from_history)
    task_commits = [t.commit for t in tasks]  # the whole run's, in commit order
    if share is not None:
        tasks = [t for t in tasks if share.holds(t.commit)]
    eval_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
    out = make_output_dir((output_dir or default_eval_dir(root, eval_id)).resolve())
    register_secrets()
    lookup = github_lookup(root)
    for task in tasks:
        task.text, task.notes = task_text(task, lookup)
    with tempfile.TemporaryDirectory(prefix="codegen-eval-") as scratch:
        for task in tasks:
            make_base(root, task, Path(scratch))
    head = git.rev_parse(root, "HEAD")
    shallow = git.git(["rev-parse", "--is-shallow-repository"], root).strip() == "true"
    if shallow:
        click.echo(
            f"eval: warning: {root} is a shallow clone; commits at its edge have no parent and "
            "make no task (fetch the history: actions/checkout with fetch-depth: 0)",
            err=True,
        )
    click.echo(
        f"eval: {len(tasks)} task(s) among the last {examined} first-parent commit(s) of "
        f"{head[:12]}"
        + (f" (shard {share.label()} of {len(task_commits)})" if share else "")
        + f"; output {out}",
        err=True,
    )
    settings_json = settings.model_dump(mode="json")
    runner = Runner(root, out, eval_id, layers, concurrency)
    runner.keys(digest(settings_json), digest(check_settings(settings_json)))
    configurations = (
        []
        if check_only
        else [
            Configuration(config_name(name, k, counts), name, k, pinned=bool(model))
            for name in models
            for k in counts
        ]
    )
    try:
        with sigterm_as_interrupt():
            checks = runner.check_all(tasks)
            kept = [t for t in tasks if checks[t.commit].kept]
            for config in configurations:
                if runner.stop.is_set():
                    break
                config.runs = runner.run_all(config, kept, checks)
    finally:
        runner.tally.close()
        runner.sweep_branches()
    meta = {
        "eval_id": eval_id,
        "repo": str(root),
        "head": head,
        "from_history": from_history,
        "commits_examined": examined,
        "mode": "check" if check_only else "models",
        "concurrency": concurrency,
        "interrupted": runner.stop.is_set(),
        "shallow": shallow,
        "run": run_identity(head, from_history, settings_json, share.count if share else 1),
        "shard": {"index": share.index, "count": share.count} if share else None,
        "task_commits": task_commits,
    }
    doc = document(meta, tasks, checks, configurations)
    write_json(doc, out)
    text = REDACTOR.redact(markdown(doc))
    guarded_write.write_into(out / "eval.md", text)
    job_summary(text)
    _show(doc, out)
    return exit_code(doc, configurations)


def config_name(model: str, count: int, counts: list[int]) -> str:
    """A row's name: the model, and the attempts per task when any configuration has more
    than one."""
    return model if counts == [1] else f"{model}, {count} candidate{'s' if count > 1 else ''}"


def exit_code(doc: dict[str, Any], configurations: list[Configuration]) -> int:
    runs = [run for c in configurations for run in c.runs]
    if doc["interrupted"] or any(run.exit_code == ExitCode.INFRA for run in runs):
        return ExitCode.INFRA
    return ExitCode.SUCCESS if all(run.resolved for run in runs) else ExitCode.FAILED


def default_eval_dir(root: Path, eval_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / "evals" / eval_id
    return git.common_dir(root) / "codegen" / "evals" / eval_id


def _settings_layers(
    root: Path, spec_file: Path | None, base_url: str | None
) -> list[dict[str, Any]]:
    """Environment < .codegen.yml < --spec < flags, as for `run`; `--spec` takes the
    `.codegen.yml` schema (a spec's own `task` is not needed: history gives the tasks)."""
    repo_layer, _ = load_repo_config(root)
    spec_layer: dict[str, Any] = {}
    if spec_file is not None:
        if not spec_file.is_file():
            raise InputError(f"--spec {spec_file}: no such file")
        spec_layer = load_layer_file(spec_file, is_spec=False)
    flags: dict[str, Any] = {"model": {"base_url": base_url}} if base_url else {}
    return [environment_layer(os.environ), repo_layer, spec_layer, flags]


def _show(doc: dict[str, Any], out: Path) -> None:
    kept = doc["kept"]
    click.echo(f"{kept}/{len(doc['tasks'])} task(s) kept by the check")
    for c in doc["configurations"]:
        click.echo(
            f"{c['name']}: {c['resolved']}/{c['tasks']} resolved; billed tokens "
            f"{c['billed_tokens']['total']}; rounds {c['rounds']['total']}"
        )
    click.echo(f"eval.json and eval.md: {out}")


def printable(text: Untrusted | str) -> str:
    """A commit subject for one terminal line: no control characters or escapes."""
    return "".join(ch if ch.isprintable() else "?" for ch in for_terminal(text))


@dataclass
class Attempt:
    report: Report | None
    error: CodegenError | None


class Runner:
    """Runs tasks through the normal pipeline, `concurrency` at a time, in the user's
    repository but never on its branches."""

    def __init__(
        self, root: Path, out: Path, eval_id: str, layers: list[dict[str, Any]], concurrency: int
    ) -> None:
        self.root, self.out, self.eval_id = root, out, eval_id
        self.layers, self.concurrency = layers, concurrency
        self.git_lock = threading.Lock()
        self.stop = Cancel("eval")
        self.tally = make_tally()
        self.settings_digest = self.check_digest = ""

    def keys(self, settings_digest: str, check_digest: str) -> None:
        """What finished work saved in the output directory must match to be reused
        (eval/store.py): every setting for a model run, the model-free ones for a check."""
        self.settings_digest, self.check_digest = settings_digest, check_digest

    # -- the check --------------------------------------------------------------------------

    def check_all(self, tasks: list[Task]) -> dict[str, judge.CheckResult]:
        total = len(tasks)
        self.tally.start("check", total, "kept")
        results = self._map(tasks, lambda i, t: self._check_one(i, total, t))
        return {t.commit: r for t, r in zip(tasks, results, strict=True)}

    def _check_one(self, index: int, total: int, task: Task) -> judge.CheckResult:
        started = time.monotonic()
        where = self.out / "tasks" / task.short
        key = store.check_key(self.check_digest, task)
        result = store.load_check(where, key)
        if result is not None:
            self._line(
                f"[{index + 1}/{total}] check {task.short} "
                + ("kept" if result.kept else f"dropped ({judge.REASON_TEXT[result.reason or '']})")
                + f", from an earlier run: {printable(task.subject)[:60]}",
                kept=result.kept,
            )
            return result
        before = self._attempt(task, task.base, where / "before", "before", dry_run=True)
        result, transient = self._judge_check(task, before, where)
        if self.stop.is_set() and not result.kept:
            result = judge.CheckResult(False, None, "not checked: the eval was interrupted")
        elif not transient:  # an infrastructure error is not the task's verdict: check again
            store.save_check(where, key, result)
        self._line(
            f"[{index + 1}/{total}] check {task.short} "
            + (
                "kept"
                if result.kept
                else f"dropped ({judge.REASON_TEXT.get(result.reason or '', 'interrupted')})"
            )
            + f", {time.monotonic() - started:.0f}s: {printable(task.subject)[:60]}",
            kept=result.kept,
        )
        return result

    def _judge_check(
        self, task: Task, before: Attempt, where: Path
    ) -> tuple[judge.CheckResult, bool]:
        """The check's verdict, and whether an infrastructure error made it (not to keep)."""
        if before.error or before.report is None or not before.report.rounds:
            why = "on the base: " + _why(before)
            return judge.CheckResult(False, "setup_failed", why), _infra(before)
        after = self._attempt(task, task.commit, where / "after", "after", dry_run=True)
        if after.error or after.report is None or not after.report.rounds:
            why = "with the commit: " + _why(after)
            return judge.CheckResult(False, "setup_failed", why), _infra(after)
        result = judge.check(
            task,
            judge.last_round(where / "before", before.report),
            judge.last_round(where / "after", after.report),
            after.report,
        )
        return result, False

    # -- model runs ---------------------------------------------------------------------------

    def run_all(
        self, config: Configuration, kept: list[Task], checks: dict[str, judge.CheckResult]
    ) -> list[TaskRun]:
        total = len(kept)
        self.tally.start(config.name, total)
        return self._map(kept, lambda i, t: self._run_one(i, total, config, t, checks[t.commit]))

    def _run_one(
        self, index: int, total: int, config: Configuration, task: Task, check: judge.CheckResult
    ) -> TaskRun:
        where = self.out / "runs" / slugify(config.name, 40) / task.short
        identity = {"name": config.name, "model": config.model, "candidates": config.candidates}
        key = store.run_key(self.settings_digest, identity | {"pinned": config.pinned}, task, check)
        saved = store.load_result(where, key)
        saved_report = _read_report(where) if saved is not None else None
        if saved is not None and saved_report is not None:
            run = TaskRun(
                task,
                bool(saved["resolved"]),
                str(saved["why"]),
                saved_report,
                str(where / "report.json"),
                saved.get("error"),
                int(saved.get("exit_code", 0)),
            )
            self._run_line(index, total, config, run, " (from an earlier run)")
            return run
        attempt = self._attempt(
            task,
            task.base,
            where,
            slugify(config.name, 30),
            dry_run=False,
            model=config.model,
            candidates=config.candidates,
            pinned=config.pinned,
        )
        report = attempt.report
        if attempt.error is not None and (report is None or report.status == Status.ERROR):
            run = TaskRun(
                task,
                False,
                f"error: {attempt.error.message[:200]}",
                report,
                str(where / "report.json"),
                attempt.error.message,
                attempt.error.exit_code,
            )
        elif report is None:
            run = TaskRun(task, False, "no report", None, str(where / "report.json"))
        else:
            verdict = judge.resolved(
                report,
                judge.last_round(chosen_dir(where, report), report),
                check.targets,
                check.passed_before,
            )
            run = TaskRun(task, verdict.resolved, verdict.why, report, str(where / "report.json"))
        finished = run.exit_code != ExitCode.INFRA and not isinstance(attempt.error, Interrupted)
        if finished and not self.stop.is_set() and (where / "report.json").is_file():
            store.save_result(
                where,
                key,
                {"resolved": run.resolved, "why": run.why, "error": run.error}
                | {"exit_code": run.exit_code},
            )
        self._run_line(index, total, config, run, "")
        return run

    def _run_line(
        self, index: int, total: int, config: Configuration, run: TaskRun, note: str
    ) -> None:
        report = run.report
        usage = report.usage if report else None
        self._line(
            f"[{index + 1}/{total}] {printable(config.name)} {run.task.short} "
            + ("resolved" if run.resolved else "not resolved")
            + f" ({printable(run.why)[:80]}); {run.rounds()} round(s), "
            + (f"{run.candidates_ran()} candidate(s), " if config.candidates > 1 else "")
            + f"{usage.billed_tokens if usage else 0} billed tokens, "
            f"{report.duration_s if report else 0:.0f}s" + note,
            kept=run.resolved,
            tokens=usage.billed_tokens if usage else 0,
            cost=usage.cost_usd if usage else None,
        )

    # -- one pipeline run --------------------------------------------------------------------

    def _spec(
        self, task: Task, base: str, phase: str, model: str | None, candidates: int, pinned: bool
    ) -> Spec:
        task_layer: dict[str, Any] = {
            "title": task.subject.map(lambda s: s[:200]) or Untrusted(task.short),
            "task": task.text or f"Make the tests of {task.short} pass.",
            "git": {"base": base, "branch": f"{BRANCH_ROOT}/{self.eval_id}/{task.short}-{phase}"},
            # the changed tests decide: the model may not edit tests (eval/judge.py also
            # refuses a run that did)
            "validation": {"protect_tests": True},
        }
        flags: dict[str, Any] = {"model": {"name": model}} if model else {}
        # the configuration's K, whatever the settings say; a --model row is that model only
        # (not the settings' candidates.models cascade)
        flags["candidates"] = {"count": candidates, **({"models": []} if pinned else {})}
        return resolve_spec(*self.layers, task_layer, flags, name=f"task {task.short}")

    def _attempt(
        self,
        task: Task,
        base: str,
        out: Path,
        phase: str,
        *,
        dry_run: bool,
        model: str | None = None,
        candidates: int = 1,
        pinned: bool = False,
    ) -> Attempt:
        if self.stop.is_set():
            return Attempt(None, Interrupted("not started: the eval was interrupted"))
        spec = self._spec(task, base, phase, model, candidates, pinned)
        out.mkdir(parents=True, exist_ok=True)
        # A model's run works on a repository holding the base alone (the check's dry runs,
        # which need the commit itself and run no model, work on the user's).
        with (
            (out / "progress.log").open("w", encoding="utf-8") as log,
            contextlib.ExitStack() as cleanup,
        ):
            repo, hidden = self.root, tuple[Path, ...]()
            if not dry_run:
                folder = worktrees_root(self.root)
                cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
                repo, hidden = task_repository(self.root, base, folder), self.apart()
            multi = candidates > 1 and not dry_run
            request = RunRequest(
                spec,
                repo,
                out,
                dry_run=dry_run,
                # the run's progress goes to its own log file, not the terminal, where each
                # task gets one line when it ends
                progress=Progress(log),
                cancel=self.stop,
                lock=self.git_lock,
                hidden=hidden,
                # K attempts: the task's own repository; the chosen attempt's report is the
                # task's. Their folder goes with the task's.
                folder=private_folder(repo.parent, name="candidates") if multi else None,
                disposable=True,
            )
            try:
                return Attempt(start(request), None)
            except CodegenError as exc:
                saved = Report.read(out) if (out / "report.json").is_file() else None
                return Attempt(saved, exc)
            finally:
                if multi:
                    self._clean_candidates(spec.git.branch)

    def apart(self) -> tuple[Path, ...]:
        """What a task's model run must not see: the user's repository (the history holds the
        answer), its git directory and the eval's output (the check's runs of the answer)."""
        return (self.root, git.common_dir(self.root), self.out)

    def _clean_candidates(self, branch: str) -> None:
        """Every attempt's worktree (an interrupted or failed one keeps its own) and branch."""
        ours = (f"refs/heads/{branch}", f"refs/heads/{branch}-candidate-")
        with self.git_lock:
            listing = git.git(["worktree", "list", "--porcelain"], self.root, check=False)
            for entry in listing.split("\n\n"):
                fields = dict(line.partition(" ")[::2] for line in entry.splitlines())
                if fields.get("branch", "").startswith(ours) and fields.get("worktree"):
                    path = Path(fields["worktree"])
                    worktree_git(self.root, ["remove", "--force", str(path)], check=False)
                    with contextlib.suppress(OSError):
                        path.parent.rmdir()  # its private folder, when empty
            refs = git.git(
                ["for-each-ref", "--format=%(refname)", ours[0], ours[0] + "-*"],
                self.root,
                check=False,
            )
            for ref in refs.split():
                git.git(["update-ref", "-d", ref], self.root, check=False)

    def sweep_branches(self) -> None:
        """Last line of defence: no `codegen-eval/<this eval>/` branch survives the eval."""
        prefix = f"refs/heads/{BRANCH_ROOT}/{self.eval_id}/"
        with self.git_lock:
            refs = git.git(["for-each-ref", "--format=%(refname)", prefix], self.root, check=False)
            for ref in refs.split():
                git.git(["update-ref", "-d", ref], self.root, check=False)
            worktree_git(self.root, ["prune"], check=False)

    # -- plumbing ----------------------------------------------------------------------------

    def _map(self, items: list[Task], func: Callable[[int, Task], T]) -> list[T]:
        """`func` over `items` on `concurrency` threads; results in the items' order."""
        futures: list[Future[T]] = []
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="codegen-eval") as pool:
            try:
                futures = [pool.submit(func, i, item) for i, item in enumerate(items)]
                wait(futures)
            except (KeyboardInterrupt, Interrupted):
                self.stop.set()
                click.echo("eval: interrupted; stopping the running tasks", err=True)
                wait(futures)  # running tasks stop at their next step; what finished counts
        return [f.result() for f in futures]

    def _line(
        self, text: str, *, kept: bool = False, tokens: int = 0, cost: float | None = None
    ) -> None:
        """A task's one line as it ends (plain in CI logs; above the live bar in a
        terminal); `kept`: resolved, or kept by the check."""
        self.tally.task_done(text, resolved=kept, tokens=tokens, cost=cost)


def task_repository(root: Path, base: str, folder: Path) -> Path:
    """A repository for one task's model run: the base commit alone, fetched shallow from the
    user's repository (workspace/isolated_repo.py), with no ref, object or reflog that reaches
    the commit the task was made from."""
    return isolated_repo.base_only(root, base, folder / "repo")


def chosen_dir(where: Path, report: Report) -> Path:
    """Where the JUnit copies of the report's rounds are: the run's own output directory, or
    with candidates the chosen attempt's (`OUT/candidates/<i>/`)."""
    if report.chosen is not None:
        for c in report.candidates:
            if c.index == report.chosen and c.output_dir:
                return Path(c.output_dir)
    return where


def _read_report(where: Path) -> Report | None:
    """A finished run's report, kept from an earlier eval; None when it cannot be read."""
    try:
        return Report.read(where)
    except (OSError, ValueError):
        return None


def _infra(attempt: Attempt) -> bool:
    return attempt.error is not None and attempt.error.exit_code == ExitCode.INFRA


def _why(attempt: Attempt) -> str:
    if attempt.error is not None:
        kind = "configuration" if isinstance(attempt.error, ConfigError) else "error"
        first = (attempt.error.message or "").splitlines()[:1]
        return f"{kind}: {first[0][:300] if first else ''}"
    if attempt.report is not None and attempt.report.error:
        return attempt.report.error[:300]
    return "no validation round ran"
