"""A `python -m unittest` command narrowed to some tests or test files runs just those, through
its own discovery: its start folder, top-level folder and pattern as written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codegen_ci.gate.file_selection import narrowed
from codegen_ci.gate.unittest_commands import targeted_command

PYTHON = "/usr/bin/python3"
CASES = """\
import unittest


class {name}(unittest.TestCase):
    def test_one(self):
        pass

    def test_one_more(self):
        pass

    def test_two(self):
        pass
"""


def ran(command: str, cwd: Path) -> str:
    done = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True)
    return next(line for line in done.stderr.splitlines() if line.startswith("Ran "))


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        (f"{PYTHON} -m unittest discover -s tests -t . -p 'check_*.py' -k test_o", "tests."),
        (f"{PYTHON} -m unittest discover -s tests -p 'check_*.py'", ""),  # names from tests/
    ],
)
def test_a_narrowed_unittest_command_runs_only_those_tests(
    tmp_path: Path, command: str, prefix: str
) -> None:
    for rel, name in [("tests/check_a.py", "A"), ("tests/check_b.py", "B")]:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(CASES.format(name=name))
    (tmp_path / "tests" / "__init__.py").write_text("")
    ids = [f"{prefix}check_a.A::test_one", f"{prefix}check_b.B::test_two"]

    targeted = targeted_command(command, ids)
    by_file = narrowed(command, ["tests/check_b.py"], [], tmp_path)

    assert targeted is not None and by_file is not None
    assert ran(targeted, tmp_path).startswith("Ran 2 tests")  # not test_one_more, nor B's
    assert ran(by_file, tmp_path).startswith("Ran 3 tests")  # B's, all three
