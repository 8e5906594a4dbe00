"""Which tests of an edited test file the change added or edited, by the names its changed
lines touch: an added test, an edited body, a parametrize case added on an existing line (a
one-line or a multi-line decorator), a method of a class; the file's other tests are not."""

from __future__ import annotations

import pytest

from codegen_ci.gate.changed_tests import touched

BASE = """\
import pytest


def test_a():
    assert 1


@pytest.mark.parametrize(
    "x",
    [1, 2],
)
def test_b(x):
    assert x


@pytest.mark.parametrize("y", [1, 2])
def test_c(y):
    assert y


class TestK:
    def test_d(self):
        assert 1
"""


@pytest.mark.parametrize(
    ("after", "names"),
    [
        (BASE + "\n\ndef test_new():\n    pass\n", {"test_new"}),
        (BASE.replace("def test_a():\n    assert 1", "def test_a():\n    assert 2"), {"test_a"}),
        (BASE.replace("[1, 2],", "[1, 2, 3],"), {"test_b"}),
        (BASE.replace("[1, 2])", "[1, 2, 3])"), {"test_c"}),
        (BASE.replace("        assert 1", "        assert 2"), {"TestK", "test_d"}),
        (
            'const t = require("node:test");\n\nt.test("adds", () => {});\n',
            {"adds"},
        ),
    ],
    ids=["added", "body", "multi-line-decorator", "decorator", "method", "node"],
)
def test_the_names_the_changed_lines_touch(after: str, names: set[str]) -> None:
    before = BASE if after.startswith("import pytest") else 'const t = require("node:test");\n'
    assert touched(before, after) == names
