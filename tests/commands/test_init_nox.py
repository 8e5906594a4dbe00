"""CI's `nox -s SESSION` as the commands its sessions run (commands/init_nox.py): init reads
noxfile.py (never runs it), writes each session's `session.run` commands with the repository's
interpreter, and says which sessions and commands it left out and why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from codegen_ci.cli import cli
from codegen_ci.commands.init_nox import nox_sessions, sessions_named
from codegen_ci.spec.layers import load_layer_file

# pypa/packaging at 053c8846 (2026-11): noxfile.py's sessions, trimmed to the statements init
# reads (docstrings, the argparse of `tests` and the downstream projects' table cut), with
# .pre-commit-config.yaml's ruff hooks and the `run:` lines of .github/workflows/test.yml and
# lint.yml.
NOXFILE = """\
import argparse
from pathlib import Path

import nox

nox.options.reuse_existing_virtualenvs = True
HYPOTHESIS_BINARY_ONLY = ("--only-binary", "hypothesis")


@nox.session(python=["3.10", "3.11", "pypy3.11"], default=False)
def tests(session: nox.Session) -> None:
    parser = argparse.ArgumentParser(prog="nox -s tests --")
    args, posargs = parser.parse_known_args(session.posargs)
    coverage = ["python", "-m", "coverage"]
    session.install(*HYPOTHESIS_BINARY_ONLY, "pytest")
    session.install("-e.")
    env = {"COVERAGE_FILE": str(Path.cwd() / f".coverage.{session.python}")}
    if args.coverage:
        session.run(*coverage, "run", "-m", "pytest", *posargs, env=env)
        session.run(*coverage, "report", env=env)
    else:
        session.run("python", "-m", "pytest", "--capture=no", *posargs)


@nox.session(default=False)
def property_tests(session: nox.Session) -> None:
    session.install("-e.")
    session.run("python", "-m", "pytest", "-m", "property", *session.posargs)


@nox.session(default=False)
def downstream(session: nox.Session, project: str) -> None:
    session.run("pytest", *session.posargs)


@nox.session(python="3.10")
def lint(session: nox.Session) -> None:
    session.install("prek", "build", "twine")
    session.run("prek", "run", "--all-files", *session.posargs)
    out_dir = session.create_tmp()
    session.run("pyproject-build", "--outdir", str(out_dir))


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    session.run("sphinx-build", "-b", "html", "docs", "docs/_build")
"""
PRE_COMMIT = """\
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.14.0
    hooks:
      - id: ruff-check
      - id: ruff-format
"""
CI_LINES = [
    "pipx run nox -s tests",
    "pipx run nox -s lint -- --show-diff-on-failure",
    "pipx run nox -s property_tests",
    "pipx run nox -s docs",
    "pipx run nox -s \"downstream(project='$MATRIX_PROJECT')\"",
]


@pytest.fixture(autouse=True)
def plain_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No active virtualenv, whatever the machine running the tests has."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def repo(tmp_path: Path, noxfile: str, lines: list[str]) -> Path:
    (tmp_path / "noxfile.py").write_text(noxfile)
    (tmp_path / ".pre-commit-config.yaml").write_text(PRE_COMMIT)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "packaging"\nversion = "1"\n')
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    steps = [{"uses": "actions/checkout@v4"}, *({"run": line} for line in lines)]
    doc = {"on": "push", "jobs": {"test": {"runs-on": "ubuntu-latest", "steps": steps}}}
    (folder / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp_path


def init(root: Path) -> Result:
    result = CliRunner().invoke(cli, ["init", "--repo", str(root)])
    assert result.exit_code == 0, result.output
    return result


def validation_of(root: Path) -> dict[str, list[str]]:
    return load_layer_file(root / ".codegen.yml", is_spec=False)["validation"]  # type: ignore[no-any-return]


def test_ci_running_nox_sessions_gets_their_commands(tmp_path: Path) -> None:
    root = repo(tmp_path, NOXFILE, CI_LINES)

    result = init(root)

    validation = validation_of(root)
    # `tests`: the first branch of its `if` (coverage's pytest, unwrapped), not both branches
    assert validation["test"] == ["python -m pytest", "python -m pytest -m property"]
    # `lint`: prek's hooks, in their checking form
    assert validation["lint"] == ["ruff check --no-fix .", "ruff format --check ."]
    text = (root / ".codegen.yml").read_text()
    assert "nox -s" not in "\n".join(validation["test"] + validation["lint"])
    assert "(session tests of noxfile.py)" in result.output
    out = result.output
    assert "left out: nox session docs: builds, publishes or serves" in out
    assert "left out: nox session downstream(project='$MATRIX_PROJECT'): a parametrized" in out
    assert "nox session lint: session.run('pyproject-build', '--outdir', str(out_dir))" in out
    assert "nox session tests: the env= of python -m coverage run -m pytest" in out
    assert "nox session tests: python -m coverage report: not a recognised" in out
    assert "install" not in "\n".join(validation.get("setup", []))
    assert "missing: nox" not in out and "# Detected:" in text


def test_sessions_and_their_arguments_as_ci_names_them() -> None:
    assert sessions_named(" -s tests lint -- -x --lf") == (["tests", "lint"], ["-x", "--lf"])
    assert sessions_named(" --session=tests") == (["tests"], [])
    assert sessions_named(" --sessions tests,lint -R") == (["tests", "lint"], [])
    assert sessions_named(" -e tests") == (["tests"], [])
    assert sessions_named("") == (None, [])
    assert sessions_named(" --no-venv -- -k slow") == (None, ["-k", "slow"])


def test_without_a_session_named_nox_runs_its_default_ones(tmp_path: Path) -> None:
    default_off = NOXFILE.replace('@nox.session(python="3.10")', "@nox.session(default=False)")
    body = default_off + (
        "\n\n@nox.session(name='unit')\ndef unit_tests(s):\n"
        "    s.run('pytest', 'tests/unit', env={'PYTHONHASHSEED': '0'})\n"
    )
    (tmp_path / "noxfile.py").write_text(body)

    found = nox_sessions(tmp_path, None, [])

    # every session but those `default=False`, under its `name=`, with its literal env
    assert [(kind, line, name) for kind, line, name in found.commands] == [
        ("test", "PYTHONHASHSEED=0 pytest tests/unit", "unit")
    ]
    (tmp_path / "noxfile.py").write_text(body + "\nnox.options.sessions = ['property_tests']\n")
    assert [c for _, c, _ in nox_sessions(tmp_path, None, ["-x"]).commands] == [
        "python -m pytest -m property -x"
    ]


def test_nox_run_as_a_module(tmp_path: Path) -> None:
    root = repo(tmp_path, NOXFILE, ["python -m pip install nox", "python -m nox --session=tests"])

    init(root)

    assert validation_of(root)["test"] == ["python -m pytest"]


def test_a_noxfile_init_cannot_read_leaves_the_line_as_ci_runs_it(tmp_path: Path) -> None:
    root = repo(tmp_path, "def tests(session:\n", ["nox -s tests"])

    init(root)

    assert validation_of(root)["test"] == ["nox -s tests"]
    assert nox_sessions(tmp_path, ["tests"], []).source is None
    os.remove(root / "noxfile.py")
    assert nox_sessions(tmp_path, ["tests"], []).source is None
