"""What one test run on the base commit needs and tells (the baseline, gate/baseline.py):
its environment, its record, and whether pytest collected the whole suite."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.report import CommandResult
from codegen_ci.workspace.proc import ProcResult


def base_env(env: Mapping[str, str], tree: Path) -> dict[str, str]:
    """`env` for a run in the base `tree`. An editable install (`pip install -e .` in setup)
    points imports at the agent's worktree; put the base tree's own code first so the base run
    tests the base code."""
    out = dict(env)
    paths = [str(tree / "src")] if (tree / "src").is_dir() else []
    paths += [str(tree), *filter(None, [out.get("PYTHONPATH")])]
    out["PYTHONPATH"] = os.pathsep.join(paths)
    return out


def collected_everything(result: ProcResult) -> bool:
    """A pytest run that ended normally (passed, failed, or nothing selected) collected
    the whole suite; collection errors end with exit 2, a timeout with none."""
    return not result.timed_out and result.exit_code in (0, 1, 5)


def base_record(command: str, result: ProcResult, junit: JUnitResult) -> CommandResult:
    """The base run as a `CommandResult`, for the usability check (gate/config_check.py)."""
    return CommandResult(command=command, kind="test", exit_code=result.exit_code,
                         duration_s=result.duration_s, timed_out=result.timed_out,
                         output_path=str(result.output_path),
                         junit_tests=len(junit.cases) if junit.files else None)  # fmt: skip
