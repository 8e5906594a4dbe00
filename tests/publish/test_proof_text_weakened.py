"""An edited test whose base version fails with the change, where people read the proof: the
PR body's Proof section, the status comment, the terminal line."""

from __future__ import annotations

from codegen_ci.publish.proof_text import proof_line, proof_note
from codegen_ci.publish.report_text import pr_body
from codegen_ci.report import Proof, ProofStatus, Report, Status, WeakenedTest
from codegen_ci.security.untrusted import Untrusted

WEAKENED = Proof(
    status=ProofStatus.UNPROVEN,
    reason="1 existing test(s) as they were on the base commit fail with this change; the "
    "change edited them",
    weakened=[
        WeakenedTest(
            id=Untrusted("tests.test_xmltodict::test_force_list_basic"),
            file="tests/test_xmltodict.py",
            line=12,
            outcome="failure",
        )
    ],
)


def test_a_weakened_test_is_named_plainly_in_the_pr_body_status_and_terminal() -> None:
    report = Report(title="t", files_changed=["xmltodict.py"], proof=WEAKENED)
    report.finish(Status.SUCCESS)

    body = pr_body(report, task="fix", issue_number=None, run_url=None)

    assert "⚠️ **unproven**" in body
    assert (
        "- `tests.test_xmltodict::test_force_list_basic` at `tests/test_xmltodict.py:12` as it "
        "was on the base commit fails with this change; the change edited it"
    ) in body
    assert "(`tests.test_xmltodict::test_force_list_basic`)" in proof_note(report)
    line = proof_line(report)
    assert line.startswith("proof: unproven (1 existing test(s) as they were on the base commit")
    assert line.endswith(": tests.test_xmltodict::test_force_list_basic)")
