"""Which failures of the untouched code's run the environment caused, and what the message
says to do, from outputs real tools printed (pip with the network off, rustup with no
toolchain, go with GOPROXY=off, make and dash with a program missing): the network's kind to
allow, the sandbox's HOME and what of the user's it shows, the variable to set. A run whose
output names a failing test is the code's, whatever else it printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.gate.environment_check import SandboxView, untouched_code_cause
from codegen_ci.report import CommandKind, CommandResult, Failure, Round

PIP_OFFLINE = """\
ERROR: Could not find a version that satisfies the requirement pytest (from versions: none)
ERROR: No matching distribution found for pytest
"""
RUSTUP = """\
error: rustup could not choose a version of cargo to run, because one wasn't specified \
explicitly, and no default is configured.
help: run 'rustup default stable' to download the latest stable release of Rust and set it \
as your default toolchain.
"""
# rustup 1.28's proxy for `cargo fmt --check` in servo/rust-fnv with a rust-toolchain.toml
# pinning 1.70.0, which ~/.rustup does not hold (its stack backtrace left out)
RUSTUP_PINNED = """\
error: toolchain '1.70.0-x86_64-unknown-linux-gnu' is not installed
help: run `rustup toolchain install` to install it
"""
GO_OFF = """\
go: github.com/google/go-cmp@v0.6.0: module lookup disabled by GOPROXY=off
"""
# go 1.19 under bubblewrap with GOMODCACHE=/opt/gomodcache (shown read-only), the module not
# in it (EACCES under Landlock: `permission denied`)
GO_NOT_IN_CACHE = """\
go: downloading github.com/google/go-cmp v0.6.0
# example.com/adder
adder_test.go:6:2: mkdir /opt/gomodcache/cache/download/github.com: read-only file system
FAIL\texample.com/adder [setup failed]
"""
DASH = "{scratch}/home/.virtualenvs/x/bin/python -m pytest\n/bin/sh: 1: {scratch}/home/.virtualenvs/x/bin/python: not found\nmake: *** [Makefile:2: test] Error 127\n"  # noqa: E501
PYTEST_FAILED = """\
E   urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>
FAILED tests/test_version.py::test_bump_minor_resets_patch - AssertionError
1 failed, 2 passed
"""


def round_of(tmp: Path, text: str, kind: CommandKind = "test", command: str = "x") -> Round:
    log = tmp / f"{kind}.log"
    log.write_text(text)
    record = CommandResult(
        command=command, kind=kind, exit_code=1, duration_s=0.1, output_path=str(log)
    )
    return Round(iteration=0, commands=[record])


@pytest.fixture
def view(tmp_path: Path) -> SandboxView:
    home = tmp_path / "home"
    (home / ".rustup").mkdir(parents=True)
    return SandboxView(home, tmp_path / "sandbox" / "rw", ((home / ".rustup").resolve(),))


def test_a_download_with_the_network_off_names_validation_network(
    tmp_path: Path, view: SandboxView
) -> None:
    cause = untouched_code_cause(round_of(tmp_path, PIP_OFFLINE, "setup"), [], view)

    assert cause is not None and "network" in cause.what
    assert "`validation.network: [setup]`" in cause.advice


def test_with_the_network_allowed_the_download_itself_failed(
    tmp_path: Path, view: SandboxView
) -> None:
    cause = untouched_code_cause(round_of(tmp_path, PIP_OFFLINE), ["test"], view)

    assert cause is not None and "already lets `test` commands" in cause.advice


def test_rustup_without_a_toolchain_names_rustup_home_and_what_home_shows(
    tmp_path: Path, view: SandboxView
) -> None:
    cause = untouched_code_cause(round_of(tmp_path, RUSTUP), [], view)

    assert cause is not None and "RUSTUP_HOME" in cause.advice
    assert "only these folders are shown, read-only: ~/.rustup" in cause.advice
    assert f"not your {view.home}" in cause.advice


def test_a_pinned_toolchain_rustup_lacks_is_named_with_how_to_install_it(
    tmp_path: Path, view: SandboxView
) -> None:
    """~/.rustup is shown, so the toolchains are there: the one the repository pins is not."""
    cause = untouched_code_cause(round_of(tmp_path, RUSTUP_PINNED), [], view)

    assert cause is not None
    assert "rust-toolchain.toml" in cause.advice
    assert "`rustup toolchain install` outside the sandbox" in cause.advice


def test_go_modules_not_in_the_cache_name_gomodcache(tmp_path: Path, view: SandboxView) -> None:
    cause = untouched_code_cause(round_of(tmp_path, GO_OFF, command="go test ./..."), [], view)

    assert cause is not None and "GOMODCACHE" in cause.advice
    assert "`validation.network: [test]`" in cause.advice


def test_a_module_missing_from_the_users_module_cache_names_that_cache(
    tmp_path: Path, view: SandboxView
) -> None:
    """GOMODCACHE set to /opt/gomodcache: the advice names that cache, the one Go used, not
    Go's default `~/go/pkg/mod`, and does not ask to set GOMODCACHE, which is set."""
    text = GO_NOT_IN_CACHE
    cause = untouched_code_cause(round_of(tmp_path, text, command="go test ./..."), [], view)

    assert cause is not None and "not in the module cache" in cause.what
    assert "`/opt/gomodcache`" in cause.advice and "`go mod download`" in cause.advice
    assert "~/go/pkg/mod" not in cause.advice and "Set GOMODCACHE" not in cause.advice


def test_a_program_under_the_sandboxs_home_is_named_as_under_home(
    tmp_path: Path, view: SandboxView
) -> None:
    text = DASH.format(scratch=view.scratch)

    cause = untouched_code_cause(round_of(tmp_path, text, command="make test"), [], view)

    assert cause is not None
    assert cause.what == "`~/.virtualenvs/x/bin/python` was not found inside the sandbox"
    assert str(view.scratch) not in cause.line + cause.advice
    assert "VIRTUAL_ENV" in cause.advice


def test_a_named_failing_test_is_the_codes_whatever_else_was_printed(
    tmp_path: Path, view: SandboxView
) -> None:
    assert untouched_code_cause(round_of(tmp_path, PYTEST_FAILED), [], view) is None
    rnd = round_of(tmp_path, "")
    rnd.failures = [Failure(id="t::a", message="AssertionError: 3 != 5", kind="failure")]
    assert untouched_code_cause(rnd, [], view) is None


def test_tests_that_all_fail_for_the_network_are_the_environments(
    tmp_path: Path, view: SandboxView
) -> None:
    rnd = round_of(tmp_path, "")
    message = "URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"
    rnd.failures = [Failure(id="t::a", message=message, kind="error")]

    cause = untouched_code_cause(rnd, [], view)

    assert cause is not None and "`validation.network: [test]`" in cause.advice


def test_scratch_paths_are_named_as_the_sandboxs(view: SandboxView) -> None:
    scratch = view.scratch
    assert scratch is not None
    text = f"{scratch}/home/.cache/x {scratch}/tmp/y {scratch}/run-01/z {scratch.parent}/tool/w"

    shown = view.user_terms(text)

    assert shown == (
        "~/.cache/x $TMPDIR/y <the sandbox's scratch folder>/run-01/z <the sandbox's folder>/tool/w"
    )
