"""JUnit ids -> pytest tests, proven against real pytest: the `codegen_first` plugin runs
exactly the tests that failed first and stops after them (or deselects the rest), and the
targeted command re-runs exactly them (classes, nested classes, parametrized ids, nested
packages)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_ci.gate import codegen_first, pytest_commands
from codegen_ci.gate.junit.parse import JUnitResult, parse_file
from codegen_ci.gate.pytest_commands import (
    FirstStatus,
    Mode,
    node_id,
    targeted_command,
)

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"

DEEP_TESTS = """\
import pytest


class TestOuter:
    class TestInner:
        def test_deep(self):
            assert False, "deep"

        def test_deep_ok(self):
            pass

    @pytest.mark.parametrize("value", ["a.b", "x y", "1::2", "ok"])
    def test_param(self, value):
        assert value == "ok"


def test_plain():
    assert 1 == 2


def test_plain_ok():
    pass
"""

PACKAGE_TESTS = """\
def test_in_package():
    raise RuntimeError("boom")


def test_in_package_ok():
    pass
"""


def junit_of(command: str, cwd: Path, name: str) -> JUnitResult:
    """Run `command` in `cwd` with a JUnit report and parse it."""
    report = cwd.parent / name
    subprocess.run(f"{command} --junitxml={report}", shell=True, cwd=cwd, capture_output=True)
    result = parse_file(report)
    assert not result.problems, result.problems
    return result


# Runs pytest where codegen_ci cannot be imported, as in a repository's own virtualenv.
WITHOUT_CODEGEN_CI = """\
import sys


class NoCodegenCi:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "codegen_ci":
            raise ImportError("codegen_ci is not installed here")
        return None


sys.meta_path.insert(0, NoCodegenCi())
import pytest

