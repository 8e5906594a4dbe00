"""Rust panic locations, as libtest prints them (texts from real runs: Debian's Rust 1.63 and
rustup's 1.95), from plain `cargo test` output and from nextest's JUnit."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.junit.cases import locate
from codegen_ci.gate.junit.parse import parse_files
from codegen_ci.runners import without_backtraces
from codegen_ci.runners.base import FailedAt as Panic
from codegen_ci.runners.cargo import failed_at as panic_locations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "junit" / "nextest-rs-nextest"
OLD = """running 2 tests
test tests::ok ... ok
test tests::eq ... FAILED

failures:

---- tests::eq stdout ----
thread 'tests::eq' panicked at 'assertion failed: `(left == right)`
  left: `2`,
 right: `3`', src/lib.rs:5:9
stack backtrace:
   0: rust_begin_unwind
             at /usr/src/rustc-1.63.0/library/std/src/panicking.rs:584:5
"""
NEW = """---- tests::eq stdout ----

thread 'tests::eq' panicked at src/lib.rs:5:9:
assertion `left == right` failed
  left: 2
 right: 3

---- it::works stdout ----

thread 'it::works' panicked at ./tests/it.rs:7:5:
boom
thread 'it::works' panicked at src/other.rs:1:1:
again
"""


def test_the_old_multi_line_format() -> None:
    assert panic_locations(OLD) == [Panic("tests::eq", "src/lib.rs", 5)]


def test_the_new_format_each_test_once() -> None:
    assert panic_locations(NEW) == [
        Panic("tests::eq", "src/lib.rs", 5),
        Panic("it::works", "tests/it.rs", 7),
    ]


def test_no_panic_no_location() -> None:
    assert panic_locations("test result: ok. 2 passed; 0 failed") == []


def test_a_junit_case_is_located_at_its_panic_in_either_format() -> None:
    assert locate(None, None, OLD) == ("src/lib.rs", 5)
    assert locate(None, None, NEW.split("---- it")[0]) == ("src/lib.rs", 5)


def test_nextests_junit_cases_carry_the_panics_location() -> None:
    result = parse_files([FIXTURES / "fixture-project-junit.xml"])
    located = {c.key: (c.file, c.line) for c in result.failing()}
    assert located["fixture-project::basic::test_failure_assert"] == ("tests/basic.rs", 19)


def test_a_configuration_errors_text_leaves_rusts_backtraces_out_and_keeps_the_panic() -> None:
    """RUST_BACKTRACE set: std's `stack backtrace:` frames (a real run's, rustup's 1.95) and
    anyhow's `Stack backtrace:` (rustup's own error) become one line each; the rest stays."""
    real = (Path(__file__).parents[1] / "fixtures/generated/cargo/cargo-test-1.95.out").read_text()
    rustup = (
        "error: rustup could not choose a version of cargo to run\n\nStack backtrace:\n"
        "   0: anyhow::error::<impl core::convert::From<E> for anyhow::Error>::from\n"
        "  11: __libc_start_call_main\n"
        "             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16\n"
        "  13: <unknown>\n"
    )

    shown = without_backtraces(real + rustup)

    assert "stack backtrace:" in real and "stack backtrace" not in shown.lower()
    assert "rust_begin_unwind" not in shown and "libc_start" not in shown
    assert "panicked at" in shown and "test result: FAILED" in shown
    assert shown.endswith("could not choose a version of cargo to run\n\n(backtrace left out)\n")
