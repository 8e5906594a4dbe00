"""A test command run from a folder (`cd tests && python -m pytest`, as init writes a CI step's
`working-directory`) gets what a plain one gets, through the CLI with the scripted model and
real pytest: its failing round's re-run names the failing test's node id (relative to the
folder), and its changed lines are measured (the coverage run in the folder, its report's
paths read back as the change's).

One run for both (each is a pytest process or two more per run). `-n 0` (xdist loaded by `-p`,
as the run disables plugin autoload): xdist on the command line, so the re-run is the
rewritten command (pytest_commands.py's `targeted_command`), not the codegen_first plugin,
which takes the command whole and needs no rewriting."""

from __future__ import annotations

import sys
from pathlib import Path

from eco_projects import CALC_OPS_FIXED, CALC_TEST, calc_repo, write_spec
from gate_repos import commands, reflections, run_cli
from sample_repo import SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

OPS_WRONG = "def add(a, b):\n    return a * b\n"
# a pytest-style test beside unittest's, in the same file
TEST_OPS = CALC_TEST + "\n\ndef test_other():\n    assert True\n"
# PYTHONPATH set as init writes it for a src layout (`PYTHONPATH=../src`): the tool's folders
# (the coverage run's codegen_cov_run) still reach the interpreter (base.py's keep_tool_paths)
PYTHON = f"PYTHONPATH=.. {sys.executable}"
COMMAND = f"cd tests && {PYTHON} -m pytest -q -p no:cacheprovider -p xdist.plugin -n 0"


def folder_repo(tmp: Path) -> SampleRepo:
    return calc_repo(tmp, {"tests/test_ops.py": TEST_OPS})


def write(content: str) -> Reply:
    return Reply(tool_calls=[call("write_file", path="calc/ops.py", content=content)])


def test_a_command_run_from_a_folder_is_rerun_targeted_and_its_changed_lines_measured(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = folder_repo(tmp_path)
    model_env.add(write(OPS_WRONG), Reply("First try."), write(CALC_OPS_FIXED), Reply("Fixed."))
    validation = {"test": [COMMAND], "timeout": 120, "proof": {"reruns": 0}}
    spec = write_spec(repo, proof=True, task="add must add.", validation=validation)

    code, output, out, report = run_cli(repo, spec)

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 2)
    # round 2: the failing test alone, by its node id relative to `tests/`, then the suite
    targeted, whole = commands(report, 2)
    assert targeted["targeted"] and not whole["targeted"]
    assert targeted["command"] == f"{COMMAND} test_ops.py::AddTest::test_add"
    assert whole["command"] == COMMAND
    log = (out / "logs" / "round-2-02-test.log").read_text()
    assert "1 passed" in log, log
    # the changed lines: the fix run by the test, sub's body by none, named as the change is
    assert report["proof"]["changed_lines"] == {
        "measured": True,
        "covered": 2,  # `return a + b`, and `def sub` (run at import)
        "total": 4,
        "uncovered": ["calc/ops.py:6-7"],
        "reason": "",
    }, report["proof"]
    # the test's file as the repository names it, though pytest, rooted in tests/, names it
    # from there (gate/junit/capture.py's `from_folder`)
    [proving] = report["proof"]["fail_to_pass"]
    assert (proving["id"], proving["file"]) == ("test_ops.AddTest::test_add", "tests/test_ops.py")
    assert "tests/test_ops.py:8" in reflections(model_env)[0]
    coverage_log = (out / "coverage" / "logs" / "coverage.log").read_text()
    assert "2 passed" in coverage_log, coverage_log
