"""Which unittest commands and ids can be narrowed (the runs themselves:
tests/e2e/gate/test_unittest_narrowed.py)."""

from __future__ import annotations

import pytest

from codegen_ci.gate.unittest_commands import targeted_command, with_files


def test_the_commands_own_k_patterns_give_way_to_the_tests_names() -> None:
    command = "python -m unittest discover -s tests -k slow -kfast -v"
    assert targeted_command(command, ["tests.test_a.T::test_x"]) == (
        "python -m unittest discover -s tests -v -k '*tests.test_a.T.test_x'"
    )


@pytest.mark.parametrize(
    ("command", "ids"),
    [
        ("python -m unittest", ["tests.test_a.T::test_x (n=3)"]),  # a subtest: its test's
        ("python -m unittest", ["unittest.loader._FailedTest::tests.test_a"]),  # did not load
        ("python -m unittest", ["setUpClass (tests.test_a.T)"]),
        ("python -m unittest", []),
        ("python -I -m unittest", ["tests.test_a.T::test_x"]),  # not run through our runner
        ("python -m unittest && mypy", ["tests.test_a.T::test_x"]),
        ("python -m unittest -- tests", ["tests.test_a.T::test_x"]),
    ],
)
def test_anything_else_runs_in_full(command: str, ids: list[str]) -> None:
    assert targeted_command(command, ids) is None


def test_a_files_module_may_be_named_from_any_of_its_folders() -> None:
    assert with_files("python -m unittest", ["src/pkg/test_a.py", "README.md"]) == (
        "python -m unittest -k 'src.pkg.test_a.*' -k 'pkg.test_a.*' -k 'test_a.*'"
    )
    assert with_files("python -m unittest", ["tests/test-data.py"]) is None
