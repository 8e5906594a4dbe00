"""`codegen-ci run SPEC` and `codegen-ci resume RUN_DIR`: a run, started or continued, and its
result shown. The run itself is `run/`'s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from codegen_ci.errors import ExitCode
from codegen_ci.publish.local import check_prerequisites, publish_branch
from codegen_ci.publish.proof_text import proof_line
from codegen_ci.report import Failure, Reason, Report, Status
from codegen_ci.run.attempt import environment_layer, new_run_id
from codegen_ci.run.candidates import dry_run_plan as candidates_dry_run
from codegen_ci.run.directory import default_output_dir, settings_sources
from codegen_ci.run.resume import resume
from codegen_ci.run.start import RunRequest, exit_code, start
from codegen_ci.security.inert_text import for_terminal
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.layers import load_layer_file, load_repo_config, resolve_spec
from codegen_ci.workspace import git

# -- the commands ---------------------------------------------------------------------------


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
    resolved = resolve_spec(
        environment_layer(os.environ), repo_layer, spec_layer, flags, name=str(spec)
    )
    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    asked = bool(push or pr)  # on the command line, not Actions' default
    push = in_actions if push is None else push
    pr = in_actions if pr is None else pr
    if (push or pr) and (asked or not dry_run):  # a dry run publishes nothing by default
        # Before the worktree and the first model call: a missing remote or token costs nothing.
        check_prerequisites(root, open_pr=bool(pr))
    run_id = new_run_id(resolved)
    out = (output_dir or default_output_dir(root, run_id)).resolve()
    report = start(
        RunRequest(
            resolved,
            root,
            out,
            run_id,
            dry_run=dry_run,
            sources=settings_sources(spec, flags),
        )
    )
    if dry_run:
        if resolved.candidates.count > 1:
            click.echo(candidates_dry_run(resolved, root, out, run_id, report.base_commit or ""))
        return show_dry_run(report, out)
    if report.branch and (push or pr):
        publish_branch(root, report, resolved, open_pr=bool(pr))
        report.write(out)
    return show_result(report, out)


def resume_command(
    run_dir: Path, spec_file: Path | None = None, base_url: str | None = None
) -> int:
    """Continue a stopped (interrupted) or failed run (`run.resume`)."""
    return show_result(resume(run_dir, spec_file, base_url), run_dir.resolve())


# -- the result -----------------------------------------------------------------------------


def show_dry_run(report: Report, out: Path) -> int:
    """What the dry run checked on the untouched code, and what it found; never "success":
    nothing was done yet."""
    rnd = report.rounds[0] if report.rounds else None
    click.echo("Dry run: checked on the untouched code (no model call, nothing committed):")
    if rnd:
        for c in rnd.commands:
            click.echo(f"  {c.kind}: {c.command} -> {c.state} ({c.duration_s:.1f}s)")
    for line in report.imports:
        click.echo(f"  imports the repository's own code: {REDACTOR.redact(line)}")
    if rnd:
        t = rnd.tests
        if rnd.tests_unknown:
            click.echo("  tests: unknown (no JUnit report)")
        elif not rnd.tests_known:
            click.echo("  tests: not run")
        else:
            click.echo(
                f"  tests: {t.total} total, {t.passed} passed, {t.failed} failed, "
                f"{t.errors} errors, {t.skipped} skipped"
            )
        for failure in rnd.failures[:20]:
            click.echo(f"  FAIL {describe(failure)}")
    for missing in report.junit_missing:
        click.echo(f"  no JUnit from `{missing.command}`: the gate goes by its exit code only.")
        click.echo(f"    to get JUnit: {missing.hint}")
    for lint in report.preexisting_lint:
        click.echo(
            f"  lint already fails on the untouched code: `{lint.command}` (pre-existing: "
            "left to you; the tests decide)"
        )
    prompt = out / "first-prompt.md"
    if prompt.exists():
        click.echo("\nFirst prompt the model would get:\n")
        click.echo(prompt.read_text(encoding="utf-8"))
    if rnd is None:
        verdict = "nothing ran"
    elif rnd.passed:
        verdict = "every command passed on the untouched code"
    else:
        verdict = (
            "the commands ran; what fails above is what the model would start from "
            "(the gate judges its change against it)"
        )
    click.echo(f"\nDry run checked: {verdict}.")
    click.echo(f"Report: {out / 'report.json'}; command logs: {out / 'logs'}")
    return 0


def describe(failure: Failure) -> str:
    """`id (file:line): first line of the message`, as far as they are known."""
    name = failure.id.raw_for("shown")
    text = name + (f" ({failure.where})" if failure.where else "")
    message = failure.message.raw_for("shown")
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    if first and message != name:
        text += f": {first[:200]}"
    return REDACTOR.redact(text)


def show_result(report: Report, out: Path) -> int:
    from codegen_ci.candidates import summary_line

    if line := summary_line(report):
        click.echo(f"candidates: {REDACTOR.redact(line)}")
    click.echo(f"status: {report.status}" + (f" ({report.reason})" if report.reason else ""))
    if report.reason == Reason.NO_CHANGE and report.error:
        click.echo(report.error)
    if report.branch:
        click.echo(f"branch: {report.branch} (commit {(report.commit or '')[:12]})")
    if report.pr_url:
        click.echo(f"pull request: {report.pr_url}")
    if line := proof_line(report):
        click.echo(for_terminal(REDACTOR.redact(line), one_line=True))
    for failure in (report.rounds[-1].failures if report.rounds else [])[:10]:
        if exit_code(report) != ExitCode.SUCCESS:
            click.echo(f"  FAIL {describe(failure)}")
    if report.status == Status.SUCCESS and report.removed_tests:  # allowed: protect_tests false
        gone = ", ".join(
            for_terminal(t.id, one_line=True) + f" ({t.how})" for t in report.removed_tests[:10]
        )
        gone = for_terminal(REDACTOR.redact(gone), one_line=True)
        click.echo(f"tests removed or skipped (validation.protect_tests: false): {gone}")
    click.echo(f"report: {out / 'report.json'}")
    sys.stdout.flush()
    return exit_code(report)
