"""A test command run from a folder (`cd DIR && COMMAND`, as init writes a CI step's
`working-directory`): base.py's `in_folder` reads it, and every rewriter of a test command
works on COMMAND in DIR, its paths relative to DIR, and runs the result in DIR again: the
coverage plans (asked through the registry), pytest's targeted re-run, the narrowing to edited
test files; the LCov report's relative paths and a JUnit case's file named from the folder are
read back as the repository's. Anything else stays a whole command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.helpers.coverage_ask import plan

from codegen_ci.gate import unittest_commands
from codegen_ci.gate.coverage import parse_lcov
from codegen_ci.gate.file_selection import narrowed
from codegen_ci.gate.junit.capture import from_folder
from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.pytest_commands import targeted_command
from codegen_ci.runners import CoveragePlan
from codegen_ci.runners.base import Folder, in_folder
from codegen_ci.security.untrusted import Untrusted


@pytest.mark.parametrize(
    ("command", "folder", "inner"),
    [
        ("cd tests && python -m pytest -q", "tests", "python -m pytest -q"),
        ("cd ./tests/ && pytest", "tests", "pytest"),
        ("cd 'my tests' && pytest", "my tests", "pytest"),
        ('cd "web/app"&&npx jest', "web/app", "npx jest"),
        ("  cd pkg/../web && npx jest", "web", "npx jest"),
        ("cd . && pytest", "", "pytest"),
    ],
)
def test_a_plain_command_run_from_a_folder_of_the_repository(
    command: str, folder: str, inner: str
) -> None:
    assert in_folder(command) == (Folder(folder), inner)


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest",  # no folder
        "cd .. && pytest",  # out of the repository
        "cd tests/../.. && pytest",
        "cd /tmp && pytest",  # absolute
        "cd ~/x && pytest",  # a home folder
        "cd $DIR && pytest",  # variables
        'cd "$DIR" && pytest',
        "cd `pwd` && pytest",
        "cd tests && pytest $ARGS",  # the command after it is no plain one
        "cd tests && pytest | tee log",
        "cd tests && cd .. && pytest",
        "cd tests; pytest",  # `;`: pytest runs even where cd failed
        "cd a b && pytest",
    ],
)
def test_anything_else_is_taken_whole(command: str) -> None:
    assert in_folder(command) == (Folder(), command)


def test_a_folder_maps_paths_both_ways() -> None:
    folder = Folder("tests")
    assert folder.inward("calc/ops.py") == "../calc/ops.py"
    assert folder.inward("tests/test_ops.py") == "test_ops.py"
    assert folder.outward("../calc/ops.py") == "calc/ops.py"
    assert folder.wrap("pytest x") == "cd tests && pytest x"
    assert Folder("my tests").wrap("pytest") == "cd 'my tests' && pytest"
    assert Folder().wrap("pytest") == "pytest" and Folder().inward("a.py") == "a.py"


def test_a_python_coverage_plan_runs_in_the_folder_its_sources_relative_to_it(
    tmp_path: Path,
) -> None:
    change = ["calc/ops.py", "tests/test_ops.py"]
    found = plan(f"cd tests && {sys.executable} -m pytest -q", change, tmp_path, tmp_path / "io")
    assert isinstance(found, CoveragePlan)
    assert found.command.startswith(f"cd tests && COVERAGE_CORE=sysmon {sys.executable} -c ")
    assert "--include=../calc/ops.py -m pytest -q" in found.command
    assert found.sources == ("calc/ops.py",) and found.folder == "tests"
    assert found.env is not None and found.env["CODEGEN_COV_SELECT"] == "../calc/ops.py"
    # the plain command: no folder, as before
    found = plan(f"{sys.executable} -m pytest -q", change, tmp_path, tmp_path / "io")
    assert isinstance(found, CoveragePlan) and found.folder == ""
    assert "--include=calc/ops.py -m pytest" in found.command


def test_a_bare_pytest_script_is_found_from_the_folder(tmp_path: Path) -> None:
    """`cd tests && ../.venv/bin/pytest`: the script (and its shebang's interpreter) found
    relative to the folder, read through the worktree's guarded reader."""
    script = tmp_path / ".venv" / "bin" / "pytest"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\nimport sys\n")
    script.chmod(0o755)
    found = plan("cd tests && ../.venv/bin/pytest -q", ["m.py"], tmp_path, tmp_path / "io")
    assert isinstance(found, CoveragePlan), found
    assert found.command.startswith(f"cd tests && COVERAGE_CORE=sysmon {sys.executable} -c ")
    assert f"--include=../m.py {tmp_path}/tests/../.venv/bin/pytest -q" in found.command


def test_a_jest_coverage_plan_runs_in_the_folder_of_its_package(tmp_path: Path) -> None:
    """The same helper serves the Node runners: the package.json read is the folder's."""
    web = tmp_path / "web"
    web.mkdir()
    (web / "package.json").write_text(json.dumps({"scripts": {"test": "jest --ci"}}))
    change = ["web/src/price.ts", "web/src/price.test.ts"]
    found = plan("cd web && npm test", change, tmp_path, Path("/io"))
    assert isinstance(found, CoveragePlan), found
    assert found.command == (
        "cd web && npm test -- --coverage --coverageReporters=lcovonly "
        "--coverageDirectory=/io/jest --collectCoverageFrom=src/price.ts"
    )
    assert found.sources == ("web/src/price.ts",) and found.folder == "web"


def test_a_go_coverage_plan_in_a_module_of_its_own_maps_its_profile_back(tmp_path: Path) -> None:
    """`cd arc && go test ./...` (init's `go test` in a folder with its own go.mod): the go.mod
    read is the folder's, the profile's files named from it, then as the repository does."""
    (tmp_path / "arc").mkdir()
    (tmp_path / "arc" / "go.mod").write_text("module example.com/arc\n\ngo 1.22\n")
    found = plan("cd arc && go test ./...", ["arc/store/store.go"], tmp_path, Path("/io"))
    assert isinstance(found, CoveragePlan) and found.convert is not None, found
    assert found.command == (
        "cd arc && go test -coverprofile=/io/cover.out -coverpkg=example.com/arc/store ./..."
    )
    assert found.sources == ("arc/store/store.go",) and found.folder == "arc"
    lcov = found.convert("mode: set\nexample.com/arc/store/store.go:3.1,4.2 1 1\n")
    assert sorted(parse_lcov(lcov, tmp_path, found.folder)) == ["arc/store/store.go"]


def test_a_shell_line_still_gets_no_plan(tmp_path: Path) -> None:
    assert plan("cd tests && python -m pytest | tee x", ["m.py"], tmp_path, tmp_path) is None


def test_lcov_paths_relative_to_the_folder_are_the_repositorys(tmp_path: Path) -> None:
    text = (
        f"SF:src/a.js\nDA:1,1\nend_of_record\nSF:{tmp_path}/web/src/b.js\nDA:1,0\n"
        "end_of_record\nSF:../lib/c.js\nDA:2,1\nend_of_record\n"
    )
    assert sorted(parse_lcov(text, tmp_path, "web")) == ["lib/c.js", "web/src/a.js", "web/src/b.js"]
    assert sorted(parse_lcov(text, tmp_path)) == ["../lib/c.js", "src/a.js", "web/src/b.js"]


def repo_with_tests(tmp_path: Path) -> Path:
    for rel in ("tests/test_ops.py", "tests/unit/test_more.py", "calc/ops.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


def test_a_pytest_rerun_names_node_ids_relative_to_the_folder(tmp_path: Path) -> None:
    """pytest rooted in the folder (`test_ops.Cls`) or above it (`tests.unit.test_more`): the
    node ids on the command line are relative to where it runs; the folder's own test paths
    give way to them, its options stay."""
    repo = repo_with_tests(tmp_path)
    command = "cd tests && python -m pytest -q unit -k x"
    ids = ["test_ops.Cls::test_a", "tests.unit.test_more::test_b[1]"]
    assert targeted_command(command, ids, repo) == (
        "cd tests && python -m pytest -q -k x test_ops.py::Cls::test_a "
        "'unit/test_more.py::test_b[1]'"
    )
    assert targeted_command(command, ["nowhere::test_c"], repo) is None
    assert targeted_command("cd tests && python -m pytest | tee x", ids, repo) is None


def test_a_unittest_command_in_a_folder_writes_junit_and_is_rerun_by_names() -> None:
    """Its JUnit-writing runner, the failing tests' `-k` patterns and the edited files' (whose
    names are the modules', from the folder), each run in the folder again."""
    command = "cd tests && python -m unittest discover -k slow"
    assert unittest_commands.junit_command(command) == (
        "cd tests && python -m codegen_unittest discover -k slow"
    )
    assert unittest_commands.targeted_command(command, ["test_ops.AddTest::test_add"]) == (
        "cd tests && python -m unittest discover -k '*test_ops.AddTest.test_add'"
    )
    assert narrowed(command, ["tests/unit/test_more.py"], [], Path("/nowhere")) == (
        "cd tests && python -m unittest discover -k 'unit.test_more.*' -k 'test_more.*'"
    )
    assert unittest_commands.junit_command("cd tests; python -m unittest") is None


def test_narrowing_to_edited_files_is_relative_to_the_folder(tmp_path: Path) -> None:
    repo = repo_with_tests(tmp_path)
    edited = ["tests/unit/test_more.py", "tests/conftest.py"]
    assert (
        narrowed("cd tests && python -m pytest -q unit", edited, [], repo)
        == "cd tests && python -m pytest -q unit/test_more.py ."
    )
    assert (
        narrowed("cd web && npx jest --ci", ["web/src/a.test.ts"], [], repo)
        == "cd web && npx jest 'src/a\\.test\\.ts' --ci"
    )
    assert narrowed("cd tests; python -m pytest", edited, [], repo) is None


def case(file: str | None) -> JUnitCase:
    return JUnitCase(
        id=Untrusted("test_ops::test_a"),
        name="test_a",
        classname="test_ops",
        file=file,
        line=3,
        outcome="failure",
        message=Untrusted(""),
        details=Untrusted(""),
        time=None,
        flaky=False,
    )


def test_a_case_file_named_from_the_folder_is_named_as_the_repository_does(
    tmp_path: Path,
) -> None:
    """pytest rooted in the folder names the file from there; rooted above it, from the
    repository's root already; a file the folder does not have, or an absolute one, stays as
    named."""
    repo = repo_with_tests(tmp_path)
    folder = Folder("tests")
    assert from_folder(case("test_ops.py"), folder, repo).file == "tests/test_ops.py"
    assert from_folder(case("tests/test_ops.py"), folder, repo).file == "tests/test_ops.py"
    assert from_folder(case("calc/ops.py"), folder, repo).file == "calc/ops.py"
    assert from_folder(case("gone.py"), folder, repo).file == "gone.py"
    assert from_folder(case("/abs/test_ops.py"), folder, repo).file == "/abs/test_ops.py"
    assert from_folder(case(None), folder, repo).file is None
