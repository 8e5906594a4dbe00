"""Which unittest commands run through the JUnit-writing runner: exactly `<python> -m unittest
...`, nothing a rewrite could change the meaning of."""

from __future__ import annotations

import pytest

from codegen_ci.runners.unittest import junit_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m unittest", "python -m codegen_unittest"),
        ("python3 -m unittest -v", "python3 -m codegen_unittest -v"),
        (
            "/opt/venv/bin/python3.11 -m unittest discover -s tests -p 'check_*.py'",
            "/opt/venv/bin/python3.11 -m codegen_unittest discover -s tests -p 'check_*.py'",
        ),
        (
            "python -m unittest tests.test_a.T.test_x",
            "python -m codegen_unittest tests.test_a.T.test_x",
        ),
    ],
)
def test_a_plain_unittest_command_runs_through_the_runner(command: str, expected: str) -> None:
    assert junit_command(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "python -I -m unittest",  # an interpreter option: PYTHONPATH may be ignored
        "python -m unittest && echo done",  # shell operators
        "python -m unittest $TESTS",
        "make test",
        "python -m pytest",
        "tox -e py -- -m unittest",
        "coverage run -m unittest",
    ],
)
def test_anything_else_runs_as_written(command: str) -> None:
    assert junit_command(command) is None
