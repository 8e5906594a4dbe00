"""CI's `make` lines as the lines their targets run (commands/init_make.py), and `init` writing
the checks a Makefile wraps instead of guessing from the build files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.commands.init_make import Recipe, unfold
from codegen_ci.spec.layers import load_layer_file

# more-itertools' Makefile and CI workflow (github.com/more-itertools/more-itertools at
# 2fe1b2eeb9d75f994113fe3ac76d14b6bcd6fb10: Makefile, .github/workflows/python-app.yml), cut
# to the targets CI runs.
MAKEFILE = """\
.PHONY: all-checks
all-checks: requirements coverage check docs package

.PHONY: requirements
requirements:
\tpython -m pip install --upgrade -r requirements/development.txt
\tpython -m pip install --editable .

.PHONY: check
check:
\truff format --check .
\truff check more_itertools tests
\tstubtest more_itertools.more more_itertools.recipes

.PHONY: coverage
coverage:
\tpython -m pip install --upgrade -r requirements/testing.txt
\tcoverage run --include="more_itertools/*.py" -m unittest
\tcoverage report --show-missing --fail-under=99

.PHONY: test
test:
\tpython -m unittest -v ${tests}

.PHONY: docs
docs:
\tpython -m pip install --upgrade -r docs/requirements.txt
\tsphinx-build -W -b html docs docs/_build/html
"""
WORKFLOW = {
    "name": "Python package",
    "on": ["push"],
    "jobs": {
        "build": {
            "runs-on": "ubuntu-latest",
            "steps": [
                {"uses": "actions/checkout@v7"},
                {"name": "Run tests", "run": "make coverage"},
                {"name": "Static checks", "run": "make requirements check"},
                {"name": "Build docs with sphinx", "run": "make docs"},
            ],
        }
    },
}
SETUP_CFG = "[mypy]\nstrict = true\n"  # configured, but CI runs stubtest, not mypy
TEST_PY = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"


def makefile(tmp_path: Path, text: str) -> Path:
    (tmp_path / "Makefile").write_text(text)
    return tmp_path


def test_targets_unfold_to_their_recipes_prerequisites_first(tmp_path: Path) -> None:
    root = makefile(
        tmp_path,
        "VENV ?= .venv\nlint: deps\n\t@$(VENV)/bin/ruff check src\ndeps:\n\t-pip install ruff\n",
    )

    unfolded = unfold(root, "make lint")

    assert unfolded is not None
    assert unfolded.lines == [
        Recipe("pip install ruff", "deps"),
        Recipe(".venv/bin/ruff check src", "lint"),
    ]


def test_make_inside_a_recipe_and_variables_from_the_command_line(tmp_path: Path) -> None:
    root = makefile(
        tmp_path, "ci:\n\t$(MAKE) test\ntest:\n\tpython -m pytest $(ARGS) \\\n\t\ttests\n"
    )

    unfolded = unfold(root, "make ci ARGS=-q")

    assert unfolded is not None and unfolded.lines == [Recipe("python -m pytest -q tests", "test")]


def test_what_only_make_can_expand_is_left_out_with_the_reason(tmp_path: Path) -> None:
    root = makefile(tmp_path, "test:\n\tpytest $(shell ls tests)\n\tpytest tests\n")

    unfolded = unfold(root, "make test")

    assert unfolded is not None
    assert unfolded.lines == [Recipe("pytest tests", "test")]
    assert unfolded.left_out == [
        ("pytest $(shell ls tests)", "Makefile target test: needs make to expand it")
    ]


@pytest.mark.parametrize("line", ["make -C docs html", "make missing", "make -f other.mk test"])
def test_a_line_init_cannot_follow_is_not_unfolded(tmp_path: Path, line: str) -> None:
    assert unfold(makefile(tmp_path, "test:\n\tpytest\n"), line) is None


def test_init_writes_the_checks_cis_make_targets_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """more-itertools: CI runs `make coverage` and `make requirements check`; init left both
    out ("not a recognised test or lint command") and wrote `mypy .` from setup.cfg, which CI
    never runs (323 errors on the untouched code), and no `ruff format --check` nor stubtest."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    makefile(tmp_path, MAKEFILE)
    (tmp_path / "setup.cfg").write_text(SETUP_CFG)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "m"\n[tool.ruff]\nline-length = 79\n'
    )
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "typechecks.txt").write_text("mypy\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_more.py").write_text(TEST_PY)
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "python-app.yml").write_text(yaml.safe_dump(WORKFLOW))

    result = CliRunner().invoke(cli, ["init", "--repo", str(tmp_path)])

    assert result.exit_code == 0, result.output
    validation = load_layer_file(tmp_path / ".codegen.yml", is_spec=False)["validation"]
    assert validation["lint"] == [
        "ruff format --check .",
        "ruff check --no-fix more_itertools tests",
        "stubtest more_itertools.more more_itertools.recipes",
    ]
    assert validation["test"] == ["python -m unittest"]
    origin = "from .github/workflows/python-app.yml, job build, Makefile target check"
    assert f"lint: ruff format --check .  ({origin}: ruff format --check .)" in result.output
    assert "left out: make docs" in result.output  # a build
    assert "coverage report --show-missing --fail-under=99 (" in result.output
