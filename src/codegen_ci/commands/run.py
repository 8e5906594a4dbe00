"""`codegen-ci run SPEC` and `codegen-ci resume RUN_DIR`."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from codegen_ci.agent.briefing import Briefing
from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.instructions import read_instructions
from codegen_ci.agent.model import Model, OpenAIChatModel
from codegen_ci.commands import run_state
from codegen_ci.commands.run_files import (
    make_output_dir,
    read_report,
    read_run_state,
    read_transcript,
)
from codegen_ci.errors import InputError
from codegen_ci.pipeline import RunContext, execute
from codegen_ci.progress import Progress, make_progress
from codegen_ci.report import Failure, Report
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Spec, load_layer_file, load_repo_config, resolve_spec, slugify
from codegen_ci.workspace import git
from codegen_ci.workspace.create import create_worktree, unique_branch, worktrees_root
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.interrupt_deferral import defer_interrupt
from codegen_ci.workspace.worktree import Worktree

EXIT_FAILED = 1


def run_command(
    spec: Path,
    repo: Path,
    output_dir: Path | None,
    model: str | None,
    base_url: str | None,
    max_iterations: int | None,
    push: bool | None,
    pr: bool | None,
    dry_run: bool,
) -> int:
    spec_layer = load_layer_file(spec, is_spec=True)
    root = git.repo_root(repo.resolve())
    repo_layer, _ = load_repo_config(root)
    flags: dict[str, Any] = {}
    if model:
        flags.setdefault("model", {})["name"] = model
    if base_url:
        flags.setdefault("model", {})["base_url"] = base_url
    if max_iterations:
        flags.setdefault("limits", {})["max_iterations"] = max_iterations
    resolved = resolve_spec(environment_layer(os.environ), repo_layer, spec_layer, flags,
                            name=str(spec))  # fmt: skip
    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    push = in_actions if push is None else push
    pr = in_actions if pr is None else pr
    run_id = new_run_id(resolved)
    out = make_output_dir((output_dir or default_output_dir(root, run_id)).resolve())
    register_secrets()
    worktree = prepare_worktree(root, resolved, run_id)
    # From the base commit, like the code the run starts from: not from the working tree.
    instructions = read_instructions(root, worktree.base_commit, resolved.instructions)
    report = run_pipeline(resolved, root, out, run_id, worktree, dry_run=dry_run,
                          briefing=Briefing(instructions),
                          sources=run_state.sources(spec, flags))  # fmt: skip
    if dry_run:
        return show_dry_run(report, out)
    if report.branch and (push or pr):
        from codegen_ci.commands.publish_local import publish_branch

        publish_branch(root, report, resolved, open_pr=bool(pr))
        report.write(out)
    return show_result(report, out)


def resume_command(run_dir: Path, spec_file: Path | None = None, base_url: str | None = None
                   ) -> int:  # fmt: skip
    """Continue a stopped (interrupted) or failed run with its spec, worktree or branch, and
    transcript. A run that already succeeded has nothing to resume. Sensitive settings in
    run.json must match the run's sources unless restated (run_state.py)."""
    run_dir = run_dir.resolve()
    state_file = run_dir / "run.json"
    if not state_file.is_file() or not (run_dir / "report.json").is_file():
        raise InputError(f"{run_dir} is not a codegen-ci run directory (no run.json/report.json)")
    state = read_run_state(run_dir)
    spec = run_state.trusted_spec(state.spec, state.repo, run_state.recorded(run_dir),
                                  environment_layer(os.environ), spec_file=spec_file,
                                  base_url=base_url)  # fmt: skip
    report = read_report(run_dir)
    if report.status == "success":
        raise InputError(f"the run in {run_dir} already succeeded; nothing to resume")
    root = state.repo
    if not root.is_dir():
        raise InputError(f"{state_file}: the repository {root} is not there any more")
    conversation = read_transcript(run_dir / "transcript.jsonl",
                                   lambda p: Conversation.load(p, REDACTOR.redact))  # fmt: skip
    register_secrets()
    branch = state.branch
    tree_path = Path(report.worktree) if report.worktree else state.worktree
    if not tree_path.exists():
        # A failed run's worktree was removed; its branch stays only when it holds a commit.
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
    report.status, report.reason, report.error = "error", None, None
    report = run_pipeline(spec, root, run_dir, state.run_id, worktree, report=report,
                          conversation=conversation,
                          sources=run_state.recorded(run_dir))  # fmt: skip
    return show_result(report, run_dir)


