"""`codegen-ci validate SPEC...` and `codegen-ci schema`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from codegen_ci.errors import SpecError
from codegen_ci.spec.layers import REPO_CONFIG_NAME, json_schema, load_layer_file

EXIT_BAD_INPUT = 2


def validate_command(specs: tuple[Path, ...]) -> int:
    """Check every file; report every problem of every file, then exit 2 if any."""
    bad = 0
    for path in specs:
        is_config = path.name in (REPO_CONFIG_NAME, ".codegen.yaml")
        try:
            load_layer_file(path, is_spec=not is_config)
        except SpecError as exc:
            bad += 1
            for problem in exc.problems:
                click.echo(f"error: {problem}", err=True)
            continue
        click.echo(f"ok: {path}")
    if bad:
        click.echo(f"{bad} of {len(specs)} file(s) invalid", err=True)
        return EXIT_BAD_INPUT
    return 0


def schema_command() -> int:
    click.echo(json.dumps(json_schema(), indent=2))
    return 0
