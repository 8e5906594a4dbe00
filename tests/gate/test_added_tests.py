"""Which edited test files the change only added tests to (gate/added_tests.py): a new test
appended or put between others is an addition; a line put inside an existing test, a skip
decorator, a redefinition or a changed line is an edit."""

from __future__ import annotations

import pytest

from codegen_ci.gate.added_tests import adds_only

PY = """\
import pytest


def test_a():
    assert 1 == 1


def test_b():
    assert 2 == 2
"""
GO = """\
package x

func TestA(t *testing.T) {
\tif f() != 1 {
\t\tt.Fatal("no")
\t}
}
"""
JS = """\
describe("x", () => {
  it("a", () => {
    expect(f()).toBe(1);
  });
});
"""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (PY, PY + "\n\ndef test_c():\n    assert 3 == 3\n"),  # appended
        (PY, PY.replace("def test_b", "def test_new():\n    assert 0 == 0\n\n\ndef test_b")),
        (PY, PY.replace("import pytest", "import pytest\nimport math")),  # an import
        (GO, GO + "\nfunc TestB(t *testing.T) {\n\tt.Log(1)\n}\n"),
        (
            JS,
            JS.replace(
                "  });\n});", '  });\n  it("b", () => {\n    expect(1).toBe(1);\n  });\n});'
            ),
        ),
    ],
)
def test_new_tests_are_additions(before: str, after: str) -> None:
    assert adds_only(before, after)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (PY, PY.replace("assert 2 == 2", "assert 2 == 2 or True")),  # changed
        (PY, PY.replace("    assert 1 == 1\n", "")),  # removed
        (PY, PY.replace("def test_a():\n", "def test_a():\n    return\n")),  # inside a test
        (PY, PY.replace("    assert 2 == 2\n", "    assert 2 == 2\n    pytest.skip()\n")),
        (PY, PY.replace("def test_b", "@pytest.mark.skip\ndef test_b")),  # a decorator
        (PY, PY + "\n\ndef test_a():\n    pass\n"),  # a redefinition replaces the test
        (GO, GO.replace("{\n\tif", "{\n\treturn\n\tif")),
        (JS, JS.replace('"a", () => {\n', '"a", () => {\n    return;\n')),
    ],
)
def test_edits_of_existing_tests_are_not_additions(before: str, after: str) -> None:
    assert not adds_only(before, after)


PARAMETRIZED = """\
import pytest


@pytest.mark.parametrize("y", [1, 2])
def test_c(y):
    assert y


@pytest.mark.parametrize(
    "x",
    [1, 2],
)
def test_b(x):
    assert x
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("[1, 2])", "[1, 2, 3])"),  # a case added on the decorator's line
        ("    [1, 2],\n", "    [1, 2, 3],\n"),  # on a line of its arguments
        ("    [1, 2],\n", "    [1, 2],\n    [3],\n"),  # a line of its own
        ("[1, 2])", "[0, 1, 2])"),
    ],
)
def test_a_case_added_to_a_parametrize_is_an_addition(old: str, new: str) -> None:
    assert adds_only(PARAMETRIZED, PARAMETRIZED.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("[1, 2])", "[1, 22])"),  # an existing case changed
        ("[1, 2])", "[1])"),  # one removed
        ("[1, 2])", "[1, 2, pytest.param(3, marks=pytest.mark.skip)])"),
        ("    assert y", "    assert y or True"),  # text added outside a decorator
    ],
)
def test_changing_or_removing_a_case_is_an_edit(old: str, new: str) -> None:
    assert not adds_only(PARAMETRIZED, PARAMETRIZED.replace(old, new, 1))
