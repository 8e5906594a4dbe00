"""cargo: `cargo test` (libtest: no JUnit, its `test name ... ok` lines) and `cargo nextest
run`, which writes JUnit where the repository's nextest config says.

nextest writes a report for the profile it runs when that profile has `[profile.<name>.junit]
path = "..."` in `.config/nextest.toml` (the workspace root's): at
`<store.dir>/<profile>/<path>`, `store.dir` being `target/nextest` unless the config says
otherwise. The profile is `--profile`/`-P` on the command line, else `NEXTEST_PROFILE`, else
`default`. A profile without a JUnit path writes none: the command's JUnit hint says how to
add one. The config is read through the caller's guarded reader: the worktree is shaped by
the model."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from codegen_ci.runners import base
from codegen_ci.runners.base import (
    EnvironmentAdvice,
    FailedAt,
    InitJUnit,
    Location,
    Read,
    Signature,
)

NAME = "cargo"
COMMAND = re.compile(r"\bcargo\b")
# a CI line that runs Rust's tests (its arguments after the runner)
CI_COMMAND = re.compile(r"^cargo\s+(?:test|nextest\s+run)\b\s*(.*)$")
# nextest writes JUnit for a profile that names a path; init adds the `ci` profile's.
NEXTEST = "cargo nextest run --profile ci"
NEXTEST_INSTALL = "cargo install cargo-nextest --locked"
NEXTEST_PROFILE = '[profile.ci.junit]\npath = "junit.xml"\n'

MARKERS: tuple[str, ...] = ("Cargo.toml",)
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(report="target/nextest/ci/junit.xml")

JUNIT_HINT: str | None = (
    "cargo: run `cargo nextest run --profile ci` with "
    '`[profile.ci.junit] path = "junit.xml"` in .config/nextest.toml (the gate then '
    "reads target/nextest/ci/junit.xml itself)"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = None
JUNIT_FILE: re.Pattern[str] | None = None

NEXTEST_RUN = re.compile(r"\bcargo\s+(?:\+\S+\s+)?nextest\s+run\b")
PROFILE = re.compile(r"\s(?:--profile|-P)(?:=|\s+)([\w.-]+)")
NEXTEST_CONFIG = ".config/nextest.toml"
STORE = "target/nextest"
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    """The JUnit file (relative to the repository) a `cargo nextest run` in `command` writes;
    [] when it runs no nextest or its profile writes no JUnit."""
    if not NEXTEST_RUN.search(command):
        return []
    match = PROFILE.search(command)
    profile = match[1] if match else env.get("NEXTEST_PROFILE") or "default"
    text = read(NEXTEST_CONFIG)
    if text is None:
        return []
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    path = _get(config, "profile", profile, "junit", "path")
    store = _get(config, "store", "dir")
    if not isinstance(path, str) or not path:
        return []
    where = PurePosixPath(store if isinstance(store, str) and store else STORE, profile, path)
    if where.is_absolute() or ".." in where.parts:
        return []
    return [str(where)]


def _get(table: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table


SIGNATURES: tuple[Signature, ...] = ()
# rustup with no toolchain where it looks (RUSTUP_HOME, by default ~/.rustup)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = EnvironmentAdvice(
    re.compile(
        r"rustup could not choose a version|no default toolchain (?:is )?configured|no "
        r"override and no default toolchain set|toolchain '[^']+' is not installed"
    ),
    "rustup found no Rust toolchain",
    "rustup looks for its toolchains in RUSTUP_HOME, by default `~/.rustup`. {home_note} Set "
    "RUSTUP_HOME (and CARGO_HOME) to yours in the run's environment, e.g. "
    "`RUSTUP_HOME={home}/.rustup CARGO_HOME={home}/.cargo codegen-ci run ...` "
    "(the toolchains they name are shown read-only), or pin one with RUSTUP_TOOLCHAIN.",
)
# the registry it tried to update (no network): CARGO_HOME is the user's to show
DOWNLOADS: tuple[EnvironmentAdvice, ...] = (
    EnvironmentAdvice(
        re.compile(r"crates\.io|Updating .*index"),
        "cargo tried to update its registry",
        "Cargo keeps its registry in CARGO_HOME, by default `~/.cargo`. {home_note} Set "
        "CARGO_HOME to yours in the run's environment (its registry is shown read-only), or "
        "run `cargo fetch` in setup.",
        command=re.compile(r"^\s*cargo"),
    ),
)
FAILED_TEST: str | None = r"test \S+ \.\.\. FAILED$"

# Where Rust tests panicked, read from plain `cargo test` output (libtest writes no JUnit; with
# cargo-nextest the JUnit cases carry the same lines, gate/junit/cases.py). Counts are not made
# up from this text: without JUnit they stay unknown; only the locations are given to the model.
# libtest prints, per failing test, `thread 'tests::adds' panicked at src/lib.rs:12:5:` (Rust
# 1.73 and later) or `thread 'tests::adds' panicked at 'message', src/lib.rs:12:5` (earlier,
# the message possibly over several lines).
PANIC = re.compile(
    r"^thread '([^'\n]{1,300})' panicked at (?:'(?:[^']|'(?!, )){0,4000}', )?"
    r"([^\s:'\"]{1,300}\.rs):(\d+):(\d+)",
    re.MULTILINE,
)
MAX_PANICS = 20
FAILED_AT_TITLE = "Rust tests that panicked"
FAILED_AT_LABEL = "panics"
# a panic in a JUnit case's text (nextest), as in libtest's output
LOCATIONS: tuple[Location, ...] = (
    Location(r"panicked at (?:'(?:[^']|'(?!, ))*', )?([^\s:'\"]+\.rs):(\d+):\d+"),
)
LIBRARY_PATHS: tuple[str, ...] = ()


def failed_at(output: str) -> list[FailedAt]:
    """The panics in `output`, in order, each test once (its first panic); the test is the
    thread's name: libtest names it after the test (`tests::adds`)."""
    seen: dict[str, FailedAt] = {}
    for match in PANIC.finditer(output):
        test, file, line = match[1], match[2], int(match[3])
        if test not in seen and len(seen) < MAX_PANICS:
            seen[test] = FailedAt(test, file.removeprefix("./"), line)
    return list(seen.values())


CONFIG_GLOBS: tuple[str, ...] = ()
ARTIFACT_GLOBS: tuple[str, ...] = ()
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ("target",)
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches


def is_checkout_cache(folder: Path) -> bool:
    """cargo's `target/`: beside a `Cargo.toml` (elsewhere `target` may be anything)."""
    return folder.name == "target" and (folder.parent / "Cargo.toml").is_file()


LIBTEST = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored|bench)\b", re.M)
DOCTEST_LINE = re.compile(r" \(line \d+\)$")  # `src/lib.rs - clamp (line 3)`: lines move
RAN_COUNT: re.Pattern[str] | None = re.compile(r"^running \d+ tests?$", re.M)


def named_tests(text: str) -> list[tuple[str, bool]]:
    """libtest's `test name ... ok`; `#[ignore]` prints `ignored`."""
    return [
        (DOCTEST_LINE.sub("", name), state == "ignored") for name, state in LIBTEST.findall(text)
    ]


totals = base.no_totals

COVERAGE = "not measured: no Rust coverage tool is run yet"
