"""`codegen-ci run SPEC`, and how a run's result is shown (also for `resume`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from codegen_ci.agent.prompt import Briefing, read_instructions
from codegen_ci.commands import run_state
from codegen_ci.commands.publish_local import check_prerequisites
from codegen_ci.commands.run_driver import run_pipeline
from codegen_ci.commands.run_files import make_output_dir
from codegen_ci.commands.run_prepare import (
    default_output_dir,
    environment_layer,
    new_run_id,
    prepare_worktree,
    register_secrets,
)
from codegen_ci.report import Failure, Report
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.layers import load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

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
    candidates: int | None = None,
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
    if candidates:
        flags.setdefault("candidates", {})["count"] = candidates
    resolved = resolve_spec(environment_layer(os.environ), repo_layer, spec_layer, flags,
                            name=str(spec))  # fmt: skip
    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    asked = bool(push or pr)  # on the command line, not Actions' default
    push = in_actions if push is None else push
    pr = in_actions if pr is None else pr
    if (push or pr) and (asked or not dry_run):  # a dry run publishes nothing by default
        # Before the worktree and the first model call: a missing remote or token costs nothing.
        check_prerequisites(root, open_pr=bool(pr))
    run_id = new_run_id(resolved)
    out = make_output_dir((output_dir or default_output_dir(root, run_id)).resolve())
    register_secrets()
    multi = resolved.candidates.count > 1
    if multi and not dry_run:
        return _run_candidates(resolved, root, out, run_id, spec, flags, push=bool(push),
                               pr=bool(pr))  # fmt: skip
    worktree = prepare_worktree(root, resolved, run_id)
    # From the base commit, like the code the run starts from: not from the working tree.
    instructions = read_instructions(root, worktree.base_commit, resolved.instructions)
    report = run_pipeline(resolved, root, out, run_id, worktree, dry_run=dry_run,
                          briefing=Briefing(instructions),
                          sources=run_state.sources(spec, flags))  # fmt: skip
    if dry_run:
        if multi:
            from codegen_ci.commands.run_candidates import Plan

            plan = Plan(resolved, root, out, run_id, worktree.branch, worktree.base_commit)
            click.echo(plan.describe())
            click.echo(f"  each candidate: a whole run from {worktree.base_commit[:12]}, in "
                       f"{out / 'candidates'}/<i>/; the chosen one's commit goes on "
                       f"{resolved.git.branch.replace('{slug}', resolved.slug)}")  # fmt: skip
            click.echo("  budgets are for all candidates together; choice: passes the gate, "
                       "fewer new failures, passes lint, fewer lines changed, lower billed "
                       "cost, earlier\n")  # fmt: skip
        return show_dry_run(report, out)
    if report.branch and (push or pr):
        from codegen_ci.commands.publish_local import publish_branch

        publish_branch(root, report, resolved, open_pr=bool(pr))
        report.write(out)
    return show_result(report, out)


def _run_candidates(resolved: Spec, root: Path, out: Path, run_id: str, spec: Path,
                    flags: dict[str, Any], *, push: bool, pr: bool) -> int:  # fmt: skip
    from codegen_ci.commands import run_candidates

    # From the base commit, like the code the run starts from: not from the working tree.
    base = git.git(["rev-parse", "--verify", f"{resolved.git.base or 'HEAD'}^{{commit}}"],
                   root).strip()  # fmt: skip
    instructions = read_instructions(root, base, resolved.instructions)
    report = run_candidates.start(resolved, root, out, run_id, briefing=Briefing(instructions),
                                  sources=run_state.sources(spec, flags))  # fmt: skip
    if report.branch and (push or pr):
        from codegen_ci.commands.publish_local import publish_branch

        publish_branch(root, report, resolved, open_pr=pr)
        report.write(out)
    return show_result(report, out)


def show_dry_run(report: Report, out: Path) -> int:
    rnd = report.rounds[0] if report.rounds else None
    if rnd:
        click.echo("Validation on the untouched code:")
        for c in rnd.commands:
            click.echo(f"  {c.kind}: {c.command} -> {c.state} ({c.duration_s:.1f}s)")
        t = rnd.tests
        if rnd.tests_unknown:
            click.echo("  tests: unknown (no JUnit report)")
        elif not rnd.tests_known:
            click.echo("  tests: not run")
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
    for lint in report.preexisting_lint:
        click.echo(f"  lint already fails on the untouched code: `{lint.command}` (pre-existing: "
                   "left to you; the tests decide)")  # fmt: skip
    click.echo(f"\nDry run done; report: {out / 'report.json'}; command logs: {out / 'logs'}")
    return 0


def describe(failure: Failure) -> str:
    """`id (file:line): first line of the message`, as far as they are known."""
    text = failure.id + (f" ({failure.where})" if failure.where else "")
    first = next((ln.strip() for ln in failure.message.splitlines() if ln.strip()), "")
    if first and failure.message != failure.id:
        text += f": {first[:200]}"
    return REDACTOR.redact(text)


def show_result(report: Report, out: Path) -> int:
    from codegen_ci.candidates import summary_line

    if line := summary_line(report):
        click.echo(f"candidates: {REDACTOR.redact(line)}")
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
