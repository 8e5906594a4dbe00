"""A module the repository does not hold, missing while collecting the untouched code's tests:
the environment's, named with where the project declares it; the repository's own names and
a TDD test of a module the task asks for stay the model's. Real git repositories; the failures
as gate/import_failures.py reads them from pytest's output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codegen_ci.gate.import_failures import Frame, ImportFailure
from codegen_ci.gate.missing_dependencies import declared_dependencies, missing_dependencies


def repository(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "repo"
    for rel, text in {"src/pkg/__init__.py": "", **files}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tree, check=True
        )
    return tree


def failure(module: str, name: str) -> ImportFailure:
    return ImportFailure(
        module, (Frame(module, 3),), f"ModuleNotFoundError: No module named '{name}'"
    )


def test_one_module_of_many_missing_a_dependency_names_it_and_the_files(tmp_path: Path) -> None:
    tree = repository(tmp_path, {})
    found = [failure("tests/test_timed.py", "freezegun"), failure("tests/test_jws.py", "freezegun")]

    problem = missing_dependencies(found, tree)

    assert problem is not None
    assert "`freezegun`" in problem and "No module named 'freezegun'" in problem
    assert "imported by tests/test_timed.py, tests/test_jws.py" in problem
    assert "declares it nowhere (`pip install freezegun`" in problem


@pytest.mark.parametrize(
    ("files", "where", "install"),
    [
        (
            {"pyproject.toml": '[dependency-groups]\ntests = ["pytest", "freezegun>=1"]\n'},
            "pyproject.toml (the `tests` dependency group)",
            "uv sync --group tests",
        ),
        (
            {
                "pyproject.toml": '[project]\nname = "pkg"\n[project.optional-dependencies]\n'
                'test = ["FreezeGun"]\n'
            },
            "pyproject.toml (the `test` extra)",
            "pip install -e '.[test]'",
        ),
        (
            {"requirements/tests.in": "pytest\nfreezegun\n", "requirements/dev.txt": "-r x\n"},
            "requirements/tests.in",
            "pip install -r requirements/tests.in",
        ),
        (
            {"setup.cfg": "[options.extras_require]\ntests =\n    pytest\n    freezegun\n"},
            "setup.cfg (the `tests` extra)",
            "pip install -e '.[tests]'",
        ),
        (
            {"pyproject.toml": "[tool.poetry.group.dev.dependencies]\nfreezegun = '*'\n"},
            "pyproject.toml (Poetry's `dev` group)",
            "poetry install --with dev",
        ),
    ],
    ids=["dependency-group", "extra", "requirements-dir", "setup-cfg-extra", "poetry-group"],
)
def test_where_the_project_declares_it_is_named(
    tmp_path: Path, files: dict[str, str], where: str, install: str
) -> None:
    tree = repository(tmp_path, files)

    problem = missing_dependencies([failure("tests/test_timed.py", "freezegun")], tree)

    assert problem is not None
    assert f"declares it in {where}" in problem and install in problem


def test_a_conftest_missing_a_dependency_counts(tmp_path: Path) -> None:
    tree = repository(tmp_path, {})
    conftest = ImportFailure(
        "tests/conftest.py",
        (),
        "ModuleNotFoundError: No module named 'hypothesis.strategies'",
        conftest=True,
    )

    problem = missing_dependencies([conftest], tree)

    assert problem is not None and "`hypothesis`" in problem and "tests/conftest.py" in problem


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("tests/test_a.py", "pkg"),  # the project's own package (not set up: another rule)
        ("tests/test_a.py", "pkg.new"),  # a submodule the task may ask for
        ("tests/test_a.py", "helpers"),  # a module in the tree (tests/helpers.py)
        ("tests/test_slugs.py", "slugs"),  # a TDD test of a module the task asks for
        ("test_slugs", "slugs"),  # unittest's name for it
        ("tests/test_a.py", "shapes"),  # the name pyproject.toml says the project provides
    ],
)
def test_the_repositorys_own_names_and_a_tdd_test_stay_the_models(
    tmp_path: Path, module: str, name: str
) -> None:
    tree = repository(
        tmp_path,
        {"tests/helpers.py": "", "pyproject.toml": '[project]\nname = "Shapes"\n'},
    )

    assert missing_dependencies([failure(module, name)], tree) is None


def test_other_errors_are_not_missing_dependencies(tmp_path: Path) -> None:
    tree = repository(tmp_path, {})
    other = ImportFailure("tests/test_a.py", (), "ImportError: cannot import name 'x' from 'y'")

    assert missing_dependencies([other], tree) is None


def test_declared_names_are_normalised(tmp_path: Path) -> None:
    tree = repository(tmp_path, {"requirements-test.txt": "Typing.Extensions==4\n# a comment\n"})

    assert declared_dependencies(tree)["typing_extensions"].where == "requirements-test.txt"
