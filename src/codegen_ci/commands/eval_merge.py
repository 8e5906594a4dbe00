"""`codegen-ci eval merge DIR...`: shards' outputs (each an `eval --shard K/N --output-dir DIR`)
joined into one `eval.json` and `eval.md`, as one eval over every task would have written them
(eval/merge.py); in Actions, `eval.md` also goes to the job summary.

Exit status: 2 the directories are not shards of one run, a shard is given twice, or one has no
`eval.json` (nothing written) · 3 a shard is missing, was interrupted or had an infrastructure
error · 1 a kept task was not resolved · 0 every kept task was resolved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from codegen_ci.errors import InputError
from codegen_ci.eval.merge import exit_code, merge
from codegen_ci.eval.results import markdown, write_json
from codegen_ci.publish.job_summary import job_summary
from codegen_ci.run.directory import make_output_dir
from codegen_ci.security import guarded_write
from codegen_ci.security.redact import REDACTOR


def merge_command(dirs: tuple[Path, ...], output_dir: Path) -> int:
    pieces = [(str(d), _read(d)) for d in dirs]
    doc = merge(pieces)
    out = make_output_dir(output_dir.resolve())
    write_json(doc, out)
    text = REDACTOR.redact(markdown(doc))
    guarded_write.write_into(out / "eval.md", text)
    job_summary(text)
    shards = doc["merged"]["shards"]
    click.echo(f"eval merge: {len(shards)} shard output(s), {len(doc['tasks'])} task(s)")
    for missing in doc["merged"]["missing"]:
        click.echo(f"eval merge: warning: missing {missing}", err=True)
    for c in doc["configurations"]:
        click.echo(f"{c['name']}: {c['resolved']}/{c['tasks']} resolved")
    click.echo(f"eval.json and eval.md: {out}")
    return exit_code(doc)


def _read(where: Path) -> dict[str, Any]:
    path = where / "eval.json" if where.is_dir() else where
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"eval merge: {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"eval merge: {path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"eval merge: {path}: not an eval.json")
    return data
