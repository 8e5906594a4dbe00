"""The project's package failing to import inside its own code on the untouched code is the
environment's (a configuration error); a test importing what the task asks to write is the
model's. Real pytest and unittest outputs (tests/fixtures/generated/python), read as if
written in a copy of the project that git tracks, its version file git-ignored."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from generated_fixtures import GENERATED_AT, committed_report, copy_project

from codegen_ci.gate.project_imports import package_not_importable, project_not_importable
from codegen_ci.report import CommandResult

HATCH = (
    '[project]\nname = "shapes"\ndynamic = ["version"]\n\n'
    '[tool.hatch.build.hooks.vcs]\nversion-file = "src/shapes/_version.py"\n'
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    tree = copy_project("python", tmp_path / "shapes")
    (tree / ".gitignore").write_text("src/shapes/_version.py\n")
    (tree / "pyproject.toml").write_text(HATCH)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "shapes"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tree, check=True
        )
    return tree


def judged(name: str, project: Path) -> str | None:
    report = committed_report("python", name, project, project.parent)
    assert GENERATED_AT not in report.read_text()
    return package_not_importable(report.read_text(), project)


@pytest.mark.parametrize(
    "name",
    [
        "missing-collect-q.out",
        "missing-collect-qq.out",
        "missing-collect.out",
        "missing-run.out",
        "missing-unittest.out",
    ],
)
def test_a_missing_module_of_the_package_the_build_writes(project: Path, name: str) -> None:
    problem = judged(name, project)

    assert problem is not None
    assert "3 of 3 test modules fail" in problem
    assert "at src/shapes/__init__.py:3" in problem
    assert "ModuleNotFoundError: No module named 'shapes._version'" in problem
    assert "`src/shapes/_version.py` is not in the worktree" in problem
    assert "pyproject.toml says the build writes it" in problem
    assert "pip install -e ." in problem and "PYTHONPATH" in problem


def test_a_conftest_importing_the_package_counts_for_every_module(project: Path) -> None:
    problem = judged("conftest-collect-qq.out", project)

    assert problem is not None and "a conftest" in problem
    assert "No module named 'shapes._version'" in problem


def test_a_third_party_module_the_package_imports(project: Path) -> None:
    problem = judged("dependency-collect-qq.out", project)

    assert problem is not None and "at src/shapes/area.py:1" in problem
    assert "`fancymath` is not the project's" in problem


def test_a_generated_file_that_cannot_be_compiled(project: Path) -> None:
    problem = judged("syntax-collect-qq.out", project)

    assert problem is not None and "at src/shapes/_version.py:1" in problem
    assert "cannot be compiled: a file git does not track" in problem


def test_the_same_syntax_error_in_a_tracked_file_is_the_code(project: Path) -> None:
    (project / ".gitignore").write_text("")
    (project / "src" / "shapes" / "_version.py").write_text("__version__ = (\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)

    assert judged("syntax-collect-qq.out", project) is None


def test_the_installed_metadata_not_found(project: Path) -> None:
    problem = judged("metadata-collect-qq.out", project)

    assert problem is not None and "at src/shapes/__init__.py:3" in problem
    assert "the project is not installed" in problem


@pytest.mark.parametrize(
    "name", ["built-collect-qq.out", "built-run-qq.out", "built-unittest-v.out"]
)
def test_a_test_importing_a_name_the_task_asks_for_is_the_models(project: Path, name: str) -> None:
    """`from shapes.area import circle` fails in the test module's own line: the package
    imports fine, `circle` is the task."""
    assert judged(name, project) is None


def test_when_the_output_does_not_say_the_repositorys_test_files_count(project: Path) -> None:
    """pytest's quiet output lists nothing when nothing else was collected, nor when a run
    was interrupted: 30 more tracked test files mean most modules were never judged."""
    for n in range(30):
        (project / "tests" / f"test_more_{n}.py").write_text("def test_more():\n    pass\n")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)

    assert judged("missing-collect-qq.out", project) is None


def test_one_failing_module_of_many_is_not_every_module(project: Path) -> None:
    """Three modules fail inside the package; 30 more were collected: not the environment."""
    report = committed_report("python", "missing-collect-qq.out", project, project.parent)
    listing = "".join(f"tests/test_more_{n}.py: 2\n" for n in range(30))

    assert package_not_importable(listing + report.read_text(), project) is None


def test_the_package_not_on_the_path_says_only_an_install_writes_the_version_file(
    project: Path,
) -> None:
    """`No module named 'shapes'`: nothing puts `src` on the path; PYTHONPATH alone would then
    stop at `_version.py`, which only the build writes."""
    (project / "pytest.ini").unlink()
    log = committed_report("python", "unconfigured-collect-qq.out", project, project.parent)
    record = CommandResult(
        command="python -m pytest", kind="test", exit_code=2, duration_s=1, output_path=str(log)
    )

    problem = project_not_importable(record, project)

    assert problem is not None and "own module `shapes`" in problem
    assert "The build writes src/shapes/_version.py into it" in problem
    assert "PYTHONPATH=" not in problem


def test_python_humanize_unbuilt_every_module_fails_on_the_package_or_a_test_dependency(
    tmp_path: Path,
) -> None:
    """python-humanize/humanize never built (its hatch-vcs `_version.py` absent) and without
    freezegun: four modules fail inside the package, two on freezegun before they reach it."""
    tree = tmp_path / "humanize"
    (tree / "src" / "humanize").mkdir(parents=True)
    (tree / "src" / "humanize" / "__init__.py").write_text("from ._version import __version__\n")
    (tree / "pyproject.toml").write_text(
        '[tool.hatch]\nbuild.hooks.vcs.version-file = "src/humanize/_version.py"\n'
    )
    report = committed_report("python", "humanize-collect-qq.out", tree, tmp_path)

    problem = package_not_importable(report.read_text(), tree)

    assert problem is not None and "4 of 6 test modules fail" in problem
    assert "at src/humanize/__init__.py:35" in problem
    assert "No module named 'humanize._version'" in problem
    assert "pyproject.toml says the build writes it" in problem
