"""A test command narrowed to the tests of some files, per runner (gate/file_selection.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

from codegen_ci.gate.file_selection import narrowed


def tree_with(tmp_path: Path, *files: str) -> Path:
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


def test_pytest_runs_the_files_instead_of_the_commands_paths(tmp_path: Path) -> None:
    tree = tree_with(tmp_path, "tests/test_a.py", "tests/conftest.py")
    command = "python -m pytest -q -p no:cacheprovider tests"

    got = narrowed(command, ["tests/test_a.py"], [], tree)

    assert got == "python -m pytest -q -p no:cacheprovider tests/test_a.py"
    # a conftest stands for its folder
    got = narrowed(command, ["tests/conftest.py"], [], tree)
    assert got == "python -m pytest -q -p no:cacheprovider tests"


def test_jest_gets_the_files_as_escaped_path_patterns(tmp_path: Path) -> None:
    got = narrowed("npx jest --ci --reporters default", ["src/sum.test.js"], [], tmp_path)

    assert got is not None  # before the options: `--reporters` would take them as reporters
    assert shlex.split(got) == [
        "npx",
        "jest",
        r"src/sum\.test\.js",
        "--ci",
        "--reporters",
        "default",
    ]


def test_vitest_gets_the_files_as_filters(tmp_path: Path) -> None:
    files = ["test/a.test.ts", "test/b.test.ts"]
    got = narrowed("npx vitest run --reporter=junit", files, [], tmp_path)

    assert got == "npx vitest run test/a.test.ts test/b.test.ts --reporter=junit"


def test_go_test_gets_a_run_pattern_of_the_files_tests(tmp_path: Path) -> None:
    got = narrowed("go test ./...", ["calc/calc_test.go"], ["TestAdd", "TestSub"], tmp_path)

    assert got is not None
    assert shlex.split(got) == ["go", "test", "-run", "^(TestAdd|TestSub)$", "./..."]


def test_gotestsum_gets_the_pattern_after_its_separator(tmp_path: Path) -> None:
    files, names = ["a_test.go"], ["TestA"]
    with_packages = narrowed("gotestsum --junitfile r.xml -- ./...", files, names, tmp_path)
    alone = narrowed("gotestsum --junitfile r.xml", files, names, tmp_path)

    assert with_packages is not None and alone is not None
    assert shlex.split(with_packages)[-4:] == ["--", "-run", "^(TestA)$", "./..."]
    assert shlex.split(alone)[-4:] == ["--", "-run", "^(TestA)$", "./..."]


def test_what_cannot_be_narrowed_runs_in_full(tmp_path: Path) -> None:
    """None: the caller runs the command as it is (always correct, only slower)."""
    assert narrowed("npm test", ["a.test.js"], [], tmp_path) is None
    assert narrowed("cargo test", ["tests/it.rs"], [], tmp_path) is None
    assert narrowed("go test -run TestX ./...", ["a_test.go"], ["TestA"], tmp_path) is None
    assert narrowed("go test ./...", ["a_test.go"], [], tmp_path) is None  # no test declared
    assert narrowed("pytest tests | tee log", ["tests/test_a.py"], [], tmp_path) is None
