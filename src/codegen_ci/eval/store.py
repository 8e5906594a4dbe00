"""Finished work an eval keeps in its output directory, so a re-run there resumes.

Each check is written as it ends (`tasks/<commit>/check.json`), each model run too
(`runs/<configuration>/<commit>/result.json`, beside the run's `report.json`), each with a key:
a digest of everything its outcome depends on. A later eval with the same `--output-dir`
takes a result whose key matches instead of running it again: an interrupted eval goes on
where it stopped, and a check made once (`--check`, or an earlier eval with another model) is
reused by every model, since the check's key leaves the model settings out. What did not
finish (an interruption, an infrastructure error) is not written and runs again.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from codegen_ci.eval.history import Task
from codegen_ci.eval.judge import CheckResult
from codegen_ci.eval.shards import digest
from codegen_ci.security import guarded_write

CHECK_FILE = "check.json"
RESULT_FILE = "result.json"


def check_key(settings_digest: str, task: Task) -> str:
    return digest({"check": settings_digest, "commit": task.commit, "base": task.base})


def run_key(
    settings_digest: str, configuration: dict[str, Any], task: Task, check: CheckResult
) -> str:
    return digest(
        {
            "settings": settings_digest,
            "configuration": configuration,
            "commit": task.commit,
            "base": task.base,
            "text": task.text,
            "targets": check.targets,
            "passed_before": check.passed_before,
        }
    )


def save_check(where: Path, key: str, result: CheckResult) -> None:
    where.mkdir(parents=True, exist_ok=True)
    _write(where / CHECK_FILE, {"key": key, "result": asdict(result)})


def load_check(where: Path, key: str) -> CheckResult | None:
    data = _read(where / CHECK_FILE)
    if data is None or data.get("key") != key:
        return None
    try:
        return CheckResult(**data["result"])
    except (TypeError, KeyError):
        return None


def save_result(where: Path, key: str, fields: dict[str, Any]) -> None:
    _write(where / RESULT_FILE, {"key": key, **fields})


def load_result(where: Path, key: str) -> dict[str, Any] | None:
    """The saved verdict of a run (`resolved`, `why`, `error`, `exit_code`), when its key
    matches and its report is still there."""
    data = _read(where / RESULT_FILE)
    if data is None or data.get("key") != key or not (where / "report.json").is_file():
        return None
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    # a temporary name renamed into place: a reader never sees half a file
    guarded_write.write_into(path, json.dumps(data, indent=2) + "\n")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
