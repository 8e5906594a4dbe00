"""Where one test command's files go (gate/validation.py, gate/baseline.py): the tool's own
read-only folder (the pytest plugin and its id list), a fresh folder only this command writes
(its JUnit report, the plugin's status), and the places a command may write besides its
worktree, whose files the tool reads only through the guarded reader."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.security import guarded_read
from codegen_ci.security.sandbox import Sandbox


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
