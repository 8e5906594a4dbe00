"""The pull request warns of edited test files only when the change edited existing tests:
a change that adds tests (a new test file, a new test in an existing one) and fixes the code
says it adds tests. The run is real (`pipeline.execute()` on the sample repository)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.in_process import run_in_process, sample_spec
from tests.helpers.sample_repo import FIX, NO_PROOF, PYTEST, make_sample_repo

from codegen_ci.publish.report_text import pr_body
from codegen_ci.report import Status
from codegen_ci.testing.deterministic_model import call, step

TEST_FILE = "tests/test_version.py"
NEW_FILE = "tests/test_more.py"
WARNING = "Test files or test configuration were edited"
# No proof run after the passing round, no re-run of a failing one: not what these are about.
VALIDATION = {"test": [PYTEST], "timeout": 120, "proof": NO_PROOF}
NEW_TEST = """

def test_bump_minor_of_zero():
    assert str(Version.parse("0.0.1").bump_minor()) == "0.1.0"
"""


def test_a_change_that_only_adds_tests_says_so_without_the_warning(tmp_path: Path) -> None:
    sample = make_sample_repo(tmp_path)
    original = (sample.path / TEST_FILE).read_text()
    append = call("write_file", path=TEST_FILE, content=original + NEW_TEST)
    new = call(
        "write_file",
        path=NEW_FILE,
        content="from semver.version import Version\n" + NEW_TEST.replace("zero", "one"),
    )
    run = run_in_process(
        sample, sample_spec(validation=VALIDATION), [step(None, append, new, FIX), step("Done.")]
    )
    report = run.report
    assert report.status == Status.SUCCESS, run.log
    assert sorted(report.tests_touched) == sorted([TEST_FILE, NEW_FILE])
    assert sorted(report.tests_added) == sorted([TEST_FILE, NEW_FILE])
    body = pr_body(report, task="fix", issue_number=None, run_url=None)
    assert WARNING not in body
    assert "Adds tests in " in body and f"`{NEW_FILE}`" in body and f"`{TEST_FILE}`" in body


def test_a_change_to_an_existing_test_keeps_the_warning(tmp_path: Path) -> None:
    sample = make_sample_repo(tmp_path)
    weaken = call("edit_file", path=TEST_FILE, old_text='"3.5.0"', new_text='"3.5.5"')
    run = run_in_process(
        sample, sample_spec(validation=VALIDATION), [step(None, weaken), step("Done.")]
    )
    report = run.report
    assert report.tests_touched == [TEST_FILE] and report.tests_added == [], run.log
    body = pr_body(report, task="fix", issue_number=None, run_url=None)
    assert f"⚠️ **{WARNING}:** `{TEST_FILE}`" in body and "Adds tests" not in body


PARAMETRIZED_FILE = "tests/test_parse_many.py"
PARAMETRIZED = """\
import pytest

from semver.version import Version


@pytest.mark.parametrize("text", ["1.2.3", "0.1.0"])
def test_round_trip(text):
    assert str(Version.parse(text)) == text
"""


def test_a_case_added_to_a_parametrized_test_is_an_addition(tmp_path: Path) -> None:
    """A new case on the decorator's existing line: every base case is still there."""
    sample = make_sample_repo(tmp_path)
    sample.commit({PARAMETRIZED_FILE: PARAMETRIZED}, "a parametrized test")
    add_case = call(
        "edit_file", path=PARAMETRIZED_FILE, old_text='"0.1.0"]', new_text='"0.1.0", "2.0.0"]'
    )
    run = run_in_process(
        sample, sample_spec(validation=VALIDATION), [step(None, add_case, FIX), step("Done.")]
    )
    report = run.report
    assert report.status == Status.SUCCESS, run.log
    assert report.tests_added == [PARAMETRIZED_FILE]
    body = pr_body(report, task="fix", issue_number=None, run_url=None)
    assert WARNING not in body and "Adds tests in " in body
