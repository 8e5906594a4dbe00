"""Reading the test modules a Python test command could not import from its output: real
pytest and unittest outputs (tests/fixtures/generated/python, see its README)."""

from __future__ import annotations

import pytest
from generated_fixtures import GENERATED

from codegen_ci.gate.import_failures import Frame, collected_modules, import_failures

PYTHON = GENERATED / "python"


def output(name: str) -> str:
    return (PYTHON / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "others"),
    [
        ("missing-collect-q.out", None),  # nothing listed, no count: the output does not say
        ("missing-collect-qq.out", None),
        ("missing-collect.out", 0),  # "collected 0 items / 3 errors"
        ("missing-run.out", 0),
    ],
)
def test_each_pytest_collection_error_with_its_frames_and_exception(
    name: str, others: int | None
) -> None:
    text = output(name)
    failures = import_failures(text)

    assert [f.module for f in failures] == [
        "tests/test_area.py",
        "tests/test_circle.py",
        "tests/test_version.py",
    ]
    first = failures[0]
    assert first.frames[-2:] == (Frame("tests/test_area.py", 1), Frame("src/shapes/__init__.py", 3))
    assert first.error == "ModuleNotFoundError: No module named 'shapes._version'"
    assert collected_modules(text, failures) == others


def test_unittest_failed_imports_with_absolute_frames() -> None:
    text = output("missing-unittest.out")
    failures = import_failures(text)

    assert [f.module for f in failures] == ["test_area", "test_circle", "test_version"]
    assert failures[2].frames[-1] == Frame("/tmp/codegen-fixtures/python/src/shapes/__init__.py", 3)
    assert failures[2].error == "ModuleNotFoundError: No module named 'shapes._version'"
    assert collected_modules(text, failures) == 0  # Ran 3 tests: the three failed imports


def test_a_syntax_errors_location_is_the_deepest_frame() -> None:
    [first, *_] = import_failures(output("syntax-collect-qq.out"))

    assert first.frames[-1] == Frame("/tmp/codegen-fixtures/python/src/shapes/_version.py", 1)
    assert first.error == "SyntaxError: '(' was never closed"


def test_a_chained_exception_is_read_from_its_last_traceback() -> None:
    [first, *_] = import_failures(output("metadata-collect-qq.out"))

    assert Frame("src/shapes/__init__.py", 3) in first.frames
    assert first.error.endswith("PackageNotFoundError: No package metadata was found for shapes")


def test_a_conftest_that_cannot_load() -> None:
    [failure] = import_failures(output("conftest-collect-qq.out"))

    assert failure.conftest
    assert failure.frames == (Frame("tests/conftest.py", 1), Frame("src/shapes/__init__.py", 3))


@pytest.mark.parametrize(
    ("name", "others"),
    [("built-collect-qq.out", 2), ("built-unittest-v.out", 1)],
)
def test_modules_collected_beside_a_failing_one_are_counted(name: str, others: int) -> None:
    text = output(name)
    [failure] = import_failures(text)

    assert failure.frames[-1].path.endswith("tests/test_circle.py")
    assert failure.error.startswith("ImportError: cannot import name 'circle' from 'shapes.area'")
    assert collected_modules(text, [failure]) == others
