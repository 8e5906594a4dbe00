"""pytest's doctests, counted from their files' text (gate/kept_tests.py's "weakened"): how
many examples of one doctest run, found by its JUnit id as pytest's junitxml writes it
(`pkg.mathutils::pkg.mathutils.clamp`; ids checked against a real pytest run end to end in
tests/e2e/gate/test_weakened_doctests.py), an example marked `+SKIP` not counted. The module
is read, never imported."""

from __future__ import annotations

import pytest

from codegen_ci import runners
from codegen_ci.runners.pytest import doctest_examples

FILE = "pkg/mathutils.py"
CLAMP = "pkg.mathutils::pkg.mathutils.clamp"

# A module as libraries write them: prose, an Args section, examples between paragraphs, a
# class with a documented method and a nested class, and a docstring of the module itself.
MATHUTILS = '''\
"""Small numeric helpers.

>>> clamp(7, 0, 5)
5
"""

import math


def clamp(x, lower=-math.inf, upper=math.inf):
    """Limit a value to the range from *lower* to *upper*.

    Args:
        x (int or float): the value.
        lower (int or float): the least value returned.
        upper (int or float): the greatest value returned.

    >>> clamp(2.5, 0, 5)
    2.5
    >>> clamp(-1, 0, 5)
    0
    >>> clamp(99, upper=5)
    5

    Compare numpy's ``clip``.
    """
    return min(max(x, lower), upper)


class Interval:
    """A closed interval.

    >>> Interval(0, 5).width()
    5
    """

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def width(self):
        """How wide it is.

        >>> Interval(2, 3).width()
        1
        >>> Interval(3, 3).width()
        0
        """
        return self.upper - self.lower

    class Bound:
        def is_open(self):
            """
            >>> Interval.Bound().is_open()
            False
            """
            return False


def undocumented():
    return None
'''


def edited(old: str, new: str) -> str:
    assert old in MATHUTILS, old
    return MATHUTILS.replace(old, new)


FAILING_EXAMPLE = "    >>> clamp(-1, 0, 5)\n    0\n"


def test_every_example_of_a_docstring_counts() -> None:
    assert doctest_examples(CLAMP, FILE, MATHUTILS) == 3
    assert doctest_examples("pkg.mathutils::pkg.mathutils", FILE, MATHUTILS) == 1
    assert doctest_examples("pkg.mathutils::pkg.mathutils.Interval", FILE, MATHUTILS) == 1


def test_a_deleted_example_is_one_fewer() -> None:
    assert doctest_examples(CLAMP, FILE, edited(FAILING_EXAMPLE, "")) == 2


def test_an_example_marked_skip_does_not_run() -> None:
    skipped = edited(">>> clamp(-1, 0, 5)\n", ">>> clamp(-1, 0, 5)  # doctest: +SKIP\n")
    assert doctest_examples(CLAMP, FILE, skipped) == 2
    # `-SKIP` (or another option alone) leaves it running
    unskipped = edited(">>> clamp(-1, 0, 5)\n", ">>> clamp(-1, 0, 5)  # doctest: -SKIP\n")
    assert doctest_examples(CLAMP, FILE, unskipped) == 3
    spaced = edited(
        ">>> clamp(-1, 0, 5)\n", ">>> clamp(-1, 0, 5)  # doctest: +NORMALIZE_WHITESPACE\n"
    )
    assert doctest_examples(CLAMP, FILE, spaced) == 3


def test_skip_on_every_example_runs_none() -> None:
    """pytest reports such a doctest skipped (the ids' check says so); counted, it runs 0."""
    every = MATHUTILS
    for call in (">>> clamp(2.5, 0, 5)\n", ">>> clamp(-1, 0, 5)\n", ">>> clamp(99, upper=5)\n"):
        every = every.replace(call, call.rstrip("\n") + "  # doctest: +SKIP\n")
    assert doctest_examples(CLAMP, FILE, every) == 0


def test_a_docstring_without_examples_or_taken_away_runs_none() -> None:
    start = MATHUTILS.index('    """Limit a value')
    end = MATHUTILS.index("    return min(max(x, lower), upper)")
    assert doctest_examples(CLAMP, FILE, MATHUTILS[:start] + MATHUTILS[end:]) == 0
    assert doctest_examples("pkg.mathutils::pkg.mathutils.undocumented", FILE, MATHUTILS) == 0


def test_an_example_added_is_more() -> None:
    added = edited(FAILING_EXAMPLE, FAILING_EXAMPLE + "    >>> clamp(0, 0, 5)\n    0\n")
    assert doctest_examples(CLAMP, FILE, added) == 4