raise SystemExit(pytest.main())
"""


def with_plugin(
    command: str, cwd: Path, ids: list[str], mode: Mode = "first"
) -> tuple[JUnitResult, FirstStatus, subprocess.CompletedProcess[str]]:
    """Run `command` with the plugin given `ids`: its JUnit, the plugin's status, the process."""
    env, status = pytest_commands.prepare(os.environ, ids, cwd.parent / "out", "t", mode)
    report = cwd.parent / "first.xml"
    proc = subprocess.run(
        f"{command} --junitxml={report}",
        shell=True,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    return parse_file(report), pytest_commands.read_status(status), proc


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    deep = root / "tests" / "unit" / "pkg"
    deep.mkdir(parents=True)
    (deep / "test_deep.py").write_text(DEEP_TESTS)
    package = root / "tests" / "integration"
    package.mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "test_api.py").write_text(PACKAGE_TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


@pytest.mark.e2e
def test_targeted_command_reruns_exactly_the_failing_tests(project: Path) -> None:
    command = f"{PYTEST} tests"
    full = junit_of(command, project, "full.xml")
    failing = [c.key for c in full.failing()]
    assert (len(failing), full.totals().total) == (6, 10)

    targeted = targeted_command(command, failing, project)

    assert targeted is not None and not targeted.endswith(" tests")
    rerun = junit_of(targeted, project, "targeted.xml")
    assert sorted(c.key for c in rerun.cases) == sorted(failing)
    assert all(c.outcome in ("failure", "error") for c in rerun.cases)


def test_node_ids_for_classes_parameters_and_packages(project: Path) -> None:
    deep = "tests.unit.pkg.test_deep"
    assert node_id(f"{deep}.TestOuter.TestInner::test_deep", project) == (
        "tests/unit/pkg/test_deep.py::TestOuter::TestInner::test_deep"
    )
    assert node_id(f"{deep}.TestOuter::test_param[x y]", project) == (
        "tests/unit/pkg/test_deep.py::TestOuter::test_param[x y]"
    )
    assert node_id(f"{deep}::test_plain", project) == "tests/unit/pkg/test_deep.py::test_plain"
    assert node_id("tests.integration.test_api::test_in_package", project) == (
        "tests/integration/test_api.py::test_in_package"
    )
    assert node_id("tests.gone::test_x", project) is None
    assert node_id("no_separator", project) is None


def test_targeted_command_keeps_options_and_drops_test_paths(project: Path) -> None:
    ids = ["tests.integration.test_api::test_in_package"]
    command = 'pytest -q -k "not slow" --tb short -p no:cacheprovider tests/unit tests'

    assert targeted_command(command, ids, project) == (
        "pytest -q -k 'not slow' --tb short -p no:cacheprovider "
        "tests/integration/test_api.py::test_in_package"
    )


@pytest.mark.parametrize(
    "command",
    [
        "pytest tests && echo done",
        "pytest tests | tee out.txt",
        "pytest tests > out.txt",
        "cd sub; pytest",
        "$PYTHON -m pytest tests",
        'pytest "unbalanced',
        "make test",
        "tox -e py311",
    ],
)
def test_commands_that_cannot_be_targeted_run_in_full(project: Path, command: str) -> None:
    ids = ["tests.integration.test_api::test_in_package"]
    assert targeted_command(command, ids, project) is None


def test_no_targeting_without_ids_with_too_many_or_unmappable_ids(project: Path) -> None:
    known = "tests.integration.test_api::test_in_package"
    assert targeted_command("pytest", [], project) is None
    assert (
        targeted_command("pytest", [known] * 1 + [f"{known}[{n}]" for n in range(300)], project)
        is None
    )
    assert targeted_command("pytest", [known, "tests.removed::test_x"], project) is None
    assert targeted_command("pytest", [known, known], project) == (
        "pytest tests/integration/test_api.py::test_in_package"
    )


@pytest.mark.e2e
def test_plugin_runs_the_failing_tests_first_and_stops_when_one_still_fails(
    project: Path,
) -> None:
    failing = [c.key for c in junit_of(f"{PYTEST} tests", project, "full.xml").failing()]

    junit, status, proc = with_plugin(f"{PYTEST} tests", project, failing)

    assert sorted(c.key for c in junit.cases) == sorted(failing)  # the 4 passing never ran
    assert proc.returncode == 1 and codegen_first.STOP_MESSAGE in proc.stdout
    assert status == FirstStatus(loaded=True, matched=6, stopped=True)


@pytest.mark.e2e
def test_plugin_goes_on_through_the_suite_when_they_pass(project: Path) -> None:
    fixed = [
        "tests.unit.pkg.test_deep::test_plain_ok",
        "tests.unit.pkg.test_deep.TestOuter::test_param[ok]",
    ]

    junit, status, proc = with_plugin(f"{PYTEST} tests", project, fixed)

    assert sorted(c.key for c in junit.cases[:2]) == sorted(fixed)  # in collection order
    assert junit.totals().total == 10 and proc.returncode == 1  # the others still fail
    assert status == FirstStatus(loaded=True, matched=2, stopped=False)


@pytest.mark.e2e
def test_plugin_only_mode_deselects_the_rest(project: Path) -> None:
    ids = [
        "tests.unit.pkg.test_deep.TestOuter.TestInner::test_deep",
        "tests.unit.pkg.test_deep.TestOuter::test_param[1::2]",
        "tests.integration.test_api::test_in_package_ok",
        "tests.gone::test_x",
    ]

    junit, status, proc = with_plugin(f"{PYTEST} tests", project, ids, mode="only")

    assert sorted(c.key for c in junit.cases) == sorted(ids[:3])
    assert "7 deselected" in proc.stdout
    assert status == FirstStatus(loaded=True, matched=3, stopped=False)


@pytest.mark.e2e
def test_plugin_works_where_codegen_ci_cannot_be_imported(project: Path) -> None:
    runner = project.parent / "runner.py"
    runner.write_text(WITHOUT_CODEGEN_CI)
    command = f"{sys.executable} {runner} -q -p no:cacheprovider tests"
    failing = ["tests.integration.test_api::test_in_package"]

    junit, status, proc = with_plugin(command, project, failing)

    assert [c.key for c in junit.cases] == failing, proc.stdout + proc.stderr
    assert status.stopped
    source = Path(codegen_first.__file__).read_text()
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {name.split(".")[0] for name in imported} <= {
        "__future__",
        "collections",
        "json",
        "os",
        "re",
        "typing",
        "pytest",
        "_pytest",
    }


def test_plugin_is_used_for_pytest_commands_without_xdist() -> None:
    assert pytest_commands.applies("python -m pytest -q tests")
    assert pytest_commands.applies("cd sub && pytest")  # the plugin rides on the environment
    assert not pytest_commands.applies("pytest -n 2 tests")
    assert not pytest_commands.applies("pytest -nauto tests")
    assert not pytest_commands.applies("pytest --dist=loadfile -n4")
    assert not pytest_commands.applies("make test")
