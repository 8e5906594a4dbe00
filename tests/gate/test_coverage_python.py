"""The coverage.py run gate/coverage_python.py makes of a Python test command: `python -m
pytest`, `python -m unittest` and a bare `pytest` script (its shebang's interpreter), nothing
else."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.gate.coverage_python import coverage_command, runs_pytest, select_env


def script(path: Path, shebang: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{shebang}\nimport sys\n")
    path.chmod(0o755)
    return path


def test_python_m_pytest_runs_under_coverage_then_writes_cobertura(tmp_path: Path) -> None:
    command = coverage_command(
        "python3 -m pytest -q 'tests dir'", ["a b.py", "c.py"], tmp_path, tmp_path, {}
    )
    assert command == (
        f"COVERAGE_CORE=sysmon python3 -m coverage run --data-file={tmp_path}/.coverage "
        "'--include=a b.py,c.py' -m pytest -q 'tests dir'; status=$?; "
        f"python3 -m coverage xml -q --data-file={tmp_path}/.coverage -o {tmp_path}/coverage.xml; "
        "exit $status"
    )


def test_python_m_unittest_runs_unittest_itself_under_coverage(tmp_path: Path) -> None:
    command = coverage_command(
        ".venv/bin/python -m unittest discover -s tests", ["calc.py"], tmp_path, tmp_path, {}
    )
    assert command is not None
    assert command.startswith(
        "COVERAGE_CORE=sysmon .venv/bin/python -m coverage run "
        f"--data-file={tmp_path}/.coverage --include=calc.py -m unittest discover -s tests; "
    )


def test_a_bare_pytest_runs_its_script_with_the_shebangs_interpreter(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    pytest_script = script(bin_dir / "pytest", "/opt/py/bin/python3.11")
    env = {"PATH": str(bin_dir)}

    command = coverage_command("CI=1 pytest -x tests", ["m.py"], tmp_path, tmp_path, env)

    assert command is not None
    assert command.startswith(
        "CI=1 COVERAGE_CORE=sysmon /opt/py/bin/python3.11 -m coverage run "
        f"--data-file={tmp_path}/.coverage --include=m.py {pytest_script} -x tests; "
    )
    assert "/opt/py/bin/python3.11 -m coverage xml" in command


def test_a_pytest_script_in_the_worktree_is_found_there(tmp_path: Path) -> None:
    script(tmp_path / ".venv" / "bin" / "pytest", "/srv/venv/bin/python3")
    command = coverage_command(".venv/bin/pytest", ["m.py"], tmp_path, tmp_path, {"PATH": ""})
    assert command is not None and f"{tmp_path}/.venv/bin/pytest;" in command


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


def test_only_pytest_runs_get_the_selection_plugin(tmp_path: Path) -> None:
    assert runs_pytest("python -m pytest -q") and runs_pytest("X=1 .venv/bin/pytest")
    assert not runs_pytest("python -m unittest") and not runs_pytest("go test ./...")
    env = select_env({"PYTHONPATH": "src", "PYTEST_ADDOPTS": "-q"}, tmp_path, ["a.py", "b.py"])
    plugin_dir = tmp_path / "coverage_plugin"
    assert (plugin_dir / "codegen_cov_select.py").is_file()
    assert env["PYTHONPATH"] == f"{plugin_dir}:src"
    assert env["PYTEST_ADDOPTS"] == "-q -p codegen_cov_select"
    assert env["CODEGEN_COV_SELECT"] == "a.py:b.py"
