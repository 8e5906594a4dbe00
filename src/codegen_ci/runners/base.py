"""What every test runner module provides (`TestRunner`), and the values its hooks return.

A runner is a module, not a class (pre-commit's `languages/`): its constants and functions are
the Protocol's members, and mypy checks the module against `TestRunner` where the registry
(`runners/__init__.py`) lists it. Runner modules import nothing of codegen_ci but this file
(and the package's shared `_node.py`, `_python.py`): what needs the worktree gets a `Read` (a
file of the repository, read by the caller through the guarded reader), a `CoverageAsk` or an
`InitAsk`."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

# A file of the repository by its relative path, read through the guarded reader; None when
# it is missing or refused.
Read = Callable[[str], str | None]

# What a signature in a command's output means: the command never ran a test. "no test
# files": no test file anywhere, asked after the others (and of a collect-only pytest run too).
StartFailure = Literal[
    "runner missing", "reporter missing", "options refused", "no tests", "no test files"
]


@dataclass(frozen=True)
class Signature:
    """A line in a test command's output that says it could not start (`means` why), unless
    the output also has a line of `unless` (one saying a test ran)."""

    pattern: re.Pattern[str]
    means: StartFailure
    unless: re.Pattern[str] | None = None

    def found(self, text: str) -> bool:
        return bool(self.pattern.search(text)) and not (self.unless and self.unless.search(text))


@dataclass(frozen=True)
class EnvironmentAdvice:
    """A line of the runner's output that says its toolchain or a download failed it, not the
    code: `what` happened, and the `advice` (`{home_note}`: what HOME looks like to the
    commands; `{home}`: the user's HOME). `command`: only for commands that match it.
    `needed`: a line that alone says a download was needed and could not happen (a cache the
    sandbox shows read-only that lacks it: Go's module cache): on the untouched code a
    configuration error whatever `validation.network` says, never a place to make writable.
    `needed_advice`: the advice then, when `needed`'s `place` group names where the runner
    looked (`{place}`: the cache it used, which the user may have chosen)."""

    pattern: re.Pattern[str]
    what: str
    advice: str
    command: re.Pattern[str] | None = None
    needed: re.Pattern[str] | None = None
    needed_advice: str = ""


@dataclass(frozen=True)
class FailedAt:
    """Where a test failed, read from the runner's own output (a command without JUnit)."""

    test: str
    file: str
    line: int


@dataclass(frozen=True)
class Location:
    """How the runner's failure text names a place (gate/junit/cases.py's `locate`): `pattern`,
    a regex with exactly two groups, the path and the line; `innermost_first`: its stacks print
    the innermost frame first (JavaScript, Go's goroutines), else last (Python)."""

    pattern: str
    innermost_first: bool = False


@dataclass(frozen=True)
class NestedCases:
    """A JUnit reporter that gives every case one `classname` (node's `test`), so only the
    nesting of its `<testsuite>` elements (one per `describe`) tells two same-named tests
    apart: such a case is named `suite > inner suite > test` (`separator`) by the suites that
    carry `suite_attribute` (the reporter's mark on the suites it wrote); a case inside any
    other suite keeps its `classname::name` id."""

    classname: str
    suite_attribute: str
    separator: str = " > "


@dataclass(frozen=True)
class Totals:
    """What a runner that names no test prints: how many ran, how many of them skipped."""

    total: int
    skipped: int


# How a test ended, as a JUnit case says it (gate/junit/cases.py's `Outcome`).
CaseOutcome = Literal["passed", "failure", "error", "skipped"]


@dataclass(frozen=True)
class ReportedCase:
    """A case of the JUnit a test command wrote, as a runner's `from_output` and `refine` are
    shown it: its classname, name, message and failure text (the repository's output:
    matched, never shown), how it ended, and where it failed (`file`, `line`: as the JUnit
    reader located it, None where it could not)."""

    classname: str
    name: str
    message: str
    details: str
    outcome: CaseOutcome
    file: str | None
    line: int | None


@dataclass(frozen=True)
class Tree:
    """The repository a runner's `refine` and `defined_at` look at (the tree the tests ran
    in, shaped by the model): `root`, its folder (for paths; its files are never opened
    directly), `read` (a file by its relative path, through the caller's guarded reader;
    None: missing or refused) and `glob` (the relative paths of the regular files a glob
    matches, found without following a symlink)."""

    root: Path
    read: Read
    glob: Callable[[str], list[str]]


class DefinedAt(NamedTuple):
    """Where a test is defined: its file (relative to the repository), the first and last
    line of its definition."""

    file: str
    first: int
    last: int


@dataclass(frozen=True)
class Ran:
    """A test command that ran, as a runner's `from_output` is given it: whether it exited 0
    (`ok`), its output (`output(max_chars)`: its head and tail, terminal escapes removed, read
    only when asked), and the cases of the JUnit reports it wrote (None: it wrote none)."""

    ok: bool
    output: Callable[[int], str]
    cases: tuple[ReportedCase, ...] | None


@dataclass(frozen=True)
class OutputCase:
    """A test case a runner read from a command's own output, for the gate a JUnit case with
    the id `classname::name`. `file`/`line`: where it failed; None for a failed case: found in
    `details` as a JUnit case's place is (gate/junit/cases.py's `locate`)."""

    classname: str
    name: str
    outcome: CaseOutcome
    message: str = ""
    details: str = ""
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class FromOutput:
    """What a runner's output adds to a command's JUnit: `cases` added to the report's (Go's
    packages that did not build), or, with `instead`, the command's whole result (plain
    `cargo test`, which writes no JUnit: its log stands as the result's one file, and no
    case at all is still a known count, 0)."""

    cases: tuple[OutputCase, ...]
    instead: bool = False


# The coverage report formats gate/coverage.py reads (diff-cover's readers); a runner whose
# tool writes another converts it to one of these (`CoveragePlan.convert`: Go's profile).
CoverageFormat = Literal["cobertura", "lcov"]


@dataclass(frozen=True)
class CoverageAsk:
    """What a runner's coverage plan is given by gate/coverage.py: the change's files that are
    not tests (`sources`), the worktree (`tree`, its files read only through `read`), the
    folder the run writes its report to (`io_dir`), the folder the harness modules a plan
    names are put in (`plugin_dir`, read-only to the run), the run's environment, and
    `python`: the interpreter a command run in a folder (the second argument) starts first
    (its own, or its script's shebang's)."""

    sources: tuple[str, ...]
    tree: Path
    io_dir: Path
    plugin_dir: Path
    env: Mapping[str, str]
    read: Read
    python: Callable[[str, Path], str | None]


@dataclass(frozen=True)
class CoveragePlan:
    """A runner's coverage run: `command` (with `env`, the whole environment; None: the run's
    own) writes `report` (relative to the io folder) in `format`, for `sources` (the changed
    files it measures). `convert`: the report's text into `format` first (kept beside the
    run's log); `plugins`: harness files the run loads, put in `CoverageAsk.plugin_dir` first
    (`<module>.py`: a module of gate/, copied; `vendor/<package>`: the tool's own installed
    package). `missing`: the reason when no report was written; `unnamed`: the reason when an
    LCov report names none of `sources` ("": read as it is); `what`: the report, as the
    reasons name it. `folder`: the repository's folder the command runs in (`cd DIR && …`),
    against which the report's relative paths are read ("": the repository's root)."""

    command: str
    report: str
    format: CoverageFormat
    sources: tuple[str, ...]
    missing: str
    env: Mapping[str, str] | None = None
    convert: Callable[[str], str] | None = None
    plugins: tuple[str, ...] = ()
    unnamed: str = ""
    what: str = "coverage report"
    folder: str = ""


@dataclass(frozen=True)
class InitAsk:
    """What a runner's answer to `codegen-ci init` is given: the repository's files (`read`,
    None for a missing one), whether a program is on the user's PATH (`installed`), and the
    user's environment (where a toolchain keeps its programs: CARGO_HOME)."""

    read: Read
    installed: Callable[[str], bool]
    environ: Mapping[str, str]


@dataclass(frozen=True)
class WorkflowAsk:
    """What a runner's `workflow_steps` is given by `codegen-ci init`'s runner-host workflow:
    the ecosystems init found (a runner's own among them when its `MARKERS` marked the
    repository: its `InitTests.ecosystem`), and the lint and test commands init writes."""

    ecosystems: tuple[str, ...]
    lint: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True)
class InitLeftOut:
    """A check of the runner `codegen-ci init` does not write from the root files alone, and
    why (clippy: only when CI runs it); `done_by`: a lint command that does it (one CI runs:
    then it is not left out)."""

    what: str
    why: str
    done_by: re.Pattern[str]


@dataclass(frozen=True)
class InitTests:
    """The test commands `codegen-ci init` writes for the runner, the JUnit reports they write,
    notes for init's summary, and further files to write (path -> text: nextest's profile).
    For a repository its `MARKERS` mark (`marked_tests`), also the lint and setup commands
    beside them, the tools and the source init's summary names, the ecosystem, and the checks
    left out."""

    test: tuple[str, ...]
    junit: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    lint: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    ecosystem: str = ""
    left_out: tuple[InitLeftOut, ...] = ()


@dataclass(frozen=True)
class InitJUnit:
    """What `codegen-ci init` writes so the runner's test command writes JUnit."""

    report: str  # where the report goes, relative to the repository
    options: str = ""  # flags added to the runner's call (`{report}`: the report's path)
    env: str = ""  # variables set before the call (`{report}`)
    package: str | None = None  # the reporter package the project needs for it
    setup: tuple[str, ...] = ()  # what the run's setup installs for it
    # A runner its `MARKERS` mark: the test command init writes (`{options}`: the options
    # above), the lint commands beside it, the tools init's summary names, its ecosystem.
    command: str = ""
    lint: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    ecosystem: str = ""
    start: str = ""  # the words that start it in the command init writes (its `SCRIPT_WORD`)
    # what of a package.json script's arguments gives way to the options (vitest's `run`,
    # mocha's own reporter: it takes one)
    drop: re.Pattern[str] | None = None


class TestRunner(Protocol):
    """One test runner's knowledge; each member is a module-level name of the runner's file."""

    # Its name in reports and docs.
    NAME: str
    # A command (or the package.json script it runs) that uses this runner.
    COMMAND: re.Pattern[str]

    # -- init: what says a repository uses it, and what `codegen-ci init` writes for it --------
    # Files at the repository's root that say so (`go.mod`), where a file does.
    MARKERS: tuple[str, ...]
    # How a package.json script starts it (a regex: `node\s+--test`), for a Node runner.
    SCRIPT_WORD: str | None
    # The JUnit init writes for it (None: init writes the command as CI runs it).
    INIT: InitJUnit | None

    # A line of the repository's CI workflows (at its start, without variables or a folder)
    # that runs its tests: init writes it as a test command.
    CI_TEST: re.Pattern[str] | None

    # The programs its commands need that are not the project's own dependencies, and how to
    # install each (init's summary names a missing one).
    INSTALLS: tuple[tuple[str, str], ...]

    def marked_tests(self, ask: InitAsk) -> InitTests | None:
        """What init writes for a repository its `MARKERS` mark, from its files alone (the
        lines of its CI may replace them); None: nothing."""

    def ci_tests(self, line: str, ask: InitAsk) -> InitTests | None:
        """The test commands init writes for a line of the repository's CI workflows (`line`,
        its command without variables or a folder) that runs this runner, in a repository its
        `MARKERS` mark; None when the line is not its command."""

    def workflow_steps(self, ask: WorkflowAsk) -> tuple[str, ...]:
        """The steps init's runner-host workflow adds to set up its toolchain (GitHub Actions
        YAML, indented as a job's steps: `actions/setup-go`), for a repository it found the
        runner in (`ask.ecosystems`); (): none (the runner's tools come with the project's
        dependencies)."""

    # -- JUnit: how it is asked for, and where it lands --------------------------------------
    # How to make a command of this runner write JUnit (shown when a command wrote none).
    JUNIT_HINT: str | None
    # The runner's own flags that ask for JUnit, and the report file they name.
    ASKS_FOR_JUNIT: re.Pattern[str] | None
    JUNIT_FILE: re.Pattern[str] | None

    def junit_command(self, command: str) -> str | None:
        """`command` rewritten so it writes JUnit itself; None to run it as written."""

    def junit_env(self, env: Mapping[str, str], report: str) -> dict[str, str]:
        """Variables that make the runner write JUnit to `report` ({}: none do)."""

    def junit_arg(self, command: str) -> str | None:
        """The report path `command` passes the runner itself, if any."""

    def every_test(self, command: str) -> str:
        """`command` as the gate runs it so that every test runs and is reported even when
        some fail (cargo's `--no-fail-fast`); unchanged for most runners."""

    def configured_reports(self, command: str, env: Mapping[str, str], read: Read) -> list[str]:
        """Reports the runner writes because the repository's own config asks it to."""

    def from_output(self, ran: Ran) -> FromOutput | None:
        """What the command's output says of its tests that its JUnit (`ran.cases`) leaves
        unsaid: Go's packages that did not compile, libtest's own lines for a plain `cargo
        test` that wrote none (gate/junit/capture.py asks every runner); None: nothing."""

    def refine(
        self, cases: tuple[ReportedCase, ...], tree: Tree | None
    ) -> tuple[ReportedCase | None, ...] | None:
        """One JUnit report's `cases` made precise where its reporter leaves them vague
        (gate/junit/parse.py asks every runner; the first answer is the report's): one for
        each case, its `message`, `file` and `line` made precise, None for a case left out (Go:
        a parent that failed only because a subtest did); None: not its report. `tree`: the
        repository the tests ran in (None: not known)."""

    def whole_unit(self, classname: str, name: str) -> str | None:
        """What a failing case stands for when it is no test but a whole unit of them (Go's
        `<package>::[build failed]`: the package), as the prefix of its tests' ids
        (gate/proof.py: a test in it could not run on the base); None: a test."""

    def defined_at(self, classname: str, name: str, tree: Tree) -> DefinedAt | None:
        """Where the test `classname::name` is defined in `tree`, read from its sources (Go: its
        top-level test function in its package's `_test.go` files; gate/proof.py's place of a
        proving test); None: not known, the report's place stands."""

    # -- JUnit case ids (gate/junit/cases.py asks every runner) --------------------------------
    # Its reporter's cases that only their suites' nesting names (None: `classname::name`).
    NESTED_CASES: NestedCases | None

    def case_id(self, name: str, classname: str) -> str | None:
        """The id of a case its reporter names in a shape of its own (mocha-junit-reporter:
        name "suite title", classname "title" -> the name); None: not its shape."""

    # -- the environment check: a command that could not start -------------------------------
    SIGNATURES: tuple[Signature, ...]
    # The exit code that says it collected no test (pytest's 5), where its `NAME` is in the
    # command or its output.
    NO_TESTS_EXIT: int | None
    # A line of its output naming a failed test (the code's failure, whatever else it says).
    FAILED_TEST: str | None
    # Its toolchain not found where it looks (the untouched code's run: a configuration error).
    NO_TOOLCHAIN: EnvironmentAdvice | None
    # What it tried to download with no network, and where it keeps it instead.
    DOWNLOADS: tuple[EnvironmentAdvice, ...]
    # A backtrace block its toolchain prints when asked (Rust's `RUST_BACKTRACE`, which CI
    # workflows set: rustup's own errors then carry ~20 frames), the whole block: left out of a
    # configuration error's message, which shows the error; kept everywhere else (a test's
    # panic location and frames are the model's to read).
    BACKTRACE: re.Pattern[str] | None

    # Where its tests failed, from its output where it wrote no JUnit, and how the model is
    # told (a heading, a fence's label).
    FAILED_AT_TITLE: str
    FAILED_AT_LABEL: str

    def failed_at(self, output: str) -> list[FailedAt]:
        """Each failed test's place, in order, each test once."""

    # Where a JUnit case's failure text says it failed (its traceback frames), and the parts of
    # a frame's path that mark it as outside the project (the runner's libraries, its runtime).
    LOCATIONS: tuple[Location, ...]
    LIBRARY_PATHS: tuple[str, ...]

    # -- paths -------------------------------------------------------------------------------
    # Its configuration: protected with the tests (workspace/file_kinds.py).
    CONFIG_GLOBS: tuple[str, ...]
    # Caches and reports it writes unasked: never part of a change (workspace/paths.py).
    ARTIFACT_GLOBS: tuple[str, ...]
    # Warm caches (security/warm_caches.py): the user's build caches copied into each phase's
    # scratch, as (variable, folder in the scratch), and the checkout's cache folders copied
    # into each worktree, by name.
    USER_CACHES: tuple[tuple[str, str], ...]
    CHECKOUT_CACHES: tuple[str, ...]
    # Cache folders it writes in TMPDIR (globs), kept from the pre-flight for the run's later
    # phases (jest's `jest_<uid>`).
    TMPDIR_CACHES: tuple[str, ...]

    def user_caches(self, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
        """The user's caches of `USER_CACHES` that exist, by variable."""

    def is_checkout_cache(self, folder: Path) -> bool:
        """Whether `folder` (named in `CHECKOUT_CACHES`) is this runner's cache."""

    # -- kept tests: what its output says ran, for a command that wrote no JUnit -------------
    # A line saying how many tests ran (0 included): the run is known.
    RAN_COUNT: re.Pattern[str] | None

    def named_tests(self, text: str) -> list[tuple[str, bool]]:
        """(test id, skipped) for each test its output names."""

    def totals(self, text: str) -> Totals | None:
        """How many tests ran and were skipped, where its output gives only totals."""

    def doctest_examples(self, test_id: str, file: str, text: str) -> int | None:
        """How many examples of the test `test_id` run where the repository's `file` holds
        `text`, for a test that is a documentation example (pytest's doctests: one test of a
        docstring however many examples it has, so an example deleted or skipped leaves it
        listed and passing); None: `test_id` is no such test of `file`."""

    # -- the harness inside its process ------------------------------------------------------
    # The files of gate/ that its runs load into the runner's own process (`<module>.py`: a
    # pytest plugin, unittest's JUnit-writing main, the coverage run; `vendor/<package>`: the
    # tool's own package they load). They stay files of gate/, copied into the tool's
    # read-only folder and loaded there by path, because they run in the repository's
    # interpreter, never in ours: the pytest plugin imports pytest, which a plain install of
    # the tool lacks, and every module of runners/ is imported by the registry.
    PLUGINS: tuple[str, ...]

    # -- coverage ----------------------------------------------------------------------------
    # How the changed lines' coverage is measured, or "not measured: why" (for the docs).
    COVERAGE: str

    def coverage_plan(self, command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
        """The coverage run of `command` for `ask.sources` (gate/coverage.py runs it, confined,
        and reads its report with diff-cover); a reason when `command` is this runner's and
        cannot be measured; None when it is not this runner's command."""


def plain_tokens(command: str) -> list[str] | None:
    """The words of a command without shell operators; None when it has any (or is not
    valid shell), since rewriting such a command could change what it does."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    if any(set(t) <= set("();<>|&") for t in tokens) or any("$" in t or "`" in t for t in tokens):
        return None
    return tokens


# A test command run from a folder of the repository (`cd tests && python -m pytest`, as init
# writes a CI step's `working-directory`): the folder and the plain command after it.
IN_FOLDER = re.compile(
    r"\s*cd\s+(?P<folder>'[^']*'|\"[^\"]*\"|[^\s'\";&|<>()]+)\s*&&\s*(?P<inner>.*)", re.S
)


@dataclass(frozen=True)
class Folder:
    """The folder of the repository a command runs in (`path`, normalised, relative; "": its
    root, no `cd`), and how a path of the repository and a path of the folder map onto each
    other."""

    path: str = ""

    def tree(self, root: Path) -> Path:
        """The folder in the worktree `root`."""
        return root / self.path if self.path else root

    def inward(self, rel: str) -> str:
        """A path of the repository, relative to the folder (`../src/x.py`)."""
        return posixpath.relpath(rel, self.path) if self.path else rel

    def outward(self, rel: str) -> str:
        """A path relative to the folder, as the repository names it (`..` resolved; one that
        leaves the repository keeps its leading `..`)."""
        return posixpath.normpath(posixpath.join(self.path, rel)) if self.path else rel

    def wrap(self, command: str) -> str:
        """`command` run in the folder again: `cd DIR && command`."""
        return f"cd {shlex.quote(self.path)} && {command}" if self.path else command


def in_folder(command: str) -> tuple[Folder, str]:
    """`cd DIR && COMMAND` -> (DIR, COMMAND) when DIR is a plain relative path inside the
    repository (quotes allowed; no `$`, `~`, backquote, absolute path or `..` out of it) and
    COMMAND a plain command (`plain_tokens`): COMMAND run in DIR, which is what the rewriters
    of a test command work on, its paths relative to DIR. (Folder(), command) for any other
    command, which they take whole (and refuse when it is no plain command)."""
    found = IN_FOLDER.fullmatch(command)
    if found is None or plain_tokens(found["inner"]) is None:
        return Folder(), command
    try:
        words = shlex.split(found["folder"])
    except ValueError:
        return Folder(), command
    if len(words) != 1 or any(c in words[0] for c in "$`~\\") or words[0].startswith("/"):
        return Folder(), command
    path = posixpath.normpath(words[0])
    if path == ".." or path.startswith("../"):
        return Folder(), command
    return Folder("" if path == "." else path), found["inner"]


# -- shared answers (as pre-commit's languages share their basic helpers) ----------------------
# A runner that has no answer to a member assigns the one here (`junit_env = base.no_junit_env`),
# so its file holds only what is its own; the shapes several runners share follow.


def no_ci_tests(line: str, ask: InitAsk) -> InitTests | None:
    """A CI line that runs the runner is written as CI runs it (or by init_node.py's reading
    of a package.json script, for a Node runner)."""
    return None


def no_marked_tests(ask: InitAsk) -> InitTests | None:
    """No root file marks a repository that uses the runner (or init_node.py's reading of
    package.json says what it writes, for a Node runner)."""
    return None


def init_written(init: InitJUnit | None) -> InitTests | None:
    """`marked_tests` as the runner's `INIT` says it: its `command` with its JUnit options,
    its report, lint, setup, tools and ecosystem; None when it names no command."""
    if init is None or not init.command:
        return None
    options = init.options.format(report=init.report)
    return InitTests(
        (init.command.format(options=options),),
        junit=(init.report,),
        lint=init.lint,
        setup=init.setup,
        tools=init.tools,
        ecosystem=init.ecosystem,
    )


def no_junit_command(command: str) -> str | None:
    """The command runs as written."""
    return None


def as_written(command: str) -> str:
    """The runner already runs and reports every test as the command is written."""
    return command


def no_junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    """No variable asks the runner for JUnit."""
    return {}


def no_junit_arg(command: str) -> str | None:
    """The runner's JUnit file is not named on its command line."""
    return None


def no_configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    """The repository's config writes no report of its own."""
    return []


def no_from_output(ran: Ran) -> FromOutput | None:
    """The runner's JUnit says all its output does."""
    return None


def no_refine(
    cases: tuple[ReportedCase, ...], tree: Tree | None
) -> tuple[ReportedCase | None, ...] | None:
    """The runner's JUnit says precisely what failed, and where."""
    return None


def no_whole_unit(classname: str, name: str) -> str | None:
    """Every case of the runner is a test."""
    return None


def no_defined_at(classname: str, name: str, tree: Tree) -> DefinedAt | None:
    """Where a test is defined is not read from the runner's sources."""
    return None


def no_workflow_steps(ask: WorkflowAsk) -> tuple[str, ...]:
    """The runner needs no toolchain step in CI (it comes with the project's dependencies)."""
    return ()


def no_case_id(name: str, classname: str) -> str | None:
    """The reporter's cases take the common `classname::name`."""
    return None


def no_coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """Coverage is not measured for the runner (its `COVERAGE` says why)."""
    return None


def no_failed_at(output: str) -> list[FailedAt]:
    """The runner's output says where tests failed only in its JUnit."""
    return []


def no_user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """No user cache is copied warm."""
    return []


def no_checkout_cache(folder: Path) -> bool:
    """No checkout cache folder."""
    return False


def no_named_tests(text: str) -> list[tuple[str, bool]]:
    """The runner's own output names no test."""
    return []


def no_totals(text: str) -> Totals | None:
    """The runner's own output gives no totals."""
    return None


def no_doctest_examples(test_id: str, file: str, text: str) -> int | None:
    """The runner's tests are not counted from their examples (its assertions are)."""
    return None


def junit_hint(name: str, how: str) -> str:
    """`name: how and set validation.junit` (a hint for a runner whose JUnit flags name the
    report)."""
    return f"{name}: {how} and set `validation.junit: [junit.xml]`"


def report_after(flag: str) -> re.Pattern[str]:
    """The report file (`*.xml`) named right after `flag` (a regex: `--junitfile[= ]`)."""
    return re.compile(rf"{flag}([^\s'\"]+\.xml)")


def cannot_find(*modules: str) -> Signature:
    """Node's `Cannot find module 'jest'`: the runner is not installed."""
    names = "|".join(re.escape(m) for m in modules)
    return Signature(re.compile(rf"Cannot find module '(?:{names})'"), "runner missing")


# Failure places several runners print: `path.py:12: ...` (pytest, Go's `t.Error`), a Python
# traceback frame, a JavaScript stack frame (`(path/x.test.js:12:5)`, `at path/x.ts:12:5`,
# vitest's `❯ path/x.ts:12:5`), and the libraries of Python and Node.
PATH_LINE = Location(r"^[ \t]*([^\s:()\"']+\.[A-Za-z]\w*):(\d+):")
PYTHON_FRAME = Location(r'File "([^"]+)", line (\d+)')
JS_FRAME = Location(
    r"(?:\(|at |❯ )(?:file://)?([^()\s]+\.[cm]?[jt]sx?):(\d+):\d+", innermost_first=True
)
PYTHON_LIBRARIES = ("site-packages", "dist-packages", "<")  # `<frozen ...>`, `<string>`
NODE_LIBRARIES = ("node_modules", "node:")

# jest's and vitest's mark of a failed test in their default reporter
FAILED_MARK = r"\s*(?:✕|×) "


def summed_totals(text: str, ran: re.Pattern[str], skipped: re.Pattern[str]) -> Totals | None:
    """The sums of every `ran` and `skipped` count in `text` (one group each: a suite's runs
    print one summary each); None when `ran` finds none."""
    counts = [int(n) for n in ran.findall(text)]
    if not counts:
        return None
    return Totals(sum(counts), sum(int(n) for n in skipped.findall(text)))


# -- the tool's own folders on a Python command's import path ---------------------------------
# The tool's plugins (pytest's codegen_first, the unittest runner, the coverage run) reach the
# repository's interpreter through PYTHONPATH. A command that sets PYTHONPATH itself
# (`PYTHONPATH=src python -m pytest`, as init writes it for a src layout) replaces that value:
# the plugin could not be imported, every plugin run was repeated without it and the coverage
# run measured nothing. The folders the tool added are kept in TOOL_PATHS_ENV and appended to
# the command's own value (`keep_tool_paths`), after it: the command's paths still come first.
TOOL_PATHS_ENV = "CODEGEN_TOOL_PYTHONPATH"
ASSIGNED_PYTHONPATH = re.compile(
    r"^((?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|[^\s'\"])*\s+)*?PYTHONPATH=)"
    r"((?:'[^']*'|\"[^\"]*\"|[^\s'\"])*)(?=\s)"
)


def with_tool_path(env: Mapping[str, str], folder: Path) -> dict[str, str]:
    """`env` with one of the tool's folders first on PYTHONPATH (and noted in TOOL_PATHS_ENV)."""
    out = dict(env)
    for name in ("PYTHONPATH", TOOL_PATHS_ENV):
        out[name] = os.pathsep.join([str(folder), *filter(None, [env.get(name)])])
    return out


def keep_tool_paths(command: str, env: Mapping[str, str]) -> str:
    """`command` with the tool's folders (`with_tool_path`) appended to a PYTHONPATH it assigns
    in its leading assignments (after a folder's `cd DIR && `, `in_folder`: init's `cd tests
    && PYTHONPATH=../src python -m pytest`); unchanged when it assigns none."""
    folder, inner = in_folder(command)
    if folder.path:
        kept = keep_tool_paths(inner, env)
        return command if kept == inner else folder.wrap(kept)
    tool = env.get(TOOL_PATHS_ENV)
    found = ASSIGNED_PYTHONPATH.match(command)
    if not tool or found is None:
        return command
    tail = os.pathsep.join(shlex.quote(p) for p in tool.split(os.pathsep) if p)
    value = f"{found[2]}{os.pathsep}{tail}" if found[2] else tail
    return f"{found[1]}{value}{command[found.end() :]}"
