"""The `codegen-ci` click group. Each command is a function in `codegen_ci.commands` (see its
`__init__`) returning an exit code; errors become exit codes here, in one place. Command
modules are imported lazily so `--help`, `validate` and `junit` start without loading openai or
github.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from codegen_ci import __version__
from codegen_ci.errors import CodegenError, ExitCode


def _invoke(func: Callable[..., int], **kwargs: Any) -> None:
    """Run a command; everything it prints (progress, echoes, logs, the error message)
    passes `for_terminal`: text from outside carries no control to the terminal."""
    from codegen_ci.security.inert_text import guarded_streams

    with guarded_streams():
        try:
            code = func(**kwargs)
        except CodegenError as exc:
            click.echo(f"codegen-ci: error: {exc.message}", err=True)
            code = exc.exit_code
        except KeyboardInterrupt:
            click.echo("codegen-ci: interrupted", err=True)
            code = ExitCode.KEYBOARD
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codegen-ci")
def cli() -> None:
    """Turn a task into a tested commit or pull request.

    An LLM edits the repository; the repository's own lint and test commands decide.
    """


@cli.command()
@click.argument("spec", type=click.Path(path_type=Path))
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=".",
    help="Repository to work on (default: current directory).",
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where report.json, transcript.jsonl and diff.patch go.",
)
@click.option("--model", default=None, help="Model name (overrides spec and CODEGEN_MODEL).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint URL.")
@click.option(
    "--max-iterations", type=click.IntRange(1, 50), default=None, help="Validation rounds."
)
@click.option("--push", is_flag=True, default=None, help="Push the branch to origin.")
@click.option("--pr", is_flag=True, default=None, help="Push and open a pull request.")
@click.option(
    "--candidates",
    type=click.IntRange(1, 16),
    default=None,
    help="Attempts at most (spec `candidates.count`); the repository's tests choose.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Run the checks once and show the first prompt; no model call, no commit.",
)
def run(**kwargs: Any) -> None:
    """Run one task from a YAML SPEC."""
    from codegen_ci.commands.run import run_command

    _invoke(run_command, **kwargs)


@cli.command()
@click.argument("specs", nargs=-1, required=True)
@click.option("--concurrency", type=click.IntRange(1, 32), default=2, help="Specs at once.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="One sub-directory per spec goes here (default: .git/codegen/batches/<batch id>/).",
)
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=".",
    help="Repository to work on (default: current directory).",
)
@click.option("--matrix", is_flag=True, help="Print a GitHub Actions matrix and run nothing.")
@click.option(
    "--candidates",
    type=click.IntRange(1, 16),
    default=None,
    help="Attempts at most per spec (`candidates.count`); the repository's tests choose.",
)
def batch(**kwargs: Any) -> None:
    """Run many specs (directories or globs); one branch and one report per spec.

    A directory contributes its own *.yaml and *.yml files (not sub-directories', and never
    .codegen.yml); a glob such as 'specs/**/*.yaml' expands as in the shell. Every spec is
    checked before anything runs. --matrix prints {"include": [{"spec", "title", "slug"}]}
    on one line for a GitHub Actions matrix, and runs nothing.

    \b
    Exit status (the first that applies):
      2  an argument matches no spec, or a spec is invalid (nothing ran)
      1  a spec failed (the others still ran)
      3  an infrastructure error or an interruption, and no spec failed
      0  every spec succeeded
    """
    from codegen_ci.commands.batch import batch_command

    _invoke(batch_command, **kwargs)


@cli.group(name="eval", invoke_without_command=True)
@click.option(
    "--from-history",
    type=click.IntRange(1, 10_000),
    default=None,
    metavar="N",
    help="Take tasks from the last N first-parent commits of HEAD.",
)
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=".",
    help="Repository whose history is used (default: current directory).",
)
@click.option("--model", multiple=True, help="Model to measure; repeat for one row per model.")
@click.option(
    "--candidates",
    type=click.IntRange(1, 16),
    multiple=True,
    metavar="K",
    help="Attempts per task (escalate: the next only when the gate failed); repeat for one "
    "row per model and K (default: the settings' candidates.count).",
)
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint URL.")
@click.option(
    "--spec",
    "spec_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Settings (the .codegen.yml schema) on top of the repository's .codegen.yml.",
)
@click.option("--check", "check_only", is_flag=True, help="Only check the tasks (no model call).")
@click.option("--concurrency", type=click.IntRange(1, 32), default=1, help="Tasks at once.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where eval.json, eval.md and every run's report go "
    "(default: .git/codegen/evals/<eval id>/); a re-run with the same directory resumes.",
)
@click.option(
    "--shard",
    default=None,
    metavar="K/N",
    help="Run only shard K of N: the tasks whose commit falls in it (the same split on every "
    "machine); `eval merge` joins the shards' outputs.",
)
@click.pass_context
def eval_(ctx: click.Context, /, **kwargs: Any) -> None:
    """Measure models on the repository's own history.

    Each of the last N first-parent commits that changed both source and test files is a
    task: start from its parent with its test changes, make its changed tests pass. A task
    is kept when those tests fail there and pass with the commit's own change (--check runs
    only that). Never pushes; the checkout and its branches are left alone.

    \b
    Exit status:
      2  bad input (nothing ran)
      3  an infrastructure error (model service, git) or an interruption
      1  a kept task was not resolved
      0  every kept task was resolved

    `codegen-ci eval merge DIR...` joins the outputs of `--shard` runs.
    """
    if ctx.invoked_subcommand is not None:
        return
    if kwargs["from_history"] is None:
        raise click.UsageError("Missing option '--from-history'.", ctx)
    from codegen_ci.commands.eval import eval_command

    _invoke(eval_command, **kwargs)


@eval_.command(name="merge")
@click.argument(
    "dirs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, file_okay=True)
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("eval-merged"),
    show_default=True,
    help="Where the merged eval.json and eval.md go.",
)
def eval_merge(dirs: tuple[Path, ...], output_dir: Path) -> None:
    """Join the outputs of `eval --shard K/N` runs into one eval.json and eval.md.

    The directories must be shards of one run (the same history, settings and number of
    shards); each configuration's shards are joined into one row.

    \b
    Exit status:
      2  not shards of one run, or a shard given twice (nothing written)
      3  a shard missing, interrupted, or with an infrastructure error
      1  a kept task was not resolved
      0  every kept task was resolved
    """
    from codegen_ci.commands.eval_merge import merge_command

    _invoke(merge_command, dirs=dirs, output_dir=output_dir)


@cli.command()
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(specs: tuple[Path, ...]) -> None:
    """Check specs and .codegen.yml files against the schema."""
    from codegen_ci.commands.validate import validate_command

    _invoke(validate_command, specs=specs)


@cli.command()
def schema() -> None:
    """Print the JSON Schema of the spec."""
    from codegen_ci.commands.validate import schema_command

    _invoke(schema_command)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    default=".",
    show_default=True,
    help="The repository the tests ran in: locations are shown relative to it.",
)
def junit(files: tuple[Path, ...], as_json: bool, root: Path) -> None:
    """Parse JUnit XML reports and print what the reflection step would see."""
    from codegen_ci.commands.validate import junit_command

    _invoke(junit_command, files=list(files), as_json=as_json, root=root)


@cli.command()
def action() -> None:
    """Entrypoint for GitHub Actions: read the event and inputs, run, publish."""
    from codegen_ci.commands.action import action_command

    _invoke(action_command)


@cli.command()
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--spec",
    "spec_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Resume with this spec's settings (instead of the recorded run's).",
)
@click.option("--base-url", help="Resume against this model endpoint.")
def resume(run_dir: Path, spec_file: Path | None, base_url: str | None) -> None:
    """Continue a stopped or failed run from its output directory."""
    from codegen_ci.commands.run import resume_command

    _invoke(resume_command, run_dir=run_dir, spec_file=spec_file, base_url=base_url)


@cli.command()
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option(
    "--workflows",
    multiple=True,
    metavar="issue,comment,dispatch,schedule,review,ci-fix",
    help="Example workflows to add under .github/workflows/ (comma-separated or repeated).",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(**kwargs: Any) -> None:
    """Write a starter .codegen.yml (commands detected from the repository)."""
    from codegen_ci.commands.init import init_command

    _invoke(init_command, **kwargs)


# Commands that run a model's shell commands; they re-execute without secrets in their
# start-up environment (see security/safe_env.py).
MODEL_COMMANDS = {"run", "resume", "batch", "action", "eval"}


def main() -> None:
    from codegen_ci.errors import GitError
    from codegen_ci.security import safe_env
    from codegen_ci.workspace.git import git_binary

    safe_env.restore_secrets()
    with contextlib.suppress(GitError):
        git_binary()  # resolved once, at start-up, before any command of a model ran
    args = sys.argv[1:]
    if args and args[0] in MODEL_COMMANDS and "--help" not in args and "-h" not in args:
        safe_env.reexec_without_secrets(args)
    cli(prog_name="codegen-ci")
