"""The coverage.py run runners/_python.py makes of a Python test command: `python -m
pytest`, `python -m unittest` and a bare `pytest` script (its shebang's interpreter), nothing
else."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.coverage_ask import python_command as coverage_command
from tests.helpers.coverage_ask import python_env as select_env

from codegen_ci.runners._python import ONE_PROCESS


def script(path: Path, shebang: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{shebang}\nimport sys\n")
    path.chmod(0o755)
    return path


def covered(tmp_path: Path, python: str, rest: str) -> str:
    """What the rewritten command reads as: `python` running the one-process coverage run of
    `rest`, its data and report in `tmp_path`."""
    return shlex.join(
        [
            "COVERAGE_CORE=sysmon",
            python,
            "-c",
            ONE_PROCESS,
            f"{tmp_path}/.coverage",
            f"{tmp_path}/coverage.xml",
            *shlex.split(rest),
        ]
    )


def test_python_m_pytest_runs_under_coverage_then_writes_cobertura(tmp_path: Path) -> None:
    command = coverage_command(
        "python3 -m pytest -q 'tests dir'", ["a b.py", "c.py"], tmp_path, tmp_path, {}
    )
    assert command == covered(
        tmp_path, "python3", "'--include=a b.py,c.py' -m pytest -q 'tests dir'"
    )


def test_python_m_unittest_runs_unittests_program_under_coverage(tmp_path: Path) -> None:
    """Through codegen_cov_select, which runs unittest's own program (and selects tests only
    where coverage.py has nothing but the C tracer)."""
    command = coverage_command(
        ".venv/bin/python -m unittest discover -s tests", ["calc.py"], tmp_path, tmp_path, {}
    )
    assert command == covered(
        tmp_path, ".venv/bin/python", "--include=calc.py -m codegen_cov_select discover -s tests"
    )


def test_a_bare_pytest_runs_its_script_with_the_shebangs_interpreter(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    pytest_script = script(bin_dir / "pytest", "/opt/py/bin/python3.11")
    env = {"PATH": str(bin_dir)}

    command = coverage_command("CI=1 X='a b' pytest -x tests", ["m.py"], tmp_path, tmp_path, env)

    assert command == "CI=1 X='a b' " + covered(
        tmp_path, "/opt/py/bin/python3.11", f"--include=m.py {pytest_script} -x tests"
    )


def test_one_interpreter_runs_the_tests_and_writes_the_report(tmp_path: Path) -> None:
    """ONE_PROCESS, run by this interpreter (which has coverage.py): the program's exit
    status, and the Cobertura report of the included file."""
    (tmp_path / "calc.py").write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    (tmp_path / "main.py").write_text("import sys\nfrom calc import f\nsys.exit(f(0))\n")
    command = coverage_command(f"{sys.executable} -m unittest", ["calc.py"], tmp_path, tmp_path, {})
    assert command is not None
    command = command.replace("-m codegen_cov_select", "main.py")
    env = select_env(os.environ, tmp_path / "tool", ["calc.py"])

    done = subprocess.run(
        command, shell=True, cwd=tmp_path, capture_output=True, text=True, env=env
    )

    assert done.returncode == 2, done.stderr
    report = (tmp_path / "coverage.xml").read_text()
    assert '<line number="3" hits="0"/>' in report and '<line number="4" hits="1"/>' in report


def test_a_pytest_script_in_the_worktree_is_found_there(tmp_path: Path) -> None:
    script(tmp_path / ".venv" / "bin" / "pytest", "/srv/venv/bin/python3")
    command = coverage_command(".venv/bin/pytest", ["m.py"], tmp_path, tmp_path, {"PATH": ""})
    assert command is not None and command.endswith(f"--include=m.py {tmp_path}/.venv/bin/pytest")


@pytest.mark.parametrize(
    "command",
    [
        "npm test",
        "tox",
        "make test",
        "python -m pytest && rm -rf /",
        "python -I -m pytest",
        "python -m mypy src",
        "pytest $ARGS",
        "pytest",  # not on PATH: no script, no interpreter
    ],
)
def test_other_commands_are_not_rewritten(tmp_path: Path, command: str) -> None:
    assert coverage_command(command, ["m.py"], tmp_path, tmp_path, {"PATH": ""}) is None


def test_the_coverage_runs_environment_loads_the_selection_into_pytest(tmp_path: Path) -> None:
    env = select_env({"PYTHONPATH": "src", "PYTEST_ADDOPTS": "-q"}, tmp_path, ["a.py", "b.py"])
    plugin_dir = tmp_path / "coverage_plugin"
    assert (plugin_dir / "codegen_cov_select.py").is_file()
    assert (plugin_dir / "codegen_cov_run.py").is_file()
    assert (plugin_dir / "vendor" / "slipcover" / "__init__.py").is_file()  # the tool's own
    assert env["PYTHONPATH"] == f"{plugin_dir}:src"
    assert env["PYTEST_ADDOPTS"] == "-q -p codegen_cov_select"
    assert env["CODEGEN_COV_SELECT"] == "a.py:b.py"
