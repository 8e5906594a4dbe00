"""`cargo test` runs every test binary: the gate adds `--no-fail-fast` where the command does
not say `--fail-fast` or `--no-fail-fast` itself (runners/cargo.py `every_test`)."""

from __future__ import annotations

import pytest

from codegen_ci.runners.cargo import every_test


@pytest.mark.parametrize(
    ("command", "run"),
    [
        ("cargo test", "cargo test --no-fail-fast"),
        ("cargo test --offline", "cargo test --no-fail-fast --offline"),
        ("/usr/bin/cargo test -- --exact a", "/usr/bin/cargo test --no-fail-fast -- --exact a"),
        ("cargo +1.80 test --workspace", "cargo +1.80 test --no-fail-fast --workspace"),
        (
            "cargo test && cargo test --doc",
            "cargo test --no-fail-fast && cargo test --no-fail-fast --doc",
        ),
    ],
)
def test_each_cargo_test_gets_no_fail_fast(command: str, run: str) -> None:
    assert every_test(command) == run


@pytest.mark.parametrize(
    "command",
    [
        "cargo test --no-fail-fast",
        "cargo test -- --fail-fast",  # the user's word
        "cargo nextest run --profile ci",  # nextest's profile says it (`fail-fast`)
        "cargo test-all",
        "my-cargo test",
        "cargo build --tests",
        "python -m pytest tests",
    ],
)
def test_other_commands_run_as_written(command: str) -> None:
    assert every_test(command) == command