def test_a_reflowed_docstring_with_the_same_examples_counts_the_same() -> None:
    """Prose rewrapped, the examples moved into one block, its indentation changed: the same
    examples, the same count."""
    start = MATHUTILS.index('    """Limit a value')
    end = MATHUTILS.index("    return min(max(x, lower), upper)")
    reflowed = '''\
    """Limit a value to the range from *lower* to *upper* (compare numpy's ``clip``).

    Args:
        x (int or float): the value. lower (int or float): the least value returned.
        upper (int or float): the greatest value returned.

    Examples::

        >>> clamp(99, upper=5)
        5
        >>> clamp(2.5, 0, 5)
        2.5
        >>> clamp(-1, 0, 5)
        0
    """
'''
    assert doctest_examples(CLAMP, FILE, MATHUTILS[:start] + reflowed + MATHUTILS[end:]) == 3


def test_methods_and_nested_classes_are_found_by_their_qualified_names() -> None:
    method = "pkg.mathutils::pkg.mathutils.Interval.width"
    nested = "pkg.mathutils::pkg.mathutils.Interval.Bound.is_open"
    assert doctest_examples(method, FILE, MATHUTILS) == 2
    assert doctest_examples(nested, FILE, MATHUTILS) == 1
    gone = edited("        >>> Interval(3, 3).width()\n        0\n", "")
    assert doctest_examples(method, FILE, gone) == 1
    assert doctest_examples(method, FILE, gone.replace("def width", "def span")) is None


def test_a_src_layout_a_package_init_and_a_junit_prefix() -> None:
    """A module of src/pkg is imported as `pkg.mathutils` (classname `src.pkg.mathutils`);
    `pkg/__init__.py` as `pkg`; pytest's JUnit prefix option puts a word before the classname."""
    assert doctest_examples("src.pkg.mathutils::pkg.mathutils.clamp", "src/" + FILE, MATHUTILS)
    init = "pkg/__init__.py"
    assert doctest_examples("pkg.__init__::pkg.clamp", init, MATHUTILS) == 3
    assert doctest_examples("pkg.__init__::pkg", init, MATHUTILS) == 1
    assert doctest_examples("nightly.pkg.mathutils::pkg.mathutils.clamp", FILE, MATHUTILS) == 3
    # a module at the root: junitxml writes one name when classname and name agree
    assert doctest_examples("mathutils", "mathutils.py", MATHUTILS) == 1


def test_a_text_file_collected_by_doctest_glob_is_one_doctest() -> None:
    text = "Usage\n=====\n\n>>> 1 + 1\n2\n\nAnd more::\n\n"
    text += "    >>> print('a')  # doctest: +SKIP\n    a\n"
    assert doctest_examples("docs.usage.rst::usage.rst", "docs/usage.rst", text) == 1
    assert doctest_examples("README.rst", "README.rst", text) == 1
    assert doctest_examples("docs.usage.rst::usage.rst", "docs/other.rst", text) is None


def test_a_test_entry_of_dunder_test() -> None:
    module = '__test__ = {"edge": """\n>>> 1\n1\n>>> 2\n2\n"""}\n'
    assert doctest_examples("pkg.mathutils::pkg.mathutils.__test__.edge", FILE, module) == 2


@pytest.mark.parametrize(
    ("test_id", "file"),
    [
        ("tests.test_mathutils::test_clamp", "tests/test_mathutils.py"),  # a test function
        ("tests.test_mathutils.TestClamp::test_low", "tests/test_mathutils.py"),
        ("pkg.other::pkg.other.clamp", FILE),  # another file's doctest
        ("pkg.mathutils::pkg.mathutils.missing", FILE),  # no such definition
    ],
)
def test_what_is_no_doctest_of_the_file_is_not_counted(test_id: str, file: str) -> None:
    assert doctest_examples(test_id, file, MATHUTILS) is None


def test_a_module_that_does_not_parse_or_a_docstring_doctest_refuses_says_nothing() -> None:
    assert doctest_examples(CLAMP, FILE, MATHUTILS + "\ndef broken(:\n") is None
    # a directive with no example to apply to (a whole docstring cannot be skipped so)
    refused = edited(
        "    >>> clamp(2.5, 0, 5)\n", "    >>> # doctest: +SKIP\n    >>> clamp(2.5, 0, 5)\n"
    )
    assert doctest_examples(CLAMP, FILE, refused) is None


def test_the_registry_asks_pytest_and_no_other_runner_counts_examples() -> None:
    assert runners.doctest_examples(CLAMP, FILE, MATHUTILS) == 3
    others = [r for r in runners.RUNNERS.values() if r.NAME != "pytest"]
    assert all(r.doctest_examples(CLAMP, FILE, MATHUTILS) is None for r in others)
