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
`def test_x` replaces the first) is an edit too. A case added to a `parametrize` decorator
(`[1, 2]` to `[1, 2, 3]`, on its line or a line of its own among its arguments) is an
addition too: every base case is still there, each existing line only gains whole elements,
and none carries `marks` (a skip). Test configuration is never "only added":
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
_PARAMETRIZE = re.compile(r"\bparametrize\(")
_MARKS = re.compile(r"\b(?:marks|skip|skipif|xfail)\b")
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
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if _adds_cases(old, i1, i2, new[j1:j2], tag):
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


def _adds_cases(old: list[str], i1: int, i2: int, added: list[str], tag: str) -> bool:
    """Whether a block only adds cases to a `parametrize` decorator: lines of its arguments
    that only gain text (`[1, 2]` to `[1, 2, 3]`) or new lines among them, no marks (a
    case added with `marks=pytest.mark.skip` could skip); every base case is still there."""
    gone = old[i1:i2]
    if tag not in ("insert", "replace") or (tag == "replace" and len(gone) != len(added)):
        return False
    if any(_MARKS.search(line) for line in added):
        return False
    for before, after in zip(gone, added, strict=False):
        ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        if any(op not in ("equal", "insert") for op, *_ in ops):
            return False
        # whole new elements (`, 3` or `0, `), not text added to a case (`2` to `22`)
        inserted = [after[j1:j2].strip() for op, _, _, j1, j2 in ops if op == "insert"]
        if any(not (text.startswith(",") or text.endswith(",")) for text in inserted):
            return False
    first = (gone or added)[0]
    if _PARAMETRIZE.search(first) and first.lstrip().startswith("@"):
        return True
    return _inside_parametrize(old[:i1], _indent(first))


def _inside_parametrize(above: list[str], indent: int) -> bool:
    """Whether a line indented `indent`, below `above`, is in a `parametrize` decorator's
    arguments: the nearest line above indented less is that decorator."""
    for line in reversed(above):
        if line.strip() and _indent(line) < indent:
            return line.lstrip().startswith("@") and bool(_PARAMETRIZE.search(line))
    return False


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
