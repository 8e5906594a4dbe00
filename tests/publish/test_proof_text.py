"""The proof where people read it: the PR body's and job summary's "Proof" section, the
status comment's note, the terminal's line; test ids are escaped for Markdown."""

from __future__ import annotations

from codegen_ci.publish.proof_text import proof_line, proof_note
from codegen_ci.publish.report_text import failure_comment, pr_body, summary_markdown
from codegen_ci.report import (
    ChangedLines,
    FlakyTest,
    JUnitMissing,
    PreexistingLint,
    Proof,
    ProofStatus,
    ProvingTest,
    Report,
    Round,
    Status,
    TestTotals,
)
from codegen_ci.security.untrusted import Untrusted


def report(proof: Proof | None) -> Report:
    r = Report(title="t", files_changed=["src/x.py"], proof=proof)
    r.finish(Status.SUCCESS)
    return r


PROVEN = Proof(
    status=ProofStatus.PROVEN,
    reason="1 test(s) fail on the base commit and pass with the change",
    fail_to_pass=[
        ProvingTest(
            id=Untrusted("tests.test_x::test_y"), file="tests/test_x.py", line=7, on_base="failure"
        )
    ],
    pass_to_pass=12,
)
UNPROVEN = Proof(
    status=ProofStatus.UNPROVEN,
    reason="none of the tests the change adds or edits fails on the base commit: 1 of them pass "
    "there",
    pass_to_pass=3,
    not_proof=[Untrusted("**x**")],
)


def test_a_proven_run_names_each_test_and_its_place_in_the_pr_body_and_summary() -> None:
    for text in (
        pr_body(report(PROVEN), task="fix", issue_number=None, run_url=None),
        summary_markdown(report(PROVEN), run_url=None),
    ):
        assert "Proof\n\n✅ **proven**" in text
        assert "- `tests.test_x::test_y` at `tests/test_x.py:7` (failure on the base)" in text
        assert "12 test(s) that pass on the base commit still pass." in text
    assert "Proof: ✅ **proven** (`tests.test_x::test_y`)" in proof_note(report(PROVEN))
    assert proof_line(report(PROVEN)) == (
        "proof: proven (1 test(s) fail on the base commit and pass with the change: "
        "tests.test_x::test_y)"
    )


def test_an_unproven_run_says_so_everywhere_people_read() -> None:
    body = pr_body(report(UNPROVEN), task="fix", issue_number=None, run_url=None)
    assert "## Proof\n\n⚠️ **unproven**" in body
    # the change's tests that pass on the base too are named, in code spans
    assert "Tests the change adds or edits that pass on the base commit too: `**x**`" in body
    assert "⚠️ **unproven**" in summary_markdown(report(UNPROVEN), run_url=None)
    assert "Proof: ⚠️ **unproven** (`**x**`)" in proof_note(report(UNPROVEN))
    assert proof_line(report(UNPROVEN)) == (
        "proof: unproven (none of the tests the change adds or edits fails on the base commit: "
        "1 of them pass there: **x**)"
    )


def test_a_run_without_proof_shows_no_section() -> None:
    assert "Proof" not in pr_body(report(None), task="fix", issue_number=None, run_url=None)
    assert proof_line(report(None)) == proof_note(report(None)) == ""


def test_flaky_tests_are_named_with_whose_they_are() -> None:
    proof = UNPROVEN.model_copy(
        update={
            "flaky": [
                FlakyTest(id=Untrusted("t::a"), runs=2, where="both"),
                FlakyTest(id=Untrusted("t::b"), runs=3, where="change"),
            ]
        }
    )
    for text in (
        pr_body(report(proof), task="fix", issue_number=None, run_url=None),
        proof_note(report(proof)),
    ):
        assert "Flaky (failed, then passed on a re-run; neither charged nor counted): " in text
        assert "`t::a` (flaky on the base commit too: the repository's), `t::b`" in text


def test_changed_lines_are_shown_with_the_ones_no_test_runs() -> None:
    lines = ChangedLines(measured=True, covered=2, total=3, uncovered=["src/x.py:40-44"])
    proof = PROVEN.model_copy(update={"changed_lines": lines})
    for text in (
        pr_body(report(proof), task="fix", issue_number=None, run_url=None),
        summary_markdown(report(proof), run_url=None),
        proof_note(report(proof)),
    ):
        assert (
            "Changed lines run by the tests: 2 of 3 (67%); run by no test: `src/x.py:40-44`."
            in text
        )
    why = ChangedLines(reason="measured for one test command only")
    proof = PROVEN.model_copy(update={"changed_lines": why})
    assert "not measured: measured for one test command only." in summary_markdown(
        report(proof), run_url=None
    )


def test_a_lint_that_fails_on_the_base_commit_is_named_so_beside_the_rounds() -> None:
    """more-itertools: the PR body of a success showed `mypy .` → exit 1 with nothing saying
    the untouched code fails it too (the run treats it as pre-existing)."""
    r = report(PROVEN)
    r.preexisting_lint = [PreexistingLint(command=".venv/bin/python -m mypy .", errors=["x"])]
    for text in (
        pr_body(r, task="fix", issue_number=None, run_url=None),
        summary_markdown(r, run_url=None),
        failure_comment(r, run_url=None),
    ):
        assert (
            "Lint that already fails on the base commit: `.venv/bin/python -m mypy .` "
            "(pre-existing, left to you" in text
        )
    assert "already fails" not in pr_body(report(PROVEN), task="f", issue_number=None, run_url=None)


def test_a_command_without_junit_beside_a_counted_runner_leaves_the_counts_known() -> None:
    """commander.js: `node --test` wrote JUnit (1373/1374), `npm run check:type:ts` none; the
    PR body said "tests: unknown" beside the table that counted them."""
    r = report(PROVEN)
    r.rounds = [Round(iteration=1, tests=TestTotals(total=1374, passed=1373, skipped=1))]
    r.junit_missing = [JUnitMissing(command="npm run check:type:ts", hint="a hint")]

    body = pr_body(r, task="fix", issue_number=None, run_url=None)

    assert "tests: unknown" not in body
    assert "the test counts are the other commands'" in body
    r.rounds = []
    assert "tests: unknown" in pr_body(r, task="fix", issue_number=None, run_url=None)
