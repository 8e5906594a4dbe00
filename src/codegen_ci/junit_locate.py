"""Where a failure happened, read from the traceback text a runner printed."""

from __future__ import annotations

import re

# Where a failure happened, as runners print it: pytest/go "path.py:12: ...", Python
# 'File "path.py", line 12', jest "(path/x.test.js:12:5)" or "at path/x.ts:12:5". Java
# frames name only a file's basename, which would mislead more than help: not matched.
_LOCATION = re.compile(
    r'^[ \t]*([^\s:()"\']+\.[A-Za-z]\w*):(\d+):'
    r'|File "([^"]+)", line (\d+)'
    r"|(?:\(|at )([^()\s]+\.[cm]?[jt]sx?):(\d+):\d+",
    re.MULTILINE,
)
_SCAN_CHARS = 8192
_LIBRARY_PARTS = ("site-packages", "node_modules", "dist-packages", "<", "node:")
_JS_INTERNAL = ("internal/",)  # node's own frames: internal/process/task_queues.js


def locate(file: str | None, line: int | None, text: str) -> tuple[str | None, int | None]:
    """The innermost traceback location in the case's own file (or, without a `file`
    attribute, in project code); the attributes when the text names none."""
    found: list[tuple[str, int]] = []
    js_found: list[tuple[str, int]] = []
    # The innermost frames are at the end; a megabyte of captured output need not be scanned.
    for match in _LOCATION.finditer(text, max(0, len(text) - _SCAN_CHARS)):
        last = match.lastindex or 2  # each alternative ends with (path)(line)
        (js_found if last == 6 else found).append((match[last - 1], int(match[last])))
    if file is not None:
        same = [ln for path, ln in found + js_found if path.endswith(file) or file.endswith(path)]
        return file, same[-1] if same else line
    ours = [loc for loc in found if not _library(loc[0])]
    if ours or found:
        return (ours or found)[-1]
    # JavaScript stacks print the innermost frame first.
    js_ours = [
        loc for loc in js_found if not _library(loc[0]) and not loc[0].startswith(_JS_INTERNAL)
    ]
    if js_ours or js_found:
        return (js_ours or js_found)[0]
    return None, line


def _library(path: str) -> bool:
    return any(part in path for part in _LIBRARY_PARTS)
