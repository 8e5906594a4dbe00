"""One run of a test command, as validation (gate/validation.py) and the baseline
(gate/baseline.py) both make it, and the ladder they both climb to re-run chosen tests of a
pytest command: the `codegen_first` plugin, else the command rewritten to the tests' node ids
(a `python -m unittest` command: to their names, gate/unittest_commands.py), else (the
caller's) full suite.

Where a test command's files go (`command_places`): the tool's own read-only folder (the pytest
plugin and its id list), a fresh folder only this command writes (its JUnit report, the plugin's
status), and the places a command may write besides its worktree, whose files the tool reads
only through the guarded reader.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from codegen_ci.gate import pytest_commands, unittest_commands
from codegen_ci.gate.junit.capture import run_test_command
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.pytest_commands import FirstStatus, Mode
from codegen_ci.security import guarded_read
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.proc import ProcResult


@dataclass(frozen=True)
class CommandPlaces:
    tool_dir: Path  # the tool writes, the command reads
    io_dir: Path  # fresh for this command, which writes it
    anchors: tuple[Path, ...]  # writable by commands besides the worktree (the scratch)


def command_places(sandbox: Sandbox | None, own_dir: Path, tag: str) -> CommandPlaces:
    """`own_dir`: the caller's output folder, used only when commands run unconfined by the
    caller's choice (no sandbox object at all)."""
    if sandbox is not None:
        return CommandPlaces(sandbox.tool_dir, sandbox.command_folder(tag), (sandbox.scratch,))
    scratch = own_dir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    io_dir = guarded_read.make_fresh_dir(scratch, f"{tag}-{secrets.token_hex(4)}")
    return CommandPlaces(own_dir, io_dir, (scratch,))


@dataclass(frozen=True)
class CommandRun:
    result: ProcResult
    junit: JUnitResult
    first: FirstStatus = field(default_factory=FirstStatus)  # what the plugin did, if asked
    refused: bool = False  # pytest refused the plugin: the run proves nothing


@dataclass(frozen=True)
class Runner:
    """Where and how a caller runs its test commands: in `cwd`, writing logs and JUnit copies
    under `own_dir` (`junit/`; the plugin's files in `pytest_plugin/`)."""

    cwd: Path
    validation: Validation
    own_dir: Path
    sandbox: Sandbox | None
    wrap: Sequence[str] = ()  # the sandbox's prefix for test commands

    def run(
        self,
        command: str,
        env: Mapping[str, str],
        tag: str,
        log: Path,
        *,
        first: list[str] | None = None,
        mode: Mode = "first",
    ) -> CommandRun:
        """Run `command` and parse the JUnit it wrote. `first`: these tests first (`mode`
        "first") or alone ("only"), through the `codegen_first` plugin."""
        places = command_places(self.sandbox, self.own_dir, tag)
        status_file = None
        as_unittest = unittest_commands.junit_command(command)
        if as_unittest and not self.validation.junit:  # where run_test_command looks for it
            command = as_unittest
            env = unittest_commands.prepare(env, places.tool_dir, places.io_dir / f"{tag}.xml")
        if first:
            env, status_file = pytest_commands.prepare(
                env, first, places.tool_dir, tag, mode, io_dir=places.io_dir
            )
        result, junit = run_test_command(
            command,
            self.cwd,
            env,
            self.validation,
            self.own_dir / "junit",
            tag,
            log,
            wrap=self.wrap,
            drop_dir=places.io_dir,
            anchors=places.anchors,
        )
        if status_file is None:
            return CommandRun(result, junit)
        status = pytest_commands.keep(status_file, places.tool_dir, self.own_dir)
        refused = pytest_commands.failed_to_load(status, result.excerpt(4000))
        return CommandRun(result, junit, status, refused)


Rung = Literal["plugin", "rewritten"]


@dataclass(frozen=True)
class Step:
    """The rung that ran, the command it ran, and what that run told."""

    rung: Rung
    command: str
    run: CommandRun


@dataclass
class RerunLadder:
    """Re-running chosen tests of one pytest (or unittest) command. `plugin_usable` turns
    False for the rest of the run once pytest refused the plugin (`-I`, or a tool that passed
    PYTEST_ADDOPTS on but not PYTHONPATH)."""

    plugin_usable: bool = True

    def climb(
        self,
        command: str,
        ids: list[str],
        repo: Path,
        run: Callable[[str, list[str] | None], CommandRun],
    ) -> Step | None:
        """Run `ids` of `command` through the plugin where it applies and pytest loads it
        (`run(command, ids)`), else the command rewritten to their node ids in `repo` (or names)
        (`run(rewritten, None)`); None when neither could run: the caller runs the full suite."""
        if self.plugin_usable and pytest_commands.applies(command):
            through_plugin = run(command, ids)
            if not through_plugin.refused:
                return Step("plugin", command, through_plugin)
            self.plugin_usable = False  # that run proves nothing; rewrite commands from now on
        rewritten = pytest_commands.targeted_command(
            command, ids, repo
        ) or unittest_commands.targeted_command(command, ids)
        if rewritten is None:
            return None
        return Step("rewritten", rewritten, run(rewritten, None))
