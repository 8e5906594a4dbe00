"""The kept-tests check and pytest's own position numbers.

pytest names a parameter it cannot print (a dict, an object) `argument<position>`:
jmespath's compliance cases are `[given667-starts_with(str, 'S')-True-functions.json]`,
its cases read from JSON files. On jmespath/jmespath.py a right fix that
added one compliance case before the others was refused for "removing" every later case, and
deleting the two failing cases was reported as a hundred removed tests, the model told to
restore tests that were all still there. Ids are real pytest ids, made by a real pytest run
of a parametrized test (below), not written by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codegen_ci.gate.junit.parse import parse_files
from codegen_ci.gate.kept_tests import SuiteTests, compare, suite_tests

TEST = """import pytest

CASES = {cases}

@pytest.mark.parametrize("given, expression, expected", [
    ({{"str": "Str"}}, e, r) for e, r in CASES
] + [({{"str": "x"}}, "abs(-1)", 1), ({{"str": "x"}}, "to_array(str)", ["x"])])
def test_expression(given, expression, expected):
    {body}

@pytest.mark.parametrize("case", [{{"n": i}} for i in range({plain})])
def test_plain(case):
    pass

@pytest.mark.parametrize("name", {named!r})
def test_named(name):
    pass
"""
BASE = [("starts_with(str, 'S')", True), ("starts_with(str, 'St')", True), ("length(str)", 3)]


def suite(
    tmp_path: Path,
    cases: list[tuple[str, object]],
    *,
    plain: int = 3,
    named: tuple[str, ...] = ("case1", "case2"),
    body: str = "pass",
) -> SuiteTests:
    """The tests a real pytest run of the parametrized file lists (and runs)."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    text = TEST.format(cases=repr(cases), plain=plain, named=named, body=body)
    (folder / "test_compliance.py").write_text(text)
    junit = folder / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    return suite_tests(parse_files([junit]).cases, [])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> SuiteTests:
    """The base commit's suite, one run for the module."""
    return suite(tmp_path_factory.mktemp("base"), BASE)


def test_a_case_added_before_the_others_removes_nothing(tmp_path: Path, base: SuiteTests) -> None:
    added = suite(tmp_path, [("starts_with(str, '')", True), *BASE], plain=4)

    assert any("given0-starts_with(str, '')" in i for i in added.listed)  # renumbered, really
    # a second argument pytest numbered (a list): the same position, in the same id
    assert any("to_array(str)-expected5]" in i for i in added.listed)
    assert compare(base, added) == []


def test_the_deleted_case_is_named_not_the_ones_renumbered_after_it(
    tmp_path: Path, base: SuiteTests
) -> None:
    deleted = suite(tmp_path, BASE[1:], plain=2)

    problems = compare(base, deleted)

    assert [(p.how, p.count) for p in problems] == [("removed", 1), ("removed", 1)]
    ids = [p.key for p in problems]
    assert "starts_with(str, 'S')" in ids[0] and "given0" in ids[0]
    assert "test_plain[case2]" in ids[1]  # all alike but their number: the last one is gone


def test_a_case_skipped_among_renumbered_ones_is_skipped(tmp_path: Path, base: SuiteTests) -> None:
    body = "if expression == \"starts_with(str, 'St')\":\n        pytest.skip('flaky')"
    skipped = suite(tmp_path, [("starts_with(str, '')", True), *BASE], body=body)

    [problem] = compare(base, skipped)

    assert problem.how == "skipped" and "given1-starts_with(str, 'St')" in problem.key


def test_ids_given_by_hand_keep_their_numbers(tmp_path: Path, base: SuiteTests) -> None:
    """`ids` the test wrote (`case1`, `case2`: not 0..n-1) are names: deleting `case2` and
    adding `case3` removes `case2`, as before."""
    swapped = suite(tmp_path, BASE, named=("case1", "case3"))

    [problem] = compare(base, swapped)

    assert problem.how == "removed" and problem.key.endswith("test_named[case2]")
