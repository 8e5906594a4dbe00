"""How go test and gotestsum are asked for a cover profile of the changed packages
(runners/go.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.runners.go import coverage_command, is_go_test


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("go test ./...", "go test -coverprofile=/io/cover.out -coverpkg=a.com/x,a.com/y ./..."),
        (
            "gotestsum --junitfile junit.xml -- -count=1 ./...",
            "gotestsum --junitfile junit.xml -- -coverprofile=/io/cover.out "
            "-coverpkg=a.com/x,a.com/y -count=1 ./...",
        ),
        ("go test -coverprofile=c.out ./...", None),  # its own profile
        ("go vet ./...", None),
        ("gotestsum ./...", None),  # no `--`: where go test's flags go is gotestsum's
        ("go test ./... && echo ok", None),
    ],
)
def test_go_test_commands_write_a_profile_of_the_changed_packages(
    command: str, expected: str | None
) -> None:
    assert coverage_command(command, ["a.com/x", "a.com/y"], Path("/io")) == expected


def test_go_test_commands_are_told_apart() -> None:
    assert is_go_test("go test -race ./...") and is_go_test("gotestsum -- ./...")
    assert not is_go_test("python -m pytest") and not is_go_test("go build ./...")
