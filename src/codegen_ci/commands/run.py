"""`codegen-ci run SPEC` and `codegen-ci resume RUN_DIR`: a run, started or continued, and its
result shown.

A new run's worktree comes from `run_driver.prepare_worktree`; `resume` goes on in an
interrupted run's worktree, or makes a removed one again through the same
`run_driver.open_worktree`. The pipeline runs as every command runs it (`run_driver`), the run
directory's files are `run_dir.py`'s, several candidates of one run `run_candidates.py`'s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.prompt import Briefing, read_instructions
from codegen_ci.commands.publish_local import check_prerequisites
from codegen_ci.commands.run_dir import (
    RUN_FILE,
    RunState,
    default_output_dir,
    make_output_dir,
    read_report,
    read_transcript,
    settings_sources,
    trusted_spec,
)
from codegen_ci.commands.run_driver import (
    environment_layer,
    new_run_id,
    open_worktree,
    prepare_worktree,
    register_secrets,
    run_pipeline,
)
from codegen_ci.errors import InputError
from codegen_ci.publish.proof_text import proof_line
from codegen_ci.report import Failure, Report, Status
from codegen_ci.security.inert_text import for_terminal
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.layers import load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git
from codegen_ci.workspace.dependency_links import link_dependencies
from codegen_ci.workspace.git import trust_directory
from codegen_ci.workspace.private_dir import check_private
from codegen_ci.workspace.worktree import Worktree

EXIT_FAILED = 1


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
    out = make_output_dir((output_dir or default_output_dir(root, run_id)).resolve())
    register_secrets()
    multi = resolved.candidates.count > 1
    if multi and not dry_run:
        return _run_candidates(
            resolved, root, out, run_id, spec, flags, push=bool(push), pr=bool(pr)
        )
    worktree = prepare_worktree(root, resolved, run_id)
    # From the base commit, like the code the run starts from: not from the working tree.
    instructions = read_instructions(root, worktree.base_commit, resolved.instructions)
    report = run_pipeline(
        resolved,
        root,
        out,
        run_id,
        worktree,
        dry_run=dry_run,
        briefing=Briefing(instructions),
        sources=settings_sources(spec, flags),
    )
    if dry_run:
        if multi:
            from codegen_ci.commands.run_candidates import Plan

            plan = Plan(resolved, root, out, run_id, worktree.branch, worktree.base_commit)
            click.echo(plan.describe())
            click.echo(
                f"  each candidate: a whole run from {worktree.base_commit[:12]}, in "
                f"{out / 'candidates'}/<i>/; the chosen one's commit goes on "
                f"{resolved.git.branch.replace('{slug}', resolved.slug)}"
            )
            click.echo(
                "  budgets are for all candidates together; choice: passes the gate, "
                "fewer new failures, passes lint, fewer lines changed, lower billed "
                "cost, earlier\n"
            )
        return show_dry_run(report, out)
    if report.branch and (push or pr):
        from codegen_ci.commands.publish_local import publish_branch

        publish_branch(root, report, resolved, open_pr=bool(pr))
        report.write(out)
    return show_result(report, out)


def _run_candidates(
    resolved: Spec,
    root: Path,
    out: Path,
    run_id: str,
    spec: Path,
    flags: dict[str, Any],
    *,
    push: bool,
    pr: bool,
) -> int:
    from codegen_ci.commands import run_candidates

    # From the base commit, like the code the run starts from: not from the working tree.
    base = git.git(
        ["rev-parse", "--verify", f"{resolved.git.base or 'HEAD'}^{{commit}}"], root
    ).strip()
    instructions = read_instructions(root, base, resolved.instructions)
    report = run_candidates.start(
        resolved,
        root,
        out,
        run_id,
        briefing=Briefing(instructions),
        sources=settings_sources(spec, flags),
    )
    if report.branch and (push or pr):
        from codegen_ci.commands.publish_local import publish_branch

        publish_branch(root, report, resolved, open_pr=pr)
        report.write(out)
    return show_result(report, out)


def resume_command(
    run_dir: Path, spec_file: Path | None = None, base_url: str | None = None
) -> int:
    """Continue a stopped (interrupted) or failed run with its spec, worktree or branch, and
    transcript. A run that already succeeded has nothing to resume. Sensitive settings in
    run.json must match the run's sources unless restated (run_dir.py). A multi-candidate
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


