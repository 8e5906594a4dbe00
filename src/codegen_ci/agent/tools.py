"""The six tools the model works through, their argument models and schemas, and the bounded
walks and searches behind them.

Names and argument names are fixed by docs/contract.md; the JSON schemas are derived from the
pydantic argument models (`function_schema`, in the shape of OpenAI function tools). Every
error (bad path, malformed arguments, unknown tool, no match) is returned as the tool's result
text (`ToolError`): a tool call never ends the run. The size limits on what the tools read are
here too.

`search_files` is bounded: it reads regular files only and stops at a time limit. The pattern
runs on the `regex` package (PyPI, by the author of the standard library's `re` engine
revisions; `re`-compatible syntax by default) because its searches take a `timeout`: a pattern
that backtracks catastrophically (`(a|aa)+$` over a long line) ends with an error the model can
read instead of holding the run forever; `re` cannot be interrupted at all. (`regex` counts that
timeout in CPU time: on a crowded machine the wall time is longer, but bounded all the same.)
Files are found and read through the guarded reader (security/guarded_read.py): no symlink is
followed at any level, and special files (FIFOs, sockets, devices) are never read: a named
pipe would block, a device could stream without end.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codegen_ci.report import Refusal
from codegen_ci.security import guarded_read
from codegen_ci.workspace.file_kinds import is_protected_test_path
from codegen_ci.workspace.paths import PathRefused
from codegen_ci.workspace.worktree import Worktree


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListFilesArgs(ToolArgs):
    """List files and directories under a path of the repository (recursive, bounded)."""

    path: str = Field(default=".", description="Directory relative to the repository root.")


class ReadFileArgs(ToolArgs):
    """Read a text file; lines come numbered as `N<TAB>text` (the number is not file content).
    Large files come in windows: pass start_line/end_line to read more."""

    path: str = Field(description="File path relative to the repository root.")
    start_line: int | None = Field(default=None, ge=1, description="First line (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line (inclusive).")


class WriteFileArgs(ToolArgs):
    """Create or overwrite a whole file."""

    path: str = Field(description="File path relative to the repository root.")
    content: str = Field(description="The complete new file content.")


class EditFileArgs(ToolArgs):
    """Replace one exact, unique occurrence of old_text with new_text."""

    path: str = Field(description="File path relative to the repository root.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once.")
    new_text: str = Field(description="Replacement text.")


class SearchFilesArgs(ToolArgs):
    """Search file contents with a regular expression (Python syntax)."""

    pattern: str = Field(description="Regular expression.")
    path: str | None = Field(default=None, description="Directory or file to search in.")


class RunCommandArgs(ToolArgs):
    """Run a shell command in the repository root (no network assumptions, bounded time);
    returns the exit code and the head and tail of the output."""

    command: str = Field(description="Shell command.")


def function_schema(name: str, model: type[BaseModel]) -> dict[str, Any]:
    params = model.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
        if "anyOf" in prop:  # `int | None` -> a plain optional integer, which all servers accept
            kinds = [a for a in prop.pop("anyOf") if a.get("type") != "null"]
            prop.update(kinds[0])
    description = " ".join((model.__doc__ or "").split())
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": params},
    }


MAX_READ_LINES = 400
MAX_READ_CHARS = 24_000
MAX_FILE_BYTES = 2_000_000
MAX_LIST_ENTRIES = 400


class ToolError(Exception):
    """An error the model reads as the tool's result."""


# Tool arguments nested deeper than this are refused before parsing: none of ours needs more
# than two levels, and how deep `json.loads` goes before a RecursionError depends on the
# interpreter's recursion limit (which a library the process loaded may have raised).
MAX_NESTING = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def nesting(raw: str) -> int:
    """How deep the arrays and objects of the JSON text `raw` nest (its strings skipped)."""
    depth = deepest = 0
    for char in _JSON_STRING.sub("", raw):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


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
            if nesting(raw_arguments) > MAX_NESTING:
                raise RecursionError  # the same answer whatever the interpreter's limit
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
        root = self.worktree.resolve(args.path)
        if not root.is_dir():
            raise ToolError(f"'{args.path}' is not a directory")
        entries = list_tree(root, self.worktree.path, MAX_LIST_ENTRIES)
        return "\n".join(entries) or "(empty directory)"

    def read_file(self, args: ReadFileArgs) -> str:
        path = existing_file(self.worktree, args.path)
        lines = read_text(path, self.worktree.path).splitlines()
        start = (args.start_line or 1) - 1
        end = min(len(lines), args.end_line or start + MAX_READ_LINES)
        if start >= len(lines) and lines:
            raise ToolError(f"start_line {start + 1} is past the end ({len(lines)} lines)")
        out, size = [], 0
        for number in range(start, end):
            line = f"{number + 1}\t{lines[number]}"
            size += len(line) + 1
            if size > MAX_READ_CHARS:
                end = number
                break
            out.append(line)
        if end < len(lines) or start > 0:
            out.append(f"[lines {start + 1}-{end} of {len(lines)}; use start_line/end_line]")
        return "\n".join(out) if out else "(empty file)"

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
        root = self.worktree.resolve(args.path or ".")
        try:
            return search(self.worktree.path, root, args.pattern)
        except SearchError as exc:
            raise ToolError(str(exc)) from None

    def run_command(self, args: RunCommandArgs) -> str:
        if not args.command.strip():
            raise ToolError("command is empty")
        return self.run_shell(args.command)

    # --- helpers -------------------------------------------------------------------------

    def _writable(self, user_path: str) -> Path:
        path = self.worktree.resolve(user_path, for_write=True)
        rel = self.worktree.relative(path)
        if self.protect_tests and is_protected_test_path(rel):
            raise PathRefused("test files and test configuration are protected for this run")
        return path

    def _wrote(self, path: Path) -> None:
        rel = self.worktree.relative(path)
        self.worktree.claim(rel)
        if is_protected_test_path(rel):
            self.tests_touched.add(rel)