def run_pipeline(
    spec: Spec,
    root: Path,
    out: Path,
    run_id: str,
    worktree: Worktree,
    *,
    dry_run: bool = False,
    report: Report | None = None,
    conversation: Conversation | None = None,
    progress: Progress | None = None,
    briefing: Briefing | None = None,
    sources: Mapping[str, Any] | None = None,
) -> Report:
    out.mkdir(parents=True, exist_ok=True)
    state = {"spec": spec.model_dump(mode="json"), "repo": str(root), "run_id": run_id,
             "branch": worktree.branch, "base_commit": worktree.base_commit,
             "worktree": str(worktree.path), "sources": dict(sources or {})}  # fmt: skip
    (out / "run.json").write_text(REDACTOR.redact(json.dumps(state, indent=2)), encoding="utf-8")
    progress = progress or make_progress(REDACTOR.redact)
    ctx = RunContext(root, out, run_id, worktree, progress, model_factory, dry_run=dry_run,
                     report=report or Report(), conversation=conversation,
                     start_iteration=(report.iterations + 1) if report else 1,
                     briefing=briefing or Briefing())  # fmt: skip
    progress.stage(f"run {run_id}: branch {worktree.branch}, output {out}")
    try:
        with sigterm_as_interrupt():
            result = execute(spec, ctx)
    finally:
        progress.finished(ctx.report)
    return result


def model_factory(spec: Spec) -> Model:
    return OpenAIChatModel(
        spec.model,
        api_key=os.environ.get("OPENAI_API_KEY"),
        base_url=spec.model.base_url or os.environ.get("OPENAI_BASE_URL") or None,
        retry_backoff=float(os.environ.get("CODEGEN_RETRY_BACKOFF", "1.0")),
    )


def environment_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from the environment (lowest precedence above the built-in defaults)."""
    layer: dict[str, Any] = {}
    if environ.get("CODEGEN_MODEL"):
        layer["model"] = {"name": environ["CODEGEN_MODEL"]}
    return layer


def register_secrets() -> None:
    REDACTOR.add_from_env(os.environ)


def new_run_id(spec: Spec) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"{stamp}-{slugify(spec.slug, 24)}-{secrets.token_hex(2)}"


def default_output_dir(root: Path, run_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / run_id
    return git.common_dir(root) / "codegen" / "runs" / run_id


def prepare_worktree(
    root: Path, spec: Spec, run_id: str, *, branch: str | None = None, reset: bool = False
) -> Worktree:
    wanted = branch or spec.git.branch.replace("{slug}", spec.slug)
    name = wanted if reset else unique_branch(root, wanted)
    path = worktrees_root(root) / run_id
    worktree = create_worktree(root, path, branch=name, base=spec.git.base or "HEAD",
                               protected=spec.protected_paths, reset_branch=reset)  # fmt: skip
    worktree.named = tuple(spec.outputs)
    return worktree


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A cancelled workflow sends SIGINT, then SIGTERM: treat either like Ctrl-C, once.

    The first signal raises `KeyboardInterrupt` (a BaseException, so no `except Exception`
    on the way swallows it); the pipeline turns it into status error, reason interrupted,
    after the running command's process group is killed. A SIGTERM after that is ignored so
    the report and the worktree are written in full; a second Ctrl-C still stops at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (batch runs specs in threads)
        return
    interrupted = False

    def handler(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted and signum == signal.SIGTERM:
            return
        interrupted = True
        if not defer_interrupt():  # else the runner raises once its child is accounted for
            raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def show_dry_run(report: Report, out: Path) -> int:
    rnd = report.rounds[0] if report.rounds else None
    if rnd:
        click.echo("Validation on the untouched code:")
        for c in rnd.commands:
            click.echo(f"  {c.kind}: {c.command} -> {c.state} ({c.duration_s:.1f}s)")
        t = rnd.tests
        if rnd.tests_unknown:
            click.echo("  tests: unknown (no JUnit report)")
        else:
            click.echo(f"  tests: {t.total} total, {t.passed} passed, {t.failed} failed, "
                       f"{t.errors} errors, {t.skipped} skipped")  # fmt: skip
        for failure in rnd.failures[:20]:
            click.echo(f"  FAIL {describe(failure)}")
    for missing in report.junit_missing:
        click.echo(f"  no JUnit from `{missing.command}`: the gate goes by its exit code only.")
        click.echo(f"    to get JUnit: {missing.hint}")
    prompt = out / "first-prompt.md"
    if prompt.exists():
        click.echo("\nFirst prompt the model would get:\n")
        click.echo(prompt.read_text(encoding="utf-8"))
    click.echo(f"\nDry run done; report: {out / 'report.json'}")
    return 0


def describe(failure: Failure) -> str:
    if failure.message and failure.message != failure.id:
        return REDACTOR.redact(f"{failure.id}: {failure.message[:200]}")
    return REDACTOR.redact(failure.id)


def show_result(report: Report, out: Path) -> int:
    click.echo(f"status: {report.status}" + (f" ({report.reason})" if report.reason else ""))
    if report.branch:
        click.echo(f"branch: {report.branch} (commit {(report.commit or '')[:12]})")
    if report.pr_url:
        click.echo(f"pull request: {report.pr_url}")
    for failure in (report.rounds[-1].failures if report.rounds else [])[:10]:
        if report.status != "success":
            click.echo(f"  FAIL {describe(failure)}")
    click.echo(f"report: {out / 'report.json'}")
    sys.stdout.flush()
    return 0 if report.status == "success" else EXIT_FAILED
