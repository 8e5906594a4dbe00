"""Where a failure happened, read from the traceback text a runner printed."""

from __future__ import annotations

import os
import re
from pathlib import Path

# Where a failure happened, as runners print it: pytest/go "path.py:12: ...", Python
# 'File "path.py", line 12', jest "(path/x.test.js:12:5)" or "at path/x.ts:12:5", a Go
# goroutine frame "\t/abs/path/file.go:304 +0x356". Java frames name only a file's basename,
# which would mislead more than help: not matched.
_LOCATION = re.compile(
    r'^[ \t]*([^\s:()"\']+\.[A-Za-z]\w*):(\d+):'
    r'|File "([^"]+)", line (\d+)'
    r"|(?:\(|at )(?:file://)?([^()\s]+\.[cm]?[jt]sx?):(\d+):\d+"
    r"|^\t([^\s:]+\.go):(\d+)(?: \+0x[0-9a-f]+)?$",
    re.MULTILINE,
)
_SCAN_CHARS = 8192
# ... and Go's: the module cache, and GOROOT's runtime and testing frames around a panic.
_LIBRARY_PARTS = (
    "site-packages",
    "node_modules",
    "dist-packages",
    "<",
    "node:",
    "/pkg/mod/",
    "/src/runtime/",
    "/src/testing/",
)
_JS_INTERNAL = ("internal/",)  # node's own frames: internal/process/task_queues.js
_INNERMOST_FIRST = (6, 8)  # JavaScript and Go stacks print the innermost frame first


def locate(
    file: str | None, line: int | None, text: str, root: Path | None = None
) -> tuple[str | None, int | None]:
    """The innermost traceback location in the case's own file (or, without a `file`
    attribute, in project code); the attributes when the text names none. With `root`
    (the repository), a frame under it is project code and its path is made relative."""
    found: list[tuple[str, int]] = []
    stack_found: list[tuple[str, int]] = []
    # The innermost frames are at the end; a megabyte of captured output need not be scanned.
    for match in _LOCATION.finditer(text, max(0, len(text) - _SCAN_CHARS)):
        last = match.lastindex or 2  # each alternative ends with (path)(line)
        target = stack_found if last in _INNERMOST_FIRST else found
        target.append((relative(match[last - 1], root), int(match[last])))
    if file is not None:
        same = [ln for path, ln in found + stack_found if _same_file(path, file)]
        return relative(file, root), same[-1] if same else line
    ours = [loc for loc in found if not _library(loc[0], root)]
    if ours or found:
        return (ours or found)[-1]
    stack_ours = [loc for loc in stack_found if not _library(loc[0], root)]
    if stack_ours or stack_found:
        return (stack_ours or stack_found)[0]
    return None, line


def relative(path: str, root: Path | None) -> str:
    """`path` relative to `root` when it lies inside it (what the model can pass to
    `read_file`); unchanged otherwise."""
    if root is None or not Path(path).is_absolute():
        return path
    for base in {str(root), os.path.realpath(root)}:
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _same_file(path: str, file: str) -> bool:
    return path.endswith(file) or file.endswith(path)


def _library(path: str, root: Path | None) -> bool:
    # Given the repository, a path still absolute after `relative` lies outside it (GOROOT,
    # a global node install, the Python installation): never project code.
    outside = root is not None and Path(path).is_absolute()
    return outside or path.startswith(_JS_INTERNAL) or any(p in path for p in _LIBRARY_PARTS)
