"""`codegen-ci init` on CI lines that change folder first (`cd tests/ && py.test`): the
interpreter init names is the repository's `.venv`, at its root, so from inside the folder it
is `../.venv/bin/python`, and `PYTHONPATH=src` is `../src`. Written from the root, the command
could not start (`/bin/sh: .venv/bin/python: not found`) and every run ended as a
configuration error. Modelled on jmespath/jmespath.py's workflow, where it was found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.spec.layers import load_layer_file


@pytest.fixture(autouse=True)
def plain_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def _workflow(repo: Path, *steps: dict[str, str]) -> None:
    folder = repo / ".github" / "workflows"
    folder.mkdir(parents=True)
    job = {"runs-on": "ubuntu-latest", "steps": [{"uses": "actions/checkout@v4"}, *steps]}
    doc = {"name": "Run Tests", "on": ["push"], "jobs": {"build": job}}
    (folder / "run-tests.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


def _venv(repo: Path) -> None:
    """The repository's own venv (the one init names), its interpreter this test's."""
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)


def _init(repo: Path) -> dict[str, list[str]]:
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    return load_layer_file(repo / ".codegen.yml", is_spec=False)["validation"]  # type: ignore[no-any-return]


def test_a_test_command_run_from_a_folder_names_the_venv_from_that_folder(tmp_path: Path) -> None:
    """jmespath: `cd tests/ && py.test --cov jmespath`, its venv at the root. The command init
    writes starts, from the repository's root as the gate runs it, and runs the tests."""
    (tmp_path / "jmespath").mkdir()
    (tmp_path / "jmespath" / "__init__.py").write_text("def search(): return 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_search.py").write_text(
        "import jmespath\n\ndef test_search():\n    assert jmespath.search() == 1\n"
    )
    _venv(tmp_path)
    _workflow(
        tmp_path,
        {"run": "pip install -r requirements.txt"},
        {"run": "cd tests/ && py.test -q"},
        {"run": "flake8 ."},
    )

    validation = _init(tmp_path)

    assert validation["test"] == ["cd tests && ../.venv/bin/python -m pytest -q"]
    # a linter at the root still leaves the venv in the repository out; one in a folder has none
    assert validation["lint"] == [".venv/bin/python -m flake8 --extend-exclude=.venv ."]
    run = subprocess.run(
        validation["test"][0],
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_deeper_folders_and_a_src_layout_are_seen_from_where_the_command_runs(
    tmp_path: Path,
) -> None:
    """`cd tests/unit && python -m pytest` in a src layout whose package is not installed:
    the interpreter is two folders up, and so is `src`."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("VALUE = 2\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1"\n')
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_value.py").write_text(
        "import pkg\n\ndef test_value():\n    assert pkg.VALUE == 2\n"
    )
    _venv(tmp_path)
    _workflow(tmp_path, {"run": "python -m pytest", "working-directory": "./tests/unit"})

    validation = _init(tmp_path)

    assert validation["test"] == [
        "cd tests/unit && PYTHONPATH=../../src ../../.venv/bin/python -m pytest"
    ]
    run = subprocess.run(
        validation["test"][0], shell=True, cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_folder_that_is_not_a_plain_path_keeps_the_interpreter_as_named(tmp_path: Path) -> None:
    """`cd $GITHUB_WORKSPACE/tests`: where that is cannot be known; the line keeps the root's
    form rather than a guess."""
    from codegen_ci.commands.init_checks import explicit, folder_of, seen_from

    assert folder_of("cd $GITHUB_WORKSPACE/tests && pytest") == ""
    assert folder_of("cd ./tests/ && pytest") == "tests"
    assert folder_of("cd . && pytest") == ""
    assert seen_from("tests", "python") == "python"  # on PATH: the same from anywhere
    assert seen_from("a/b", ".venv/bin/python") == "../../.venv/bin/python"
    assert (
        explicit("cd $GITHUB_WORKSPACE/tests && pytest", ".venv/bin/python")
        == "cd $GITHUB_WORKSPACE/tests && .venv/bin/python -m pytest"
    )
