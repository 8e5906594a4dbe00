"""Plain `cargo test`'s own output read as test cases (runners/cargo.py, `libtest_cases`), on
outputs of real runs (tests/fixtures/generated/cargo: rustup's cargo 1.95 and Debian's 1.65)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.runners.cargo import LibtestCase, failed_at, libtest_cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "generated" / "cargo"
VERSIONS = ["1.95", "1.65"]


def read(version: str) -> str:
    return (FIXTURES / f"cargo-test-{version}.out").read_text(encoding="utf-8")


def outcomes(cases: list[LibtestCase]) -> dict[str, str]:
    return {f"{c.target}::{c.name}": c.outcome for c in cases}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_test_of_every_binary_is_named_with_its_outcome(version: str) -> None:
    cases = libtest_cases(read(version))
    crate = "demo_crate" if version == "1.95" else "demo-crate"
    assert outcomes(cases) == {
        "src/lib.rs::tests::adds": "failure",
        "src/lib.rs::tests::zero": "passed",
        "src/lib.rs::tests::slow": "skipped",  # #[ignore]
        "src/lib.rs::tests::panics": "passed",  # `- should panic` is not part of the name
        "tests/more.rs::more_adds": "failure",
        f"Doc-tests {crate}::src/lib.rs - add": "failure",  # `(line 3)` moves: left out
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_a_failing_test_carries_its_panic_and_message(version: str) -> None:
    adds = next(c for c in libtest_cases(read(version)) if c.name == "tests::adds")
    assert adds.details.startswith("thread 'tests::adds'")
    assert "src/lib.rs:16:9" in adds.details
    assert "two and two" in adds.message
    assert "assertion" in adds.message and "left" in adds.message and "4" in adds.message
    more = next(c for c in libtest_cases(read(version)) if c.name == "more_adds")
    assert "tests/more.rs:3:5" in more.details
    assert "tests::adds" not in more.details  # each section is its own test's


@pytest.mark.parametrize("version", VERSIONS)
def test_passing_tests_carry_no_message(version: str) -> None:
    zero = next(c for c in libtest_cases(read(version)) if c.name == "tests::zero")
    assert (zero.message, zero.details) == ("", "")


def test_the_thread_id_of_newer_rust_does_not_hide_the_panic() -> None:
    places = [(p.test, p.file, p.line) for p in failed_at(read("1.95"))]
    assert ("tests::adds", "src/lib.rs", 16) in places
    assert ("more_adds", "tests/more.rs", 3) in places


def test_test_lines_without_a_libtest_summary_are_not_cases() -> None:
    assert libtest_cases("test something ... ok\n") == []


def test_an_older_cargos_binary_header_names_the_binary() -> None:
    text = (
        "     Running target/debug/deps/more-ef6157ddcbfa5261\n\nrunning 1 test\n"
        "test more_adds ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n"
    )
    assert outcomes(libtest_cases(text)) == {"more::more_adds": "passed"}


def test_a_workspaces_second_package_is_told_apart_by_its_name() -> None:
    """Every package has its `src/lib.rs` and maybe `tests/integration.rs`: one id each."""
    cases = libtest_cases((FIXTURES / "cargo-test-workspace-1.95.out").read_text())
    assert outcomes(cases) == {
        "src/lib.rs::tests::it_works": "passed",
        "tests/integration.rs::works": "passed",
        "src/lib.rs (b)::tests::it_works": "passed",
        "tests/integration.rs (b)::works": "passed",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_cargo_verbose_names_each_binary_by_its_path_in_backticks(version: str) -> None:
    """`cargo test --verbose` (servo/rust-fnv's CI runs it so) heads each test binary with
    "Running `/abs/target/debug/deps/demo_crate-<hash>`" and prints every rustc and rustdoc
    command it runs the same way: the binary's name without its hash is the target, as with
    an older cargo, and the compiler's lines name no test binary."""
    text = (FIXTURES / f"cargo-test-verbose-{version}.out").read_text(encoding="utf-8")
    crate = "demo_crate" if version == "1.95" else "demo-crate"
    assert outcomes(libtest_cases(text)) == {
        "demo_crate::tests::adds": "failure",
        "demo_crate::tests::zero": "passed",
        "demo_crate::tests::slow": "skipped",
        "demo_crate::tests::panics": "passed",
        "more::more_adds": "failure",
        f"Doc-tests {crate}::src/lib.rs - add": "failure",
    }


def test_a_panic_the_test_catches_is_not_its_failure() -> None:
    """bluss/scopeguard's `test_defer_success_2` panics in a closure it catches, on purpose
    (`failure`), then fails its own assertion: the message is the assertion's."""
    text = (FIXTURES / "cargo-test-scopeguard-1.95.out").read_text(encoding="utf-8")
    two = next(c for c in libtest_cases(text) if c.name == "tests::test_defer_success_2")
    assert two.message == "assertion `left == right` failed left: 1 right: 0"
    assert "src/lib.rs:526:9" in two.details  # where the gate locates it
