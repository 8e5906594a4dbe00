"""`codegen-ci junit FILE... [--json] [--root DIR]`: show what the reflection step would see
(locations relative to `--root`, the repository the tests ran in; the current directory).

Exit codes: 0 every file parsed and no test failed or errored; 1 some test failed or errored;
2 a file is missing or could not be parsed (what did parse is still printed, and a broken
report outranks failing tests: the picture is incomplete, so the input is what is wrong).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from codegen_ci.gate.junit.parse import parse_files, render_text, summary_json

EXIT_OK = 0
EXIT_FAILING = 1
EXIT_BAD_INPUT = 2


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
        return EXIT_BAD_INPUT
    return EXIT_FAILING if result.failing() else EXIT_OK
