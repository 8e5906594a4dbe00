"""A unittest suite's per-test results: `python -m unittest ARGS` runs as `python -m
codegen_unittest ARGS` (gate/codegen_unittest.py), the same interpreter, arguments, discovery
and tests, through unittest's own `main`, which also writes a JUnit report. So a round of a
unittest suite has totals and failing test ids (for the reflection and the base-commit
comparison) instead of an exit code alone, whether or not pytest is installed.

Which commands run so is the unittest runner's knowledge (runners/unittest.py: a command that is
exactly `<python> -m unittest ...`); anything else (a Makefile, `tox`, `python -I -m unittest`)
runs as written, and its JUnit stays unknown unless the runner writes some. This module is the
harness's side: the runner's file put where the command can read it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.runners.base import with_tool_path
from codegen_ci.runners.unittest import RUNNER, junit_command

__all__ = ["JUNIT_ENV", "RUNNER_SOURCE", "junit_command", "prepare"]

# The runner's file, copied into the tool's read-only folder; never imported here.
RUNNER_SOURCE = Path(__file__).with_name(f"{RUNNER}.py")
JUNIT_ENV = "CODEGEN_UNITTEST_JUNIT"


def prepare(env: Mapping[str, str], tool_dir: Path, report: Path) -> dict[str, str]:
    """The environment for one run through the runner: `tool_dir` (the tool's own, read-only
    to commands) gets `unittest_runner/codegen_unittest.py`, on PYTHONPATH; the report goes to
    `report` (in the command's fresh writable folder)."""
    runner_dir = tool_dir / "unittest_runner"
    runner_dir.mkdir(parents=True, exist_ok=True)
    runner = runner_dir / f"{RUNNER}.py"
    if not runner.is_file():
        shutil.copyfile(RUNNER_SOURCE, runner)
    out = with_tool_path(env, runner_dir)
    out[JUNIT_ENV] = str(report)
    return out
