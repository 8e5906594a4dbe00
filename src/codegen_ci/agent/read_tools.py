"""The read-only tools (list_files, read_file, search_files) as functions of the worktree, the
`ToolError` every tool raises for the model to read, and the size limits on what they read.
`Toolbox` (agent/tools.py) binds them to its worktree.
"""

from __future__ import annotations

from pathlib import Path

from codegen_ci.agent.file_tools import list_tree
from codegen_ci.agent.search_tool import SearchError, search
from codegen_ci.agent.tool_schema import ListFilesArgs, ReadFileArgs, SearchFilesArgs
from codegen_ci.security import guarded_read
from codegen_ci.workspace.worktree import Worktree

MAX_READ_LINES = 400
MAX_READ_CHARS = 24_000
MAX_FILE_BYTES = 2_000_000
MAX_LIST_ENTRIES = 400


class ToolError(Exception):
    """An error the model reads as the tool's result."""


def list_files(worktree: Worktree, args: ListFilesArgs) -> str:
    root = worktree.resolve(args.path)
    if not root.is_dir():
        raise ToolError(f"'{args.path}' is not a directory")
    entries = list_tree(root, worktree.path, MAX_LIST_ENTRIES)
    return "\n".join(entries) or "(empty directory)"


def read_file(worktree: Worktree, args: ReadFileArgs) -> str:
    path = existing_file(worktree, args.path)
    lines = read_text(path, worktree.path).splitlines()
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


def search_files(worktree: Worktree, args: SearchFilesArgs) -> str:
    root = worktree.resolve(args.path or ".")
    try:
        return search(worktree.path, root, args.pattern)
    except SearchError as exc:
        raise ToolError(str(exc)) from None


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
        data = guarded_read.read_bytes(real_root, path.relative_to(real_root).as_posix(),
                                       max_bytes=MAX_FILE_BYTES)  # fmt: skip
    except (guarded_read.Refused, ValueError) as exc:
        raise ToolError(f"'{path.name}' cannot be read: {getattr(exc, 'reason', exc)}") from None
    if b"\x00" in data[:8192]:
        raise ToolError(f"'{path.name}' looks binary")
    return data.decode("utf-8", errors="replace")
