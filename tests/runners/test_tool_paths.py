"""The tool's folders stay on a command's PYTHONPATH when the command sets its own
(runners/base.py `with_tool_path`, `keep_tool_paths`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.runners.base import TOOL_PATHS_ENV, keep_tool_paths, with_tool_path

ENV = with_tool_path(with_tool_path({"PYTHONPATH": "/user"}, Path("/t/a")), Path("/t/b c"))


def test_the_tools_folders_come_first_and_are_noted() -> None:
    assert ENV["PYTHONPATH"] == "/t/b c:/t/a:/user"
    assert ENV[TOOL_PATHS_ENV] == "/t/b c:/t/a"


@pytest.mark.parametrize(
    ("command", "run"),
    [
        ("PYTHONPATH=src python -m pytest", "PYTHONPATH=src:'/t/b c':/t/a python -m pytest"),
        ('A=1 PYTHONPATH="src:lib" pytest', "A=1 PYTHONPATH=\"src:lib\":'/t/b c':/t/a pytest"),
        ("PYTHONPATH= pytest", "PYTHONPATH='/t/b c':/t/a pytest"),
        ("python -m pytest", "python -m pytest"),
        # a command run from a folder (base.py's `in_folder`) is its plain command there
        ("cd sub && PYTHONPATH=src pytest", "cd sub && PYTHONPATH=src:'/t/b c':/t/a pytest"),
        ("cd ./sub/ && pytest", "cd ./sub/ && pytest"),
        ("cd $SUB && PYTHONPATH=src pytest", "cd $SUB && PYTHONPATH=src pytest"),
        ("FOO=PYTHONPATH=x pytest", "FOO=PYTHONPATH=x pytest"),
    ],
)
def test_a_command_setting_pythonpath_gets_the_tools_folders_after_its_own(
    command: str, run: str
) -> None:
    assert keep_tool_paths(command, ENV) == run


def test_without_tool_folders_the_command_is_unchanged() -> None:
    assert keep_tool_paths("PYTHONPATH=src pytest", {"PYTHONPATH": "/x"}) == "PYTHONPATH=src pytest"
