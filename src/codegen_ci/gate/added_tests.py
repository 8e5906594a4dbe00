"""Which of the test files a change edited it only added tests to: a new test file, or new
lines that leave every existing line, and every existing test, as it was. The pull request
warns of the others (an existing test changed or removed) and says of these that the change
adds tests, which is what a task usually asks for.

"Only added" is judged from the text, conservatively: every line of the base commit's file
is kept, in order, and each block of added lines starts a definition of its own rather than
sitting inside an existing one. A block is inside when the kept line before it opens a body
(it ends with `:`, `{`, `(` or `=>`) or, at the same indentation, is a statement of that body
rather than the end of one (a closing `}`, `)` or `]`, or a top-level line); a block that ends
in a decorator (`@pytest.mark.skip`) or defines a name the file already defines (a second
`def test_x` replaces the first) is an edit too. Test configuration is never "only added":
a line added there can deselect tests.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from codegen_ci.security import guarded_read
from codegen_ci.workspace.file_kinds import is_test_file
from codegen_ci.workspace.worktree import Worktree

MAX_TEST_FILE_BYTES = 4_000_000
_OPENS = (":", "{", "(", "=>", "[", ",", "\\")
_CLOSES = ("}", ")", "]")
_DEFINES = re.compile(
    r"^\s*(?:async\s+def|def|class|func(?:\s*\([^)]*\))?|fn|function)\s+([A-Za-z_]\w*)"
)


def only_added(worktree: Worktree, paths: Iterable[str]) -> list[str]:
    """Of `paths` (test files and test configuration the change wrote), the test files it
    only added tests to."""
    added = []
    for rel in paths:
        if not is_test_file(rel):
            continue
        try:
            after = guarded_read.read_text(worktree.path, rel, max_bytes=MAX_TEST_FILE_BYTES)
        except (guarded_read.Refused, OSError):
            continue  # deleted, or not a regular file: not an addition
        before = worktree.base_text(rel)
        if before is None or adds_only(before, after):
            added.append(rel)
    return added


def adds_only(before: str, after: str) -> bool:
    """Whether `after` is `before` with new definitions added and nothing else changed."""
    old, new = before.splitlines(), after.splitlines()
    defined = {m.group(1) for line in old if (m := _DEFINES.match(line))}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert":
            return False
        block = [line for line in new[j1:j2] if line.strip()]
        if not block:
            continue
        prev = next((line for line in reversed(old[:i1]) if line.strip()), None)
        if not _starts_own_definition(prev, block) or block[-1].lstrip().startswith("@"):
            return False
        if any((m := _DEFINES.match(line)) and m.group(1) in defined for line in block):
            return False
    return True


def _starts_own_definition(prev: str | None, block: list[str]) -> bool:
    if prev is None:
        return True
    if prev.rstrip().endswith(_OPENS):
        return False
    depth, prev_depth = _indent(block[0]), _indent(prev)
    if depth < prev_depth:
        return True
    return depth == prev_depth and (prev.lstrip().startswith(_CLOSES) or depth == 0)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
