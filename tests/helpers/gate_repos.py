"""Helpers for the validation-gate tests: variations of the sample repository (committed on
its `main`, the run's base) and readers for what a run left behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sample_repo import SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import ScriptedModelServer

VERSION = "src/semver/version.py"
TEST_FILE = "tests/test_version.py"
BUG_ID = "tests.test_version::test_bump_minor_resets_patch"
RUFF = str(Path(sys.executable).parent / "ruff")

LEGACY_TEST = """\
def test_legacy_formatting():
    assert "{:>4}".format(7) == "7   ", "legacy padding was never right"
"""

MANY_FAILURES_TEST = """\
import pytest


@pytest.mark.parametrize("n", range(500))
def test_many(n):
    pytest.fail(f"generated failure number {n}: " + "a long explanation " * 60)
"""

NOISY_CHECK = """\
import os, sys
print("HEAD-MARKER check starting in", os.getcwd())
for n in range(3000):
    print(f"filler line {n} took 0.{n % 10}3s")
print("TAIL-MARKER 7 problems found")
sys.exit(1)
"""

HOSTILE_REPORTS = """\
from pathlib import Path
out = Path("reports")
out.mkdir(exist_ok=True)
(out / "a-valid.xml").write_text(
    '<testsuite name="s"><testcase classname="checks" name="test_real">'
    '<failure message="real failure">boom at checks.py:3</failure></testcase></testsuite>'
)
(out / "b-bomb.xml").write_text(
    '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa">'
    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><testsuite>&b;</testsuite>'
)
(out / "c-truncated.xml").write_text('<testsuite name="s"><testcase name="x">')
raise SystemExit(1)
"""


def commit_files(repo: SampleRepo, files: dict[str, str], message: str = "more") -> None:
    """Commit `files` on main (the run's base)."""
    repo.commit(files, message)


def run_cli(repo: SampleRepo, spec: Path, *args: str) -> tuple[int, str, Path, dict[str, Any]]:
    """`codegen-ci run` of `spec` in `repo` (`args`: more options): the exit code, the output,
    the output directory and report.json ({} when none was written)."""
    out = repo.tmp / "out"  # outside the repository, as $RUNNER_TEMP is in Actions
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *args]
    )
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return result.exit_code, result.output, out, report


def reflections(server: ScriptedModelServer) -> list[str]:
    """The harness's reflection messages, in order, as the model received them."""
    found: list[str] = []
    for request in server.tool_requests:
        for message in request["messages"]:
            content = message.get("content") or ""
            is_reflection = message["role"] == "user" and content.startswith("Validation round")
            if is_reflection and content not in found:
                found.append(content)
    return found


def commands(report: dict[str, Any], iteration: int) -> list[dict[str, Any]]:
    return report["rounds"][iteration - 1]["commands"]  # type: ignore[no-any-return]


def full_suite_runs(report: dict[str, Any]) -> int:
    return sum(
        1
        for rnd in report["rounds"]
        for c in rnd["commands"]
        if c["kind"] == "test" and not c["targeted"] and not c["skipped"]
    )


def failure(report: dict[str, Any], test_id: str, iteration: int = -1) -> dict[str, Any]:
    rnd = report["rounds"][iteration]
    return next(f for f in rnd["failures"] if f["id"] == test_id)