def bounded(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters of this result cut ...]\n{text[-tail:]}"


def existing_file(worktree: Worktree, user_path: str) -> Path:
    path = worktree.resolve(user_path)
    if not path.is_file():
        raise ToolError(f"'{user_path}' does not exist or is not a file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ToolError(f"'{user_path}' is larger than {MAX_FILE_BYTES} bytes")
    return path


def read_text(path: Path, root: Path) -> str:
    """The file at `path` (resolved inside the worktree `root`), read through the guarded
    reader: a link or FIFO swapped in since the path was checked is refused, not followed."""
    real_root = root.resolve()
    try:
        data = guarded_read.read_bytes(
            real_root, path.relative_to(real_root).as_posix(), max_bytes=MAX_FILE_BYTES
        )
    except (guarded_read.Refused, ValueError) as exc:
        raise ToolError(f"'{path.name}' cannot be read: {getattr(exc, 'reason', exc)}") from None
    if b"\x00" in data[:8192]:
        raise ToolError(f"'{path.name}' looks binary")
    return data.decode("utf-8", errors="replace")


PROBE_CHARS = 4000
SKIP_DIRS = {
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "dist",
    "build",
    ".nox",
    ".hypothesis",
}


def closest(text: str, old_text: str, time_limit: float = 5.0) -> str:
    """The lines of `text` most like `old_text`, numbered, so the model can correct itself."""
    lines = text.splitlines()
    old_text = old_text[:PROBE_CHARS]  # similarity is quadratic in the worst case
    want = old_text.splitlines() or [old_text]
    size = max(1, len(want))
    best, best_at = 0.0, 0
    deadline = time.monotonic() + time_limit
    for i in range(max(1, len(lines) - size + 1)):
        if time.monotonic() > deadline:
            break  # the best so far: a hint, not an answer
        window = "\n".join(lines[i : i + size])[: PROBE_CHARS * 2]
        ratio = difflib.SequenceMatcher(None, window, old_text)
        score = ratio.quick_ratio() and ratio.ratio()
        if score > best:
            best, best_at = score, i
    lo, hi = max(0, best_at - 2), min(len(lines), best_at + size + 2)
    shown = "\n".join(f"{n + 1}\t{lines[n]}" for n in range(lo, hi))
    return f"Closest lines ({best:.0%} similar; copy text exactly, without line numbers):\n{shown}"


def list_tree(root: Path, repo: Path, limit: int, time_limit: float = 10.0) -> list[str]:
    entries: list[str] = []
    deadline = time.monotonic() + time_limit
    for dirpath, dirnames, filenames in os.walk(root):
        if time.monotonic() > deadline:
            return [*entries, f"[stopped after {time_limit:g}s; list a subdirectory]"]
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        base = Path(dirpath)
        for name in sorted(n for n in filenames if n != ".git"):  # a worktree's .git file
            entries.append((base / name).relative_to(repo).as_posix())
            if len(entries) >= limit:
                return [*entries, f"[stopped after {limit} entries; list a subdirectory]"]
    return entries


SEARCH_TIME_LIMIT_S = 5.0
MAX_SEARCH_HITS = 80


class SearchError(Exception):
    """The search could not run or finish; the message is for the model."""


def search(repo: Path, start: Path, pattern: str, time_limit: float = SEARCH_TIME_LIMIT_S) -> str:
    """Lines matching `pattern` in the files under `start` (a path inside the worktree
    `repo`), read through the guarded reader: no symlink followed, regular files only."""
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise SearchError(f"invalid regular expression: {exc}") from None
    deadline = time.monotonic() + time_limit
    hits: list[str] = []
    for rel, text in _texts(repo.resolve(), start, deadline):
        for number, line in enumerate(text.splitlines(), 1):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                found = compiled.search(line, timeout=left)
            except TimeoutError:
                stopped = (
                    f"search stopped after {time_limit:g}s (at {rel}:{number}); "
                    f"{len(hits)} matches so far. The pattern may backtrack catastrophically "
                    "(nested repetition such as (a+)+); simplify it or search a smaller path"
                )
                raise SearchError("\n".join([stopped, *hits])) from None
            if found:
                hits.append(f"{rel}:{number}: {line[:200]}")
                if len(hits) >= MAX_SEARCH_HITS:
                    return "\n".join([*hits, f"[stopped after {MAX_SEARCH_HITS} matches]"])
    return "\n".join(hits) or "No matches."


def _texts(root: Path, start: Path, deadline: float) -> Iterator[tuple[str, str]]:
    """(path, text) of each UTF-8 regular file of sane size under `start`, in name order."""
    try:
        rel = start.relative_to(root).as_posix()
    except ValueError:
        return  # outside the repository
    rel = "" if rel == "." else rel
    if rel == "" or guarded_read.is_dir(root, rel):
        infos = guarded_read.walk(root, rel, skip=frozenset(SKIP_DIRS))
        files = sorted(i.rel for i in infos if i.size <= MAX_FILE_BYTES)
    else:
        files = [rel]
    for name in files:
        if time.monotonic() > deadline:
            return  # the line loop reports the timeout
        try:
            data = guarded_read.read_bytes(root, name, max_bytes=MAX_FILE_BYTES)
        except guarded_read.Refused:
            continue  # a link, a FIFO, too large: never followed nor opened
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue
