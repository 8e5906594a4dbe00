"""CI's `pre-commit run` as the checks its well-known hooks run (commands/init_precommit.py):
init writes them in their checking form, and leaves out the hooks only pre-commit runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.spec.layers import load_layer_file

# pallets/itsdangerous at 672971d66a2ef9f85151e53283113f33d642dabd: .pre-commit-config.yaml
# (revisions cut) and the run line of .github/workflows/pre-commit.yaml.
PRE_COMMIT_CONFIG = """\
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.11.11
    hooks:
      - id: ruff
      - id: ruff-format
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v5.0.0
    hooks:
      - id: check-merge-conflict
      - id: trailing-whitespace
"""
RUN = (
    "uv run --locked --group pre-commit pre-commit run --show-diff-on-failure "
    "--color=always --all-files"
)
PYPROJECT = '[project]\nname = "m"\n[tool.ruff]\nfix = true\n[tool.pytest.ini_options]\n'


def repo_with(tmp_path: Path, steps: list[dict[str, str]]) -> Path:
    (tmp_path / ".pre-commit-config.yaml").write_text(PRE_COMMIT_CONFIG)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    job = {"runs-on": "ubuntu-latest", "steps": [{"uses": "actions/checkout@v4"}, *steps]}
    workflow = {"name": "checks", "on": ["push"], "jobs": {"main": job}}
    (workflows / "pre-commit.yaml").write_text(yaml.safe_dump(workflow))
    return tmp_path


def init_writes_ruffs_checks(repo: Path) -> str:
    """`init`'s output, having written the pre-commit ruff hooks' checks as the lint."""
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    validation = load_layer_file(repo / ".codegen.yml", is_spec=False)["validation"]
    assert validation["lint"] == ["ruff check --no-fix .", "ruff format --check ."]
    return result.output


def test_the_hooks_of_ruff_become_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """itsdangerous: CI runs ruff and ruff-format through pre-commit; init left the whole line
    out (pre-commit needs the network) and dropped its own `ruff check .` as "the
    repository's CI does not run it"."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = repo_with(tmp_path, [{"run": RUN}, {"run": "python -m pytest"}])

    output = init_writes_ruffs_checks(repo)
    assert (
        "lint: ruff check --no-fix .  (from .github/workflows/pre-commit.yaml, job main, "
        "pre-commit hook ruff: ruff check .)" in output
    )
    assert (
        "left out: pre-commit hook trailing-whitespace (.github/workflows/pre-commit.yaml, job "
        "main): runs only through pre-commit" in output
    )
    assert "the repository's CI does not run it" not in output


def test_one_named_hook_or_no_known_hook_leaves_the_line_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = repo_with(tmp_path, [{"run": "pre-commit run trailing-whitespace --all-files"}])

    result = CliRunner().invoke(cli, ["init", "--repo", str(repo)])

    assert result.exit_code == 0, result.output
    assert "pre-commit installs its hooks from the network" in result.output
    assert "pre-commit hook" not in result.output


@pytest.mark.parametrize("action", ["pre-commit/action@v3.0.1", "j178/prek-action@v2.0.2"])
def test_the_pre_commit_actions_run_the_hooks_as_pre_commit_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """prettytable/prettytable: CI's lint job is `uses: j178/prek-action` (pre-commit/action
    alike), which runs every hook of .pre-commit-config.yaml; init called that "an action, not
    a command" and left out its own ruff check as "the repository's CI does not run it"."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = repo_with(tmp_path, [{"uses": action}, {"run": "python -m pytest"}])

    output = init_writes_ruffs_checks(repo)
    assert "pre-commit hook ruff: ruff check .)" in output
    assert "an action, not a command" not in output
    assert "the repository's CI does not run it" not in output


def test_prek_run_is_pre_commit_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prek (pre-commit rewritten in Rust) runs the same .pre-commit-config.yaml: CI's `prek
    run --all-files` is read as `pre-commit run --all-files` is ("not a recognised test or lint
    command" before)."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = repo_with(tmp_path, [{"run": "uvx prek run --all-files"}, {"run": "python -m pytest"}])

    output = init_writes_ruffs_checks(repo)
    assert "job main, pre-commit hook ruff: ruff check .)" in output
    assert "not a recognised test or lint command" not in output


@pytest.mark.parametrize("tool", ["pre-commit", "prek"])
def test_a_tox_env_running_the_hooks_gives_their_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """prettytable/prettytable's tox.ini: `[testenv:lint]` runs `prek run --all-files
    --show-diff-on-failure`, CI runs `tox -e lint`. The hooks of well-known tools become their
    checks as in a CI line; before, the env's only line was left out and `tox -e lint`, which
    downloads its environment, was written as a test."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = repo_with(tmp_path, [{"run": "tox -e lint"}, {"run": "python -m pytest"}])
    (repo / "tox.ini").write_text(
        "[tox]\nenv_list = lint\n\n[testenv:lint]\nskip_install = true\ndeps =\n    "
        f"{tool}\ncommands =\n    {tool} run --all-files --show-diff-on-failure\n"
    )

    output = init_writes_ruffs_checks(repo)
    assert "test: tox" not in output
    assert "left out: tox env lint: pre-commit hook trailing-whitespace: runs only" in output


def test_a_hooks_tool_that_is_missing_is_installed_at_the_hooks_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pypa/packaging at 053c8846: its hooks pin ruff (a commit, `# frozen: v0.16.0`) and mypy
    (v2.3.0, with the packages it checks against); `pip install ruff` got a newer ruff that
    fails the untouched code on rules 0.16 does not have."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # neither ruff nor mypy on PATH
    repo = repo_with(tmp_path, [{"run": RUN}, {"run": "python -m pytest"}])
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        "  - repo: https://github.com/astral-sh/ruff-pre-commit\n"
        "    rev: cb8c523fd4835aba42af70f4cad5568db4df0b6c  # frozen: v0.16.0\n"
        "    hooks:\n"
        "      - id: ruff-check\n"
        "        args: [ --fix ]\n"
        "  - repo: https://github.com/pre-commit/mirrors-mypy\n"
        "    rev: v2.3.0\n"
        "    hooks:\n"
        "      - id: mypy\n"
        "        additional_dependencies: [hypothesis, 'nox>=2026.08.10', pytest]\n"
        "  - repo: https://github.com/pycqa/flake8\n"
        "    rev: 0123456789abcdef0123456789abcdef01234567\n"
        "    hooks:\n"
        "      - id: flake8\n"
    )

    result = CliRunner().invoke(cli, ["init", "--repo", str(repo)])

    assert result.exit_code == 0, result.output
    hint = "is not installed; install it with: python -m pip install"
    assert f"missing: ruff {hint} ruff==0.16.0\n" in result.output
    assert f"missing: mypy {hint} mypy==2.3.0 hypothesis 'nox>=2026.08.10' pytest\n" in (
        result.output
    )
    assert f"missing: flake8 {hint} flake8\n" in result.output  # a commit, no version said
