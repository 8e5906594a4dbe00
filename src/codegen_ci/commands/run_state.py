"""What `resume` may trust in a run directory's `run.json`.

The run directory lives where confined commands cannot write (the sandbox), but `run.json` is
still only a file: `resume` re-resolves the settings that decide where the API key goes and
what runs (`SENSITIVE`) from the run's own sources (the spec file it was started with, the
repository's `.codegen.yml`, the environment and the original flags) and refuses a `run.json`
that disagrees, unless the user states the setting again on the command line (`--base-url`,
`--spec`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codegen_ci.errors import InputError
from codegen_ci.spec.layers import deep_merge, load_layer_file, load_repo_config, resolve_spec
from codegen_ci.spec.model import Spec

SENSITIVE = ("model.base_url", "validation.setup", "validation.lint", "validation.test",
             "validation.network", "env_passthrough", "protected_paths")  # fmt: skip


def sources(spec_file: Path | None, flags: Mapping[str, Any]) -> dict[str, Any]:
    """What `run.json` records about where the settings came from."""
    return {"spec_file": str(spec_file.resolve()) if spec_file else None, "flags": dict(flags)}


def recorded(run_dir: Path) -> dict[str, Any]:
    """The `sources` a run directory's run.json recorded (empty when it has none)."""
    try:
        data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get("sources") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}


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
        reference = saved.model_copy(update={"model": saved.model.model_copy(
            update={"base_url": url})})  # fmt: skip
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
