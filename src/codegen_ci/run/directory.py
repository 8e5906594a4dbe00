"""A run's output directory and its `run.json`: the one module that writes, checks and reads
that file (what `resume` needs: the spec, the repository, the branch and base commit, the
worktree, and where the settings came from).

Files of a run directory that are bad are bad input (exit 2, a message naming the file), never
a traceback: `--output-dir` naming a file, a `run.json` that is not JSON or lacks a key, a
`report.json` or transcript that does not parse.

The run directory lives where confined commands cannot write (the sandbox), but `run.json` is
still only a file: `resume` re-resolves the settings that decide where the API key goes and
what runs (`SENSITIVE`) from the run's own sources (the spec file it was started with, the
repository's `.codegen.yml`, the environment and the original flags) and refuses a `run.json`
that disagrees, unless the user states the setting again on the command line (`--base-url`,
`--spec`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from codegen_ci.errors import InputError
from codegen_ci.report import Report
from codegen_ci.security import guarded_write
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.layers import deep_merge, load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git

T = TypeVar("T")
RUN_FILE = "run.json"
STATE_KEYS = ("spec", "repo", "run_id", "branch", "base_commit", "worktree")
SENSITIVE = (
    "model.base_url",
    "validation.setup",
    "validation.lint",
    "validation.test",
    "validation.network",
    "env_passthrough",
    "protected_paths",
)


# -- the directory --------------------------------------------------------------------------


def default_output_dir(root: Path, run_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / run_id
    return git.common_dir(root) / "codegen" / "runs" / run_id


def make_output_dir(out: Path) -> Path:
    """Create the output directory before anything else is made (worktree, branch), so a
    path that cannot be a directory stops the run with nothing left behind."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--output-dir {out} is not a directory (a file is in the way)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory {out}: {exc.strerror}") from None
    # The tool never makes a link there: one found was planted, and writing the run's files
    # through it would write wherever it points.
    planted = guarded_write.links_in(out)
    if planted:
        raise InputError(
            f"the output directory {out} holds a symlink ({planted[0]}); codegen-ci writes "
            "its outputs only into folders without links: choose a new or empty folder"
        )
    return out


def is_run_dir(run_dir: Path) -> bool:
    return (run_dir / RUN_FILE).is_file()


# -- run.json -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunState:
    """What `run.json` holds."""

    spec: Spec
    repo: Path
    run_id: str
    branch: str
    base_commit: str
    worktree: Path
    # where the settings came from (`sources`); empty for a task from an event
    sources: dict[str, Any] = field(default_factory=dict)

    def write(self, out: Path) -> None:
        data = {
            "spec": self.spec.model_dump(mode="json"),
            "repo": str(self.repo),
            "run_id": self.run_id,
            "branch": self.branch,
            "base_commit": self.base_commit,
            "worktree": str(self.worktree),
            "sources": dict(self.sources),
        }
        guarded_write.write_into(out / RUN_FILE, REDACTOR.dumps(data, indent=2))

    @classmethod
    def read(cls, run_dir: Path) -> RunState:
        """The run.json of `run_dir`, checked: `InputError` naming the file when it is not
        JSON, lacks a key, or holds a value of the wrong type."""
        path = run_dir / RUN_FILE
        data = _parse(path, lambda: json.loads(path.read_text(encoding="utf-8")))
        if not isinstance(data, dict):
            raise InputError(f"{path} is corrupt: expected a JSON object")
        missing = [key for key in STATE_KEYS if key not in data]
        wrong = [k for k in STATE_KEYS[1:] if k in data and not isinstance(data[k], str)]
        if missing or wrong:
            what = f"lacks {', '.join(missing)}" if missing else f"{', '.join(wrong)} not a string"
            raise InputError(f"{path} is corrupt: {what}")
        spec = _parse(path, lambda: Spec.model_validate(data["spec"]), what="its spec")
        found = data.get("sources")
        return cls(
            spec,
            Path(data["repo"]),
            data["run_id"],
            data["branch"],
            data["base_commit"],
            Path(data["worktree"]),
            found if isinstance(found, dict) else {},
        )


def settings_sources(spec_file: Path | None, flags: Mapping[str, Any]) -> dict[str, Any]:
    """What `run.json` records about where the settings came from."""
    return {"spec_file": str(spec_file.resolve()) if spec_file else None, "flags": dict(flags)}


def trusted_spec(
    saved: Spec,
    repo: Path,
    recorded: Mapping[str, Any],
    environ_layer: Mapping[str, Any],
    *,
    spec_file: Path | None = None,
    base_url: str | None = None,
) -> Spec:
    """The spec to resume with; `InputError` when `run.json` disagrees with its sources on a
    sensitive setting the command line does not restate."""
    raw_flags = recorded.get("flags")
    flags: dict[str, Any] = dict(raw_flags) if isinstance(raw_flags, dict) else {}
    if base_url:
        flags = deep_merge(flags, {"model": {"base_url": base_url}})
    repo_layer, _ = load_repo_config(repo)
    named = recorded.get("spec_file")
    source = spec_file or (Path(named) if isinstance(named, str) and named else None)
    if source is not None and source.is_file():
        spec_layer = load_layer_file(source, is_spec=True)
        reference = resolve_spec(environ_layer, repo_layer, spec_layer, flags, name=str(source))
    else:  # no spec file to go back to (an issue or comment task): the base URL at least
        url = deep_merge(repo_layer, flags).get("model", {}).get("base_url")
        reference = saved.model_copy(
            update={"model": saved.model.model_copy(update={"base_url": url})}
        )
    if spec_file is not None:
        return reference  # the user named the spec again: its settings are theirs
    differ = [key for key in SENSITIVE if _get(saved, key) != _get(reference, key)]
    unstated = [key for key in differ if not (key == "model.base_url" and base_url)]
    if unstated:
        details = "; ".join(
            f"{key}: run.json has {_get(saved, key)!r}, its sources give {_get(reference, key)!r}"
            for key in unstated
        )
        raise InputError(
            f"run.json does not match the run's own settings ({details}); refusing to resume. "
            "Give them again on the command line (--base-url URL, --spec FILE) to resume "
            "with them."
        )
    return saved.model_copy(update={"model": reference.model})


def _get(spec: Spec, dotted: str) -> Any:
    value: Any = spec
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


# -- the other files ------------------------------------------------------------------------


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
