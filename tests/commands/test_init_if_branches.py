"""`codegen-ci init` on a CI script whose `if` chooses between two ways of running the same
tests: jshttp/vary's `if npm -ps ls nyc | grep -q nyc; then npm run test-ci; else npm test;
fi`. CI runs one branch; init wrote both, and every round ran the suite twice. Now the `else`
branch (the general case) is the command, the other branches are left out and said so, and
the `if`, `then`, `else` and `fi` lines themselves are not reported as unknown commands."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.spec.layers import load_layer_file


@pytest.fixture(autouse=True)
def plain_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def _init(repo: Path, run: str) -> tuple[list[str], str]:
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    folder = repo / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    steps = [{"uses": "actions/checkout@v4"}, {"name": "Run tests", "shell": "bash", "run": run}]
    doc = {
        "name": "ci",
        "on": ["push"],
        "jobs": {"test": {"runs-on": "ubuntu-latest", "steps": steps}},
    }
    (folder / "ci.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo), "--force"])
    assert result.exit_code == 0, result.output
    layer = load_layer_file(repo / ".codegen.yml", is_spec=False)
    return layer["validation"]["test"], result.output


def test_of_an_if_with_an_else_the_else_branch_is_the_command(tmp_path: Path) -> None:
    run = (
        "if python -m pip show pytest-cov | grep -q pytest-cov; then\n"
        "  python -m pytest --cov=pkg tests\n"
        "else\n"
        "  python -m pytest tests\n"
        "fi\n"
    )
    tests, output = _init(tmp_path, run)

    assert tests == ["python -m pytest tests"]
    said = "left out: python -m pytest --cov=pkg tests (.github/workflows/ci.yml, job test): "
    assert said + "a branch of an `if` whose `else` is taken" in output
    assert "if python" not in output and "left out: fi" not in output


def test_elif_branches_are_alternatives_and_an_if_without_else_is_kept(tmp_path: Path) -> None:
    chain = (
        'if [ "$RUNNER_OS" = "Windows" ]\n'
        "then\n"
        "  python -m pytest -p no:faulthandler tests\n"
        'elif [ "$RUNNER_OS" = "macOS" ]; then\n'
        "  python -m pytest -x tests\n"
        "else\n"
        "  python -m pytest -q tests\n"
        "fi\n"
    )
    tests, output = _init(tmp_path, chain)
    assert tests == ["python -m pytest -q tests"]
    assert output.count("a branch of an `if` whose `else` is taken") == 2

    only_then = "if [ -d tests ]; then\n  python -m pytest tests\nfi\n"
    tests, _ = _init(tmp_path, only_then)
    assert tests == ["python -m pytest tests"]  # no else: CI may run it, so it is a check
