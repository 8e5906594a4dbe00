"""The files of a run directory, read and made so that bad ones are bad input (exit 2, a
message naming the file), never a traceback: `--output-dir` naming a file, a `run.json` that
is not JSON or lacks a key, a `report.json` or transcript that does not parse."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from codegen_ci.errors import InputError
from codegen_ci.report import Report
from codegen_ci.spec.model import Spec

T = TypeVar("T")
STATE_KEYS = ("spec", "repo", "run_id", "branch", "base_commit", "worktree")


def make_output_dir(out: Path) -> Path:
    """Create the output directory before anything else is made (worktree, branch), so a
    path that cannot be a directory stops the run with nothing left behind."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--output-dir {out} is not a directory (a file is in the way)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory {out}: {exc.strerror}") from None
    return out


@dataclass(frozen=True)
class RunState:
    spec: Spec
    repo: Path
    run_id: str
    branch: str
    base_commit: str
    worktree: Path


def read_run_state(run_dir: Path) -> RunState:
    path = run_dir / "run.json"
    data = _parse(path, lambda: json.loads(path.read_text(encoding="utf-8")))
    if not isinstance(data, dict):
        raise InputError(f"{path} is corrupt: expected a JSON object")
    missing = [key for key in STATE_KEYS if key not in data]
    wrong = [k for k in STATE_KEYS[1:] if k in data and not isinstance(data[k], str)]
    if missing or wrong:
        what = f"lacks {', '.join(missing)}" if missing else f"{', '.join(wrong)} not a string"
        raise InputError(f"{path} is corrupt: {what}")
    spec = _parse(path, lambda: Spec.model_validate(data["spec"]), what="its spec")
    return RunState(spec, Path(data["repo"]), data["run_id"], data["branch"],
                    data["base_commit"], Path(data["worktree"]))  # fmt: skip


def read_report(run_dir: Path) -> Report:
    return _parse(run_dir / "report.json", lambda: Report.read(run_dir))


def read_transcript(path: Path, load: Callable[[Path], T]) -> T:
    return _parse(path, lambda: load(path))


def _parse(path: Path, read: Callable[[], T], *, what: str = "") -> T:
    try:
        return read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        where = f" ({what})" if what else ""
        raise InputError(f"{path} is corrupt{where}: {key}: {first['msg']}") from None
    except (ValueError, RecursionError, TypeError, AttributeError, KeyError) as exc:
        raise InputError(f"{path} is corrupt: {type(exc).__name__}: {exc}"[:500]) from None