def resume_run(out: Path, spec_file: Path | None, base_url: str | None) -> Report:
    """Continue one run (a whole run, or one attempt of a multi-candidate run)."""
    from codegen_ci.commands import run_candidates

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
    if run_candidates.is_multi(out.parent.parent):
        # One attempt of a multi-candidate run: its model is the attempt's own.
        spec = spec.model_copy(
            update={"model": spec.model.model_copy(update={"name": state.spec.model.name})}
        )
    report = read_report(out)
    if report.status == Status.SUCCESS:
        raise InputError(f"the run in {out} already succeeded; nothing to resume")
    if not state.repo.is_dir():
        raise InputError(f"{state_file}: the repository {state.repo} is not there any more")
    root = state.repo
    trust_directory(root)  # the repository the run was started on (workspace/git.py)
    conversation = read_transcript(out / "transcript.jsonl", Conversation.load)
    register_secrets()
    worktree = reopen_worktree(root, spec, state, report)
    conversation.resume_note(report.rounds[-1:])
    report.finish(Status.ERROR)
    return run_pipeline(
        spec,
        root,
        out,
        state.run_id,
        worktree,
        report=report,
        conversation=conversation,
        sources=state.sources,
    )


def reopen_worktree(root: Path, spec: Spec, state: RunState, report: Report) -> Worktree:
    """The worktree `resume` goes on in: an interrupted run's, where it was; else (a failed
    run's worktree was removed, its folder too, or reused by someone else) a new one, made as
    a new run's is, on the run's branch as it is when that holds a commit, else on a new one
    from the run's base commit."""
    tree_path = Path(report.worktree) if report.worktree else state.worktree
    if not (tree_path.exists() or tree_path.is_symlink()):
        git.git(["worktree", "prune"], root, check=False)  # the removed one still has the branch
        return open_worktree(
            root,
            spec,
            tree_path.name,
            state.branch,
            state.base_commit,
            keep_branch=git.branch_exists(root, state.branch),
            artifacts=report.artifacts,
        )
    # An interrupted run's worktree: still in the run's private folder, and still ours.
    check_private(tree_path.parent)
    if tree_path.is_symlink() or not tree_path.is_dir():
        raise InputError(f"{tree_path} is not the run's worktree (not a directory)")
    trust_directory(tree_path)
    return Worktree(
        root,
        tree_path,
        state.branch,
        state.base_commit,
        tuple(spec.protected_paths),
        artifacts=set(report.artifacts),
        links=link_dependencies(root, tree_path),
        named=tuple(spec.outputs),
    )


# -- the result -----------------------------------------------------------------------------


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
            click.echo(
                f"  tests: {t.total} total, {t.passed} passed, {t.failed} failed, "
                f"{t.errors} errors, {t.skipped} skipped"
            )
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
        click.echo(
            f"  lint already fails on the untouched code: `{lint.command}` (pre-existing: "
            "left to you; the tests decide)"
        )
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
    if line := proof_line(report):
        click.echo(for_terminal(REDACTOR.redact(line), one_line=True))
    for failure in (report.rounds[-1].failures if report.rounds else [])[:10]:
        if report.status != Status.SUCCESS:
            click.echo(f"  FAIL {describe(failure)}")
    click.echo(f"report: {out / 'report.json'}")
    sys.stdout.flush()
    return 0 if report.status == Status.SUCCESS else EXIT_FAILED
