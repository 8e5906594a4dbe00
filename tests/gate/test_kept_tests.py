"""Which tests a run listed and ran, from JUnit or the runner's own lines, and what a change
removed or skipped of the base run's (gate/kept_tests.py), as the gate compares them."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.junit.cases import JUnitCase, Outcome
from codegen_ci.gate.kept_tests import SuiteTests, compare, suite_tests
from codegen_ci.report import CommandResult
from codegen_ci.security.untrusted import Untrusted

LIBTEST = """\
running 3 tests
test tests::below ... ok
test tests::above ... {above}
test tests::middle ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out

   Doc-tests clamp

running 1 test
test src/lib.rs - clamp (line {line}) ... ok
"""
UNITTEST = """\
test_above (test_calc.ClampTest.test_above) ... {above}
test_below (test_calc.ClampTest.test_below) ... ok

----------------------------------------------------------------------
Ran 2 tests in 0.001s
"""


def case(test_id: str, outcome: Outcome = "passed") -> JUnitCase:
    classname, _, name = test_id.rpartition("::")
    return JUnitCase(
        Untrusted(test_id),
        name,
        classname,
        None,
        None,
        outcome,
        Untrusted(""),
        Untrusted(""),
        None,
        False,
    )


def from_junit(*cases: JUnitCase) -> SuiteTests:
    record = CommandResult(command="t", kind="test", exit_code=0, duration_s=0, junit_tests=1)
    return suite_tests(cases, [record])


def from_output(tmp_path: Path, text: str, name: str = "log") -> SuiteTests:
    log = tmp_path / name
    log.write_text(text)
    record = CommandResult(
        command="cargo test", kind="test", exit_code=0, duration_s=0, output_path=str(log)
    )
    return suite_tests([], [record])


def test_a_removed_and_a_skipped_junit_case_are_named() -> None:
    base = from_junit(
        case("m::a"), case("m::b", "failure"), case("m::c"), case("m::old", "skipped")
    )
    change = from_junit(case("m::a"), case("m::b", "skipped"), case("m::old", "skipped"))

    problems = compare(base, change)

    assert [(p.key, p.how) for p in problems] == [("m::b", "skipped"), ("m::c", "removed")]


def test_added_tests_and_tests_already_skipped_on_the_base_are_fine() -> None:
    base = from_junit(case("m::a"), case("m::old", "skipped"))
    change = from_junit(case("m::a"), case("m::old", "skipped"), case("m::new"))

    assert compare(base, change) == []


def test_a_repeated_id_must_still_run_as_often() -> None:
    base = from_junit(case("m::p[x]"), case("m::p[x]"))

    [problem] = compare(base, from_junit(case("m::p[x]")))

    assert (problem.key, problem.how, problem.count) == ("m::p[x]", "removed", 1)


def test_libtest_lines_name_the_tests_and_doctests_ignore_their_line(tmp_path: Path) -> None:
    base = from_output(tmp_path, LIBTEST.format(above="ok", line=3), "base")
    change = from_output(tmp_path, LIBTEST.format(above="ignored", line=9), "change")

    assert [(p.key, p.how) for p in compare(base, change)] == [("tests::above", "skipped")]


def test_running_zero_tests_is_every_test_removed(tmp_path: Path) -> None:
    base = from_output(tmp_path, LIBTEST.format(above="ok", line=3), "base")
    change = from_output(tmp_path, "running 0 tests\n\ntest result: ok. 0 passed\n", "change")

    assert {p.how for p in compare(base, change)} == {"removed"}
    assert len(compare(base, change)) == 4


def test_unittest_verbose_lines(tmp_path: Path) -> None:
    base = from_output(tmp_path, UNITTEST.format(above="FAIL"), "base")
    change = from_output(tmp_path, UNITTEST.format(above="skipped 'later'"), "change")

    assert [(p.key, p.how) for p in compare(base, change)] == [
        ("test_calc.ClampTest.test_above", "skipped")
    ]


def test_totals_alone_count_as_one_group(tmp_path: Path) -> None:
    base = from_output(tmp_path, "...\nRan 3 tests in 0.01s\n\nOK\n", "base")
    change = from_output(tmp_path, "..s\nRan 3 tests in 0.01s\n\nOK (skipped=1)\n", "change")

    [problem] = compare(base, change)

    assert (problem.key, problem.how) == ("(the tests of `cargo test`)", "skipped")


def test_nothing_is_compared_where_a_run_names_no_test(tmp_path: Path) -> None:
    base = from_junit(case("m::a"))

    assert compare(base, from_output(tmp_path, "ok  example.com/x  0.01s\n")) == []


def test_failing_subtests_that_pass_after_the_fix_are_kept() -> None:
    """unittest (and pytest's subtests) name a subtest only when it fails: the base run lists
    `test_valid [inf-and-nan]`, the fixed run only `test_valid` (seen on tomli's suite)."""
    base = from_junit(
        case("tests.test_data.TestData::test_valid [inf-and-nan]", "failure"),
        case("tests.test_data.TestData::test_valid [common-25]", "failure"),
        case("tests.test_data.TestData::test_invalid"),
        case("m.T::test_param (n=3)", "failure"),
    )
    change = from_junit(
        case("tests.test_data.TestData::test_valid"),
        case("tests.test_data.TestData::test_invalid"),
        case("m.T::test_param"),
    )

    assert compare(base, change) == []


def test_a_test_with_failing_subtests_deleted_or_skipped_is_still_caught() -> None:
    base = from_junit(case("t.T::test_valid [inf-and-nan]", "failure"), case("t.T::test_other"))
    skipped = from_junit(case("t.T::test_valid", "skipped"), case("t.T::test_other"))
    deleted = from_junit(case("t.T::test_other"))

    assert [(p.key, p.how) for p in compare(base, skipped)] == [("t.T::test_valid", "skipped")]
    assert [(p.key, p.how) for p in compare(base, deleted)] == [("t.T::test_valid", "removed")]


def test_pytest_parameters_are_tests_of_their_own() -> None:
    """`test_x[1]` has no space before its bracket: a parameter, not a subtest."""
    base = from_junit(case("m::test_x[1]"), case("m::test_x[2]"))
    change = from_junit(case("m::test_x[1]"))

    assert [(p.key, p.how) for p in compare(base, change)] == [("m::test_x[2]", "removed")]


def test_ids_lose_the_tree_they_ran_in_as_given_and_as_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    tree = tmp_path / "link"
    cases = [
        case(f"{tree}/tests/test_a.py::test_one"),
        case(f"{real}/tests/test_a.py::test_two"),
        case("tests/test_a.py::test_three"),
    ]

    listed = suite_tests(cases, [], [tree]).listed

    assert sorted(listed) == [f"tests/test_a.py::test_{n}" for n in ("one", "three", "two")]
