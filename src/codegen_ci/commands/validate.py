"""The commands that read files and report, running nothing: `codegen-ci validate SPEC...`,
`codegen-ci schema`, and `codegen-ci junit FILE... [--json] [--root DIR]`.

`junit` shows what the reflection step would see (locations relative to `--root`, the
repository the tests ran in; the current directory). Its exit codes: 0 every file parsed and
no test failed or errored; 1 some test failed or errored; 2 a file is missing or could not be
parsed (what did parse is still printed, and a broken report outranks failing tests: the
picture is incomplete, so the input is what is wrong).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from codegen_ci.errors import ExitCode, SpecError
from codegen_ci.gate.junit.parse import parse_files, render_text, summary_json
from codegen_ci.spec.layers import REPO_CONFIG_NAME, deep_merge, json_schema, load_layer_file


def validate_command(specs: tuple[Path, ...]) -> int:
    """Check every file; report every problem of every file, then exit 2 if any."""
    bad = 0
    for path in specs:
        is_config = path.name in (REPO_CONFIG_NAME, ".codegen.yaml")
        try:
            layer = load_layer_file(path, is_spec=not is_config)
        except SpecError as exc:
            bad += 1
            for problem in exc.problems:
                click.echo(f"error: {problem}", err=True)
            continue
        if missing := _no_tests(path, layer, is_config):
            fatal, text = missing
            click.echo(f"{'error' if fatal else 'warning'}: {text}", err=True)
            if fatal:
                bad += 1
                continue
        click.echo(f"ok: {path}")
    if bad:
        click.echo(f"{bad} of {len(specs)} file(s) invalid", err=True)
        return ExitCode.INPUT
    return ExitCode.SUCCESS


def _no_tests(path: Path, layer: dict[str, Any], is_config: bool) -> tuple[bool, str] | None:
    """No test command where a run needs one ("no test, no success"): an error in a
    `.codegen.yml`, and in a spec whose repository's `.codegen.yml` has none either; a warning
    for a spec outside any repository with a `.codegen.yml` (the repository it runs on may
    supply the tests)."""
    layers = [layer]
    repo_config = None if is_config else _repo_config_for(path)
    if repo_config is not None:
        try:
            layers.insert(0, load_layer_file(repo_config, is_spec=False))
        except SpecError:
            return None  # reported when that file is validated itself
    validation = deep_merge(*layers).get("validation") or {}
    if validation.get("test") or validation.get("allow_no_tests"):
        return None
    fatal = is_config or repo_config is not None
    where = f" (nor in {repo_config})" if repo_config else ""
    then = "a run ends" if fatal else "unless the repository's .codegen.yml has one, a run ends"
    return fatal, (
        f"{path}: validation.test: no test command{where}; {then} as a "
        "configuration error (exit 2): a gate that runs no test cannot tell a fix "
        "from a break. Add the repository's test command, or set "
        "validation.allow_no_tests: true"
    )


def _repo_config_for(spec: Path) -> Path | None:
    """The `.codegen.yml` of the git repository `spec` sits in, if any."""
    for folder in spec.resolve().parents:
        for name in (REPO_CONFIG_NAME, ".codegen.yaml"):
            if (folder / name).is_file():
                return folder / name
        if (folder / ".git").exists():
            return None
    return None


def schema_command() -> int:
    click.echo(json.dumps(json_schema(), indent=2))
    return 0


def junit_command(files: list[Path], as_json: bool, root: Path = Path()) -> int:
    result = parse_files(files, root=root.resolve())
    if as_json:
        click.echo(json.dumps(summary_json(result), indent=2))
        # stdout stays pure JSON; a person still sees which files were broken.
        for problem in result.problems:
            click.echo(f"codegen-ci: error: {problem}", err=True)
    else:
        click.echo(render_text(result))
    if result.problems:
        return ExitCode.INPUT
    return ExitCode.FAILED if result.failing() else ExitCode.SUCCESS
