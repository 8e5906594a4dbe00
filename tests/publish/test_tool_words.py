"""The tool's own words in a post: its commands render as code spans (not as escaped
backticks), the output directory's log paths are named as files of the run's artifact, and
untrusted text around them stays escaped."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.coverage import failed
from codegen_ci.publish.proof_text import proof_note
from codegen_ci.publish.report_text import pr_body, summary_markdown
from codegen_ci.publish.tool_words import tool_words
from codegen_ci.report import ChangedLines, JUnitMissing, Proof, ProofStatus, Report, Status
from codegen_ci.runners import jest
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.workspace.proc import ProcResult


def _report(tmp_path: Path) -> Report:
    run = ProcResult("pytest", 1, 0.5, False, tmp_path / "coverage.log")
    lines = failed(run)  # the gate's own reason, with its local log path
    proof = Proof(
        status=ProofStatus.PROVEN,
        reason="1 test(s) fail on the base commit and pass with the change",
        pass_to_pass=2,
        changed_lines=lines,
    )
    assert jest.JUNIT_HINT
    r = Report(
        title="t",
        files_changed=["src/x.py"],
        proof=proof,
        junit_missing=[JUnitMissing(command="npx jest", hint=jest.JUNIT_HINT)],
    )
    r.finish(Status.SUCCESS)
    return r


def test_the_tools_commands_are_code_spans_in_the_pr_body(tmp_path: Path) -> None:
    body = pr_body(_report(tmp_path), task="fix", issue_number=None, run_url=None)
    assert "`npm install --save-dev jest-junit`" in body
    assert "`jest --ci --reporters=default --reporters=jest-junit`" in body
    assert "`validation.junit: [junit.xml]`" in body
    assert "\\`" not in body


def test_a_local_log_path_is_named_as_a_file_of_the_runs_artifact(tmp_path: Path) -> None:
    report = _report(tmp_path)
    for text in (
        pr_body(report, task="fix", issue_number=None, run_url=None),
        summary_markdown(report, run_url=None),
        proof_note(report.model_copy(update={"proof": _measured(report)})),
    ):
        said = "(see `coverage/logs/coverage.log` in the run's output or, in Actions, its artifact)"
        assert said in text and "))" not in text  # the note's parentheses, not doubled
        assert "(see coverage/logs/coverage.log)" not in text


def _measured(report: Report) -> Proof:
    assert report.proof
    reason = "no coverage report: vitest wrote no LCov (see coverage/logs/coverage.log)"
    return report.proof.model_copy(update={"reason": reason})


def test_the_text_around_code_is_escaped_and_a_lone_backtick_stays_escaped() -> None:
    assert tool_words("run `a|b` then *bold* [x](y) `") == (
        "run `a\\|b` then \\*bold\\* \\[x\\](y) \\`"
    )
    assert tool_words("`a` `b`") == "`a` `b`"
    assert tool_words("(`x`)") == "(`x`)"


def test_untrusted_text_beside_the_tools_words_stays_escaped() -> None:
    lines = ChangedLines(measured=True, total=1, covered=0, uncovered=[Untrusted("`x` *y*")])
    proof = Proof(status=ProofStatus.UNPROVEN, reason="r", changed_lines=lines)
    report = Report(title="t", proof=proof)
    report.finish(Status.SUCCESS)
    body = pr_body(report, task="`x`", issue_number=None, run_url=None)
    assert "> \\`x\\`" in body  # the task: escaped prose
    assert "`` `x` *y* ``" in body  # an untrusted id: a code span it cannot break out of
