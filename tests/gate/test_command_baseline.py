"""The one line that says why a command failed (gate/command_baseline.py, `summary_line`),
on output real tools wrote (tests/fixtures/generated)."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.command_baseline import summary_line

CARGO = Path(__file__).resolve().parents[1] / "fixtures" / "generated" / "cargo"


def test_rustfmt_check_is_summed_up_by_where_its_diff_is() -> None:
    """`cargo fmt --check` (servo/rust-fnv's and bluss/scopeguard's CI lint) ends with a
    coloured ` }`; its line that says what is wrong is `Diff in <file>:<line>:`."""
    text = (CARGO / "cargo-fmt-check-1.95.out").read_text(encoding="utf-8")
    assert summary_line(text) == "Diff in /tmp/ct-crate-v/src/extra.rs:1:"
