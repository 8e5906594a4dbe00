"""Which tests a change added or edited, of the test files it wrote: every test of a new file;
in a file the base commit has, the tests whose definition the change's lines touch.

Judged from the text, by name: each block of lines the change added or replaced names the
definitions it holds (`def test_x`, `func TestX`, `fn x`, `it("...")`/`test("...")`), the
definition it sits in (the nearest line above it that defines a name, indented less), and,
for a decorator line (`@pytest.mark.parametrize(...)` with a case added), the definition it
decorates. A test of an edited file whose name none of them is was left as it was: it is not
the change's test (the proof's `not_proof` lists only the change's tests that pass on the
base commit too, not the file's hundreds of unchanged ones).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.security import guarded_read
from codegen_ci.workspace.worktree import Worktree

MAX_TEST_FILE_BYTES = 4_000_000
DEFINES = re.compile(
    r"^\s*(?:async\s+def|def|class|func(?:\s*\([^)]*\))?|fn|function)\s+([A-Za-z_]\w*)|"
    r"^\s*(?:\w+\.)?(?:it|test|describe)(?:\.\w+)?\(\s*[\"'`]([^\"'`]+)[\"'`]"
)


@dataclass(frozen=True)
class ChangedTests:
    new_files: frozenset[str]  # test files the base commit does not have: all theirs
    names: frozenset[str]  # names of the definitions the change touched in edited files

    def holds(self, case: JUnitCase, in_new_file: bool) -> bool:
        """Whether `case` (one of the change's test files') is a test the change added or
        edited; `in_new_file`: its file is one of `new_files`."""
        if in_new_file:
            return True
        name = case.name.split("[", 1)[0].split("/", 1)[0]  # parameters, Go subtests
        name = name.rsplit(" > ", 1)[-1].rsplit("::", 1)[-1].rsplit(".", 1)[-1]
        return name in self.names or case.name in self.names


def changed_tests(worktree: Worktree, test_files: Sequence[str]) -> ChangedTests:
    """The change's tests, of its test files `test_files`."""
    new: set[str] = set()
    names: set[str] = set()
    for rel in test_files:
        try:
            after = guarded_read.read_text(worktree.path, rel, max_bytes=MAX_TEST_FILE_BYTES)
        except (guarded_read.Refused, OSError):
            continue  # deleted: no test of it ran
        before = worktree.base_text(rel)
        if before is None:  # new: all its tests (by name too: a Go test's id has no file)
            new.add(rel)
            before = ""
        names |= touched(before, after)
    return ChangedTests(frozenset(new), frozenset(names))


def touched(before: str, after: str) -> set[str]:
    """The names of the definitions `after`'s added or replaced lines touch."""
    old, new = before.splitlines(), after.splitlines()
    names: set[str] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        block = new[j1:j2] or new[j1 : j1 + 1]  # a deletion: the line after it
        names.update(_name(line) for line in block if _name(line))
        if start := next((line for line in block if line.strip()), None):
            names.update(_enclosing(new[:j1], new[j2:], _indent(start), start))
    return names


def _name(line: str) -> str:
    match = DEFINES.match(line)
    return (match[1] or match[2] or "") if match else ""


def _enclosing(above: list[str], below: list[str], indent: int, start: str) -> list[str]:
    """The definitions a line indented `indent` sits in: each nearest line above it that
    defines a name, indented less than the last; a decorator's (the line itself or one it
    continues) is the definition after it."""
    if start.lstrip().startswith("@"):
        return _decorated(below)
    found: list[str] = []
    for line in reversed(above):
        if not line.strip() or _indent(line) >= indent:
            continue
        if line.lstrip().startswith("@"):
            return found + _decorated(below)
        if name := _name(line):
            found.append(name)
        indent = _indent(line)
        if indent == 0:
            break
    return found


def _decorated(below: list[str]) -> list[str]:
    name = next((n for line in below if (n := _name(line))), "")
    return [name] if name else []


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
