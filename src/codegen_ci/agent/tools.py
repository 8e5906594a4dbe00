"""The six tools the model works through. Names and argument names are fixed by docs/contract.md;
the JSON schemas are derived from the pydantic argument models (tools_schema). Every error
(bad path, malformed arguments, unknown tool, no match) is returned as the tool's result
text: a tool call never ends the run. The read-only tools live in agent/read_tools.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codegen_ci.agent import read_tools as tools_read
from codegen_ci.agent.file_tools import closest
from codegen_ci.agent.read_tools import ToolError, read_text
from codegen_ci.agent.tool_schema import (
    EditFileArgs,
    ListFilesArgs,
    ReadFileArgs,
    RunCommandArgs,
    SearchFilesArgs,
    ToolArgs,
    WriteFileArgs,
    function_schema,
)
from codegen_ci.report import Refusal
from codegen_ci.workspace.paths import is_test_path
from codegen_ci.workspace.paths import PathRefused
from codegen_ci.workspace.worktree import Worktree

MAX_RESULT_CHARS = 30_000  # any tool's result; run_command's is cut much shorter first

CommandRunner = Callable[[str], str]


@dataclass
class Toolbox:
    """The tools bound to one worktree."""

    worktree: Worktree
    run_shell: CommandRunner
    protect_tests: bool = False
    refusals: list[Refusal] = field(default_factory=list)
    tests_touched: set[str] = field(default_factory=set)
    calls: int = 0

    def schemas(self) -> list[dict[str, Any]]:
        return [function_schema(name, model) for name, (model, _) in self._table().items()]

    def call(self, name: str, raw_arguments: str) -> str:
        """Run one tool call; never raises for anything the model did. Every result is cut
        to `MAX_RESULT_CHARS` (head and tail kept), whichever tool made it."""
        self.calls += 1
        return bounded(self._call(name, raw_arguments))

    def _call(self, name: str, raw_arguments: str) -> str:
        entry = self._table().get(name)
        if entry is None:
            return f"Error: unknown tool '{name}'. Available tools: {', '.join(self._table())}."
        model, func = entry
        try:
            data = json.loads(raw_arguments or "{}")
            if not isinstance(data, dict):
                raise ToolError("arguments must be a JSON object")
            args = model.model_validate(data)
        except json.JSONDecodeError as exc:
            return f"Error: malformed JSON arguments for {name}: {exc.msg} at position {exc.pos}."
        except RecursionError:
            return f"Error: malformed JSON arguments for {name}: nested too deeply."
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            return f"Error: invalid arguments for {name}: {problems}."
        except ToolError as exc:
            return f"Error: {exc}"
        try:
            return func(args)
        except PathRefused as exc:
            path = str(getattr(args, "path", "") or "")
            self.refusals.append(Refusal(path=path, reason=str(exc), tool=name))
            return f"Error: refused '{path}': {exc}."
        except ToolError as exc:
            return f"Error: {exc}"
        except OSError as exc:
            return f"Error: {exc.strerror or exc}."

    def _table(self) -> dict[str, tuple[type[ToolArgs], Callable[[Any], str]]]:
        return {
            "list_files": (ListFilesArgs, self.list_files),
            "read_file": (ReadFileArgs, self.read_file),
            "write_file": (WriteFileArgs, self.write_file),
            "edit_file": (EditFileArgs, self.edit_file),
            "search_files": (SearchFilesArgs, self.search_files),
            "run_command": (RunCommandArgs, self.run_command),
        }

    # --- the tools -----------------------------------------------------------------------

    def list_files(self, args: ListFilesArgs) -> str:
        return tools_read.list_files(self.worktree, args)

    def read_file(self, args: ReadFileArgs) -> str:
        return tools_read.read_file(self.worktree, args)

    def write_file(self, args: WriteFileArgs) -> str:
        path = self._writable(args.path)
        if path.is_dir():
            raise ToolError(f"'{args.path}' is a directory")
        existed = path.exists()
        if existed and not path.is_file():  # a FIFO would block the open until a reader came
            raise ToolError(f"'{args.path}' is not a regular file (a pipe, socket or device)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args.content, encoding="utf-8")
        self._wrote(path)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {self.worktree.relative(path)} ({len(args.content.splitlines())} lines)."

    def edit_file(self, args: EditFileArgs) -> str:
        path = self._writable(args.path)
        if not path.is_file():
            raise ToolError(f"'{args.path}' does not exist; use write_file to create it")
        text = read_text(path, self.worktree.path)
        if not args.old_text:
            raise ToolError("old_text is empty")
        count = text.count(args.old_text)
        if count == 0:
            raise ToolError(
                "old_text not found in " + args.path + ".\n" + closest(text, args.old_text)
            )
        if count > 1:
            starts = [m.start() for m in re.finditer(re.escape(args.old_text), text)]
            lines = ", ".join(str(text.count("\n", 0, s) + 1) for s in starts[:10])
            raise ToolError(
                f"old_text occurs {count} times (at lines {lines}); include more surrounding "
                "lines so it matches exactly once"
            )
        path.write_text(text.replace(args.old_text, args.new_text, 1), encoding="utf-8")
        self._wrote(path)
        return f"Edited {self.worktree.relative(path)}."

    def search_files(self, args: SearchFilesArgs) -> str:
        return tools_read.search_files(self.worktree, args)

    def run_command(self, args: RunCommandArgs) -> str:
        if not args.command.strip():
            raise ToolError("command is empty")
        return self.run_shell(args.command)

    # --- helpers -------------------------------------------------------------------------

    def _writable(self, user_path: str) -> Path:
        path = self.worktree.resolve(user_path, for_write=True)
        rel = self.worktree.relative(path)
        if self.protect_tests and is_test_path(rel):
            raise PathRefused("test files and test configuration are protected for this run")
        return path

    def _wrote(self, path: Path) -> None:
        rel = self.worktree.relative(path)
        self.worktree.claim(rel)
        if is_test_path(rel):
            self.tests_touched.add(rel)


def bounded(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters of this result cut ...]\n{text[-tail:]}"
