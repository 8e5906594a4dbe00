"""The proof behind a run (`report.proof`, gate/proof.py) where people read it: a "Proof"
section for the pull request body and the job summary, and one line for the terminal and
the status comment. Test ids come from JUnit the change's code could shape: they are
`Untrusted` (the proof's `reason` names none), escaped for Markdown here, made inert for the
terminal line here too (and the caller's filter passes every line it prints again)."""

from __future__ import annotations

from codegen_ci.publish.markdown import code_span, escape_md
from codegen_ci.publish.tool_words import tool_words
from codegen_ci.report import ChangedLines, Proof, ProofStatus, Report
from codegen_ci.security.inert_text import for_terminal
from codegen_ci.security.untrusted import Untrusted

MAX_PROVING = 10
NAMED = 5  # tests named after the reason (the terminal line, the status comment)
_HEADLINE = {
    ProofStatus.PROVEN: "✅ **proven**",
    ProofStatus.UNPROVEN: "⚠️ **unproven**",
    ProofStatus.NOT_APPLICABLE: "➖ not measured",
}


def proof_line(report: Report) -> str:
    """`proof: proven (1 test fails on the base commit ...)`; "" when the run has none."""
    proof = report.proof
    if proof is None:
        return ""
    if not proof.reason:
        return f"proof: {proof.status}"
    named = _named(proof)
    names = f": {for_terminal(Untrusted.join(', ', named), one_line=True)}" if named else ""
    return f"proof: {proof.status} ({proof.reason}{names})"


def proof_section(report: Report, heading: str = "##") -> str:
    """`## Proof`: the verdict, each fail-to-pass test by name and place, pass to pass."""
    proof = report.proof
    if proof is None:
        return ""
    lines = [f"{heading} Proof", "", f"{_HEADLINE[proof.status]}: {tool_words(proof.reason, 600)}"]
    if proof.weakened:  # first: it is why the run is not proven
        lines.append("")
        lines += [weakened_line(t.id, t.where) for t in proof.weakened[:MAX_PROVING]]
    if proof.fail_to_pass:
        lines += ["", "Tests that fail on the base commit and pass with the change:"]
        lines += [_proving(t.id, t.where, t.on_base) for t in proof.fail_to_pass[:MAX_PROVING]]
        if len(proof.fail_to_pass) > MAX_PROVING:
            lines.append(f"- … and {len(proof.fail_to_pass) - MAX_PROVING} more (report.json)")
    elif proof.not_proof:
        shown = ", ".join(code_span(i) for i in proof.not_proof[:MAX_PROVING])
        more = len(proof.not_proof) - MAX_PROVING
        shown += f" and {more} more (report.json)" if more > 0 else ""
        lines += ["", f"Tests the change adds or edits that pass on the base commit too: {shown}"]
    lines += ["", _kept(proof)]
    if proof.changed_lines is not None:
        lines += ["", changed_lines_text(proof.changed_lines)]
    if proof.flaky:
        lines += ["", flaky_text(proof)]
    return "\n".join(lines)


def changed_lines_text(lines: ChangedLines) -> str:
    """`Changed lines run by the tests: 2 of 3 (67%); run by no test: `<file>:40-44``."""
    if not lines.measured:
        return f"Changed lines run by the tests: not measured: {tool_words(lines.reason)}."
    if not lines.total:
        return "Changed lines run by the tests: no changed line is executable."
    text = f"Changed lines run by the tests: {lines.covered} of {lines.total} ({lines.share:.0%})"
    if lines.uncovered:
        shown = ", ".join(code_span(u) for u in lines.uncovered[:MAX_PROVING])
        text += f"; run by no test: {shown}"
    return text + "."


def flaky_text(proof: Proof) -> str:
    """The flaky tests seen: failed, then passed on a re-run (never the model's, never proof)."""
    if not proof.flaky:
        return ""
    names = ", ".join(code_span(f.id) + _WHERE[f.where] for f in proof.flaky[:MAX_PROVING])
    return f"Flaky (failed, then passed on a re-run; neither charged nor counted): {names}"


_WHERE = {
    "change": "",
    "base": " (on the base commit)",
    "both": " (flaky on the base commit too: the repository's)",
}


def proof_note(report: Report) -> str:
    """`\n\nProof: ⚠️ **unproven**: why` for the status comment; "" when the run has none."""
    proof = report.proof
    if proof is None:
        return ""
    names = ", ".join(code_span(i) for i in _named(proof)[:3])
    shown = f" ({names})" if names else ""
    flaky = f"\n\n{flaky_text(proof)}" if proof.flaky else ""
    if proof.changed_lines is not None and proof.changed_lines.measured:
        flaky = f"\n\n{changed_lines_text(proof.changed_lines)}{flaky}"
    return f"\n\nProof: {_HEADLINE[proof.status]}{shown}: {tool_words(proof.reason, 400)}{flaky}"


def _named(proof: Proof) -> list[Untrusted]:
    """The tests a one-line verdict names: those that prove the change, else the change's
    tests that pass on the base commit too."""
    if proof.weakened:
        return [t.id for t in proof.weakened[:NAMED]]
    if proof.fail_to_pass:
        return [t.id for t in proof.fail_to_pass[:NAMED]]
    return proof.not_proof[:NAMED] if proof.status == ProofStatus.UNPROVEN else []


def weakened_line(test_id: Untrusted, where: str) -> str:
    """`- `t` at `f:1` as it was on the base commit fails with this change; ...`"""
    place = f" at {code_span(where)}" if where else ""
    return (
        f"- {code_span(test_id)}{place} as it was on the base commit fails with this change; "
        "the change edited it"
    )


def _proving(test_id: Untrusted, where: str, on_base: str) -> str:
    place = f" at {code_span(where)}" if where else ""
    return f"- {code_span(test_id)}{place} ({escape_md(on_base, 40)} on the base)"


def _kept(proof: Proof) -> str:
    if proof.status == ProofStatus.NOT_APPLICABLE:
        return "_No test was run on the base commit for this._"
    return f"{proof.pass_to_pass} test(s) that pass on the base commit still pass."
