"""go test, and gotestsum (which runs it and writes JUnit); `go test -v`'s lines where no
JUnit was written; the packages that did not compile, which its JUnit leaves out
(`from_output`); what else its JUnit leaves unsaid (`refine`: messages, places, subtests,
panics), read against the package's sources; where a test is defined (`defined_at`)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from codegen_ci.runners import base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    FromOutput,
    InitAsk,
    InitJUnit,
    InitTests,
    Location,
    OutputCase,
    Ran,
    Read,
    ReportedCase,
    Signature,
    Tree,
    WorkflowAsk,
    plain_tokens,
)

NAME = "go test"
COMMAND = re.compile(r"\bgo\s+test\b|\bgotestsum\b")
# a CI line that runs Go's tests (its arguments after the runner)
CI_COMMAND = re.compile(r"^(?:go\s+test|gotestsum)\b\s*(.*)$")
# gotestsum runs `go test` and writes JUnit; pinned so every run installs the same one.
GOTESTSUM = "gotest.tools/gotestsum@v1.12.0"

MARKERS: tuple[str, ...] = ("go.mod",)
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(
    report="reports/junit-go.xml",
    options="--junitfile {report}",
    setup=("go mod download", f"go install {GOTESTSUM}"),
    command="gotestsum {options} ./...",
    lint=("go vet ./...",),
    tools=("gotestsum", "go vet"),
    ecosystem="go",
)

CI_TEST: re.Pattern[str] | None = CI_COMMAND
INSTALLS: tuple[tuple[str, str], ...] = (
    ("gotestsum", f"go install {GOTESTSUM}"),
    ("go", "install Go (https://go.dev/dl/)"),
)


def marked_tests(ask: InitAsk) -> InitTests | None:
    """A repository with go.mod: gotestsum over every package, and go vet (`INIT`)."""
    return base.init_written(INIT)


def ci_tests(line: str, ask: InitAsk) -> InitTests | None:
    """CI's `go test ARGS` through gotestsum (`gotestsum --junitfile ... -- ARGS`, for JUnit);
    CI's own gotestsum as it is, its report written into the repository where CI writes it
    outside (`--junitfile /tmp/test-results/report.xml`: the gate reads only the worktree)."""
    found = CI_COMMAND.match(line)
    if found is None:
        return None
    if line.startswith("gotestsum"):
        assert INIT is not None
        outside = OUTSIDE_REPORT.search(line)
        if outside is None:
            return InitTests((line,))
        inside = f"{outside[1]}{INIT.report}"
        return InitTests(
            (line[: outside.start()] + inside + line[outside.end() :],), (INIT.report,)
        )
    assert INIT is not None
    args = f" -- {found[1]}" if found[1].removeprefix("./...").strip() else " ./..."
    options = INIT.options.format(report=INIT.report)
    return InitTests((f"gotestsum {options}{args}",), junit=(INIT.report,))


SETUP_GO = "      - uses: actions/setup-go@v5\n        with:\n          go-version-file: go.mod\n"


def workflow_steps(ask: WorkflowAsk) -> tuple[str, ...]:
    """Go from the version go.mod names (`actions/setup-go`), for a repository with go.mod."""
    return (SETUP_GO,) if INIT is not None and INIT.ecosystem in ask.ecosystems else ()


# `--junitfile PATH` outside the repository: absolute, in the home folder, above it, or a variable
OUTSIDE_REPORT = re.compile(r"(--junitfile[= ])(?:/|~|\.\./|\$)\S*")
JUNIT_HINT: str | None = base.junit_hint(
    "go", "run `gotestsum --junitfile junit.xml -- ./...` instead of `go test ./...`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junitfile\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junitfile[= ]")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
every_test = base.as_written
configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id

# -- what its JUnit leaves unsaid: packages that did not compile ------------------------------
# A package that does not compile is in the output only (gotestsum counts it in the root's
# `errors=` and lists no case): each becomes an error case, `<package>::[build failed]` at the
# compiler's first error, so a round cannot read as "0 errors". Asked of a failed command
# whose output shows a package's build failing or whose JUnit holds Go's cases.

GO_MARKERS = ("=== RUN", "--- FAIL:", "\npanic: ", "\ngoroutine ")
LOG_LINE = re.compile(r"^\s+([\w.-]+\.go):(\d+): (.*)$", re.MULTILINE)
COMPILER_LINE = re.compile(r"^(?:vet: )?[^\s:]+\.go:\d+(?::\d+)?: (.+)$", re.MULTILINE)
# gotestsum writes "Failed"; go-junit-report "Failed", "Runtime error" and "Build error".
GENERIC_MESSAGES = ("", "Failed", "Runtime error", "Build error")
# `# example.com/demo/broken [example.com/demo/broken.test]` heads a package's compiler or
# vet errors; `go vet` prefixes a type-check error with `vet: `.
PACKAGE_HEADER = re.compile(r"^# ([\w.~-]+(?:/[\w.~-]+)*)(?: \[[^\]]+\])?$")
ERROR_LINE = re.compile(r"^(?:vet: )?(?:\./)?([^\s:]+\.go):(\d+)(?::\d+)?: (.+)$")
BUILD_FAILED = "[build failed]"
OUTPUT_CHARS = 400_000  # of the output read for build failures


def is_go_output(message: str, details: str) -> bool:
    """A JUnit case's `message` and failure text are Go's test output: RUN/FAIL lines, a
    goroutine dump, or go-junit-report's generic messages over `file.go:N:` lines."""
    if any(marker in details for marker in GO_MARKERS) or details.startswith("panic: "):
        return True
    return message in GENERIC_MESSAGES[1:] and (
        not details.strip() or bool(LOG_LINE.search(details) or COMPILER_LINE.search(details))
    )


def from_output(ran: Ran) -> FromOutput | None:
    """The packages a failed command's output shows did not compile, as error cases, when it
    wrote JUnit: one per package with compiler or vet errors and no case in the JUnit (a
    package that did not build ran no tests)."""
    if ran.cases is None or ran.ok:
        return None
    output = ran.output(OUTPUT_CHARS)
    if BUILD_FAILED not in output and not any(
        is_go_output(c.message, c.details) for c in ran.cases
    ):
        return None
    found = build_failures(output, {case.classname for case in ran.cases})
    return FromOutput(tuple(found)) if found else None


def build_failures(output: str, known_packages: set[str]) -> list[OutputCase]:
    """One error case per package whose compiler or vet errors `output` shows and that is not
    in `known_packages`."""
    errors: dict[str, list[tuple[str, int, str]]] = {}
    package: str | None = None
    for line in output.splitlines():
        if header := PACKAGE_HEADER.match(line):
            package = header[1]
        elif package and (error := ERROR_LINE.match(line)):
            errors.setdefault(package, []).append((error[1], int(error[2]), error[3]))
        else:
            package = None
    return [_build_case(pkg, found) for pkg, found in errors.items() if pkg not in known_packages]


def _build_case(package: str, errors: list[tuple[str, int, str]]) -> OutputCase:
    file, line, message = errors[0]
    details = "\n".join(f"{f}:{n}: {m}" for f, n, m in errors)
    return OutputCase(package, BUILD_FAILED, "error", message, details, file, line)


def whole_unit(classname: str, name: str) -> str | None:
    """A package that did not build (`from_output`'s case) stands for the package: none of
    its tests ran."""
    return classname if name == BUILD_FAILED else None


# -- what else its JUnit leaves unsaid: messages, places, subtests, panics --------------------
# - The message: gotestsum and go-junit-report write message="Failed"; the panic line or the
#   test's first log line (`store_test.go:13: got 1, want 2`) says what failed.
# - The place: a test's log names the file's base name only; the package (the classname, an
#   import path) gives its directory, through the module path in `go.mod`.
# - Subtests: a parent whose only output is its RUN/FAIL lines failed because a subtest did;
#   it is folded into its failing subtests instead of being a second failure.
# - A panic ends the test binary: the package's tests that never ran are counted from its
#   `_test.go` sources (top-level `func TestXxx(t *testing.T)`, what `go test -list .` lists;
#   the JUnit file cannot tell, since gotestsum's `tests=` counts only what ran) and named in
#   the panicking test's message. Build tags are not evaluated, so a test behind a tag counts.
# The sources are read through the caller's `Tree`: a go.mod that is a link to /dev/zero, or a
# FIFO, must not hang or fill the tool's memory.

OWN_OUTPUT = re.compile(r"^(?!=== (?:RUN|PAUSE|CONT|NAME)\b|\s*--- FAIL: |\s*$).+", re.MULTILINE)
TEST_FUNC = re.compile(r"^func (Test(?:[^a-z\W]\w*)?)\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)
MAX_NAMED = 10  # tests a panic kept from running, named in its message
MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
SKIP_DIRS = ("vendor", "node_modules", "testdata")


def refine(
    cases: tuple[ReportedCase, ...], tree: Tree | None
) -> tuple[ReportedCase | None, ...] | None:
    """The report's Go failures made precise (see above); None when it has none."""
    failing = [c for c in cases if c.outcome in ("failure", "error") and _is_go(c)]
    if not failing:
        return None
    modules = module_dirs(tree) if tree is not None else []
    folded = {id(c) for c in failing if _only_a_parent(c, failing)}
    refined: dict[int, ReportedCase] = {}
    for case in failing:
        if id(case) in folded:
            continue
        pkg_dir = package_dir(case.classname, modules, tree)
        file, line = _location(case, pkg_dir, tree)
        better = replace(case, message=_message(case), file=file, line=line)
        if pkg_dir is not None and tree is not None and _panicked(case):
            better = replace(better, message=better.message + _not_run(case, cases, pkg_dir, tree))
        refined[id(case)] = better
    return tuple(None if id(c) in folded else refined.get(id(c), c) for c in cases)


def _is_go(case: ReportedCase) -> bool:
    return is_go_output(case.message, case.details)


def _only_a_parent(case: ReportedCase, failing: list[ReportedCase]) -> bool:
    prefix = case.name + "/"
    has_failing_child = any(
        c.classname == case.classname and c.name.startswith(prefix) for c in failing
    )
    return has_failing_child and not OWN_OUTPUT.search(case.details)


def _panicked(case: ReportedCase) -> bool:
    return case.details.startswith("panic: ") or "\npanic: " in case.details


def _message(case: ReportedCase) -> str:
    """The words of the failure: the panic line, else the first log or compiler line."""
    if case.message not in GENERIC_MESSAGES:
        return case.message
    for line in case.details.splitlines():
        if line.startswith("panic: "):
            return line.removesuffix(" [recovered]")
    if log := LOG_LINE.search(case.details) or COMPILER_LINE.search(case.details):
        return str(log[log.lastindex or 1]).strip()
    return case.message


def _location(
    case: ReportedCase, pkg_dir: Path | None, tree: Tree | None
) -> tuple[str | None, int | None]:
    """The first log line (where the message comes from), its base name resolved in the
    package's directory (nested packages share base names: `store_test.go` alone does not
    say which)."""
    file, line = case.file, case.line
    log = LOG_LINE.search(case.details)
    if file is None or "/" not in file:
        if log and not _panicked(case):
            file, line = log[1], int(log[2])
        if pkg_dir is not None and tree is not None and file and (pkg_dir / file).is_file():
            file = (pkg_dir / file).relative_to(tree.root).as_posix()
    return file, line


def _not_run(case: ReportedCase, cases: tuple[ReportedCase, ...], pkg_dir: Path, tree: Tree) -> str:
    declared: list[str] = []
    for rel in tree.glob(_test_files(pkg_dir, tree)):
        if (text := tree.read(rel)) is not None:
            declared += TEST_FUNC.findall(text)
    ran = {c.name.split("/")[0] for c in cases if c.classname == case.classname}
    missing = [name for name in dict.fromkeys(declared) if name not in ran]
    if not missing:
        return ""
    named = ", ".join(missing[:MAX_NAMED]) + (", ..." if len(missing) > MAX_NAMED else "")
    total = len(set(declared) | ran)
    return (
        f" (the panic stopped the test binary: {len(missing)} of {total} tests in "
        f"{case.classname} did not run: {named})"
    )


def _test_files(pkg_dir: Path, tree: Tree) -> str:
    """The glob of the `_test.go` files of the package in `pkg_dir` (a folder of the tree)."""
    folder = pkg_dir.relative_to(tree.root).as_posix()
    return f"{folder}/*_test.go" if folder != "." else "*_test.go"


def module_dirs(tree: Tree) -> list[tuple[str, Path]]:
    """(module path, directory) of `go.mod` at the root and one or two levels below,
    longest module path first (a nested module wins over its parent)."""
    found: list[tuple[str, Path]] = []
    mods = [m for pattern in ("go.mod", "*/go.mod", "*/*/go.mod") for m in tree.glob(pattern)]
    for rel in mods:
        if any(part in SKIP_DIRS for part in Path(rel).parts):
            continue
        text = tree.read(rel)
        if text is not None and (match := MODULE.search(text)):
            found.append((match[1].strip('"'), (tree.root / rel).parent))
    return sorted(found, key=lambda item: len(item[0]), reverse=True)


def package_dir(package: str, modules: list[tuple[str, Path]], tree: Tree | None) -> Path | None:
    """The directory of import path `package`, if it lies in one of `modules`."""
    for module, directory in modules:
        if package == module:
            return directory
        if package.startswith(module + "/"):
            candidate = directory / package[len(module) + 1 :]
            if tree is not None and candidate.resolve().is_relative_to(tree.root.resolve()):
                return candidate if candidate.is_dir() else None
    return None


def defined_at(classname: str, name: str, tree: Tree) -> base.DefinedAt | None:
    """The top-level test function of `name` (a subtest: its parent's) in the `_test.go`
    files of package `classname`, the first of them that declares it."""
    pkg_dir = package_dir(classname, module_dirs(tree), tree)
    if pkg_dir is None or not pkg_dir.is_relative_to(tree.root):
        return None
    for rel in sorted(tree.glob(_test_files(pkg_dir, tree))):
        text = tree.read(rel)
        if text is not None and (span := test_function(text, name.split("/")[0])):
            return base.DefinedAt(rel, *span)
    return None


# `? pkg [no test files]` for every package, and no line saying a test ran
NO_TEST_FILES = re.compile(r"^\?\s+\S+\s+\[no test files\]\s*$", re.M)
RAN = re.compile(r"^(?:ok|FAIL|---|=== RUN|PASS|DONE [1-9]\d* tests?)\b", re.M)
SIGNATURES: tuple[Signature, ...] = (Signature(NO_TEST_FILES, "no test files", unless=RAN),)
NO_TESTS_EXIT: int | None = None
# Go that cannot work at all here: GOROOT naming a folder that is gone (a Go upgraded or moved
# since GOROOT was set), or a go.mod written for a newer Go than the one installed (a patch
# version in its `go` line and a `toolchain` line are Go 1.21's; 1.21+ with GOTOOLCHAIN=local
# says "requires go >="). On the untouched code no edit of the code fixes that.
NO_TOOLCHAIN: EnvironmentAdvice | None = EnvironmentAdvice(
    re.compile(
        r"go: cannot find GOROOT directory|go\.mod:\d+: (?:invalid go version '[^']*': must "
        r"match format|unknown directive: toolchain)|go: (?:go\.mod|[^\n]*) requires go >= "
        r"\S+ \(running go \S+"
    ),
    "the installed Go cannot build the module",
    "GOROOT must be unset or name the Go installation (`go env GOROOT` prints it), and the Go "
    "on PATH must be at least as new as go.mod's `go` line (and its `toolchain` line) "
    "asks: install that Go before the run (in a workflow: actions/setup-go with "
    "`go-version-file: go.mod`); inside the sandbox nothing is downloaded.",
)
# A module missing from a module cache the sandbox shows (read-only): Go makes the module's
# download lock folder under `<GOMODCACHE>/cache/download/` before it asks GOPROXY (so
# `GOPROXY=off` would not change the error: seen with go 1.19), and that write fails: EROFS
# under bubblewrap (a read-only mount), EACCES under Landlock.
NOT_IN_CACHE = re.compile(
    r"(?P<place>/\S*?)/cache/download/\S*: (?:read-only file system|permission denied)"
)
# modules it tried to download (no network): the module cache is the user's to show, and
# what it lacks is downloaded outside
DOWNLOADS: tuple[EnvironmentAdvice, ...] = (
    EnvironmentAdvice(
        re.compile(
            r"^go: downloading |proxy\.golang\.org|GOPROXY=off|GOFLAGS=-mod=mod|"
            + NOT_IN_CACHE.pattern,
            re.M,
        ),
        "a Go module is not in the module cache, which the sandbox shows read-only",
        "Go looks for modules in GOMODCACHE, by default `~/go/pkg/mod`. {home_note} Set "
        "GOMODCACHE (or GOPATH) to your module cache in the run's environment "
        "(`go env GOMODCACHE` prints it; it is shown read-only) so nothing is downloaded; a "
        "module it still lacks is downloaded before the run, outside the sandbox: `go mod "
        "download` in the module's folder (the one holding go.mod).",
        needed=NOT_IN_CACHE,
        needed_advice="Go's module cache in the run is `{place}` (GOMODCACHE as the commands "
        "saw it), shown read-only, and the module is not in it. Download it there before the "
        "run, outside the sandbox: `go mod download` in the module's folder (the one holding "
        "go.mod), with the same GOMODCACHE.",
    ),
)
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = r"--- FAIL: "

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
# `store_test.go:12: ...` (t.Error), and a goroutine's frame in a panic,
# `\t/abs/path/file.go:304 +0x356`; the module cache and GOROOT's runtime and testing frames
LOCATIONS: tuple[Location, ...] = (
    base.PATH_LINE,
    Location(r"^\t([^\s:]+\.go):(\d+)(?: \+0x[0-9a-f]+)?$", innermost_first=True),
)
LIBRARY_PATHS: tuple[str, ...] = ("/pkg/mod/", "/src/runtime/", "/src/testing/")
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ()
ARTIFACT_GLOBS: tuple[str, ...] = ("coverage.out", "*.coverprofile", "cover.out")
USER_CACHES: tuple[tuple[str, str], ...] = (("GOCACHE", "cache/go-build"),)
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()


def user_caches(environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Go's build cache: `GOCACHE`, else `$XDG_CACHE_HOME/go-build`, else
    `~/.cache/go-build` (Go's own order); none when `GOCACHE=off`."""
    gocache = environ.get("GOCACHE", "")
    if gocache == "off":
        return []
    if not gocache:
        home = Path(environ.get("HOME") or str(Path.home()))
        gocache = str(Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "go-build")
    if gocache and Path(gocache).is_absolute() and Path(gocache).is_dir():
        return [("GOCACHE", Path(gocache))]
    return []


is_checkout_cache = base.no_checkout_cache

VERBOSE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", re.M)
RAN_COUNT: re.Pattern[str] | None = None


def named_tests(text: str) -> list[tuple[str, bool]]:
    """`go test -v`'s `--- PASS: Name`; `t.Skip` prints `--- SKIP`."""
    return [(name, state == "SKIP") for state, name in VERBOSE.findall(text)]


totals = base.no_totals
doctest_examples = base.no_doctest_examples

# A top-level test, `func TestX(t *testing.T) {`, ends at its closing brace alone at the start
# of a line (gofmt's layout).
FUNC_END = re.compile(r"^}", re.M)


def test_function(text: str, name: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of top-level test function `name` in the text of a
    `_test.go` file; None when the file declares no such test."""
    start = re.search(rf"^func {re.escape(name)}\(\s*\w+\s+\*testing\.T\s*\)", text, re.M)
    if start is None:
        return None
    first = text.count("\n", 0, start.start()) + 1
    end = FUNC_END.search(text, start.end())
    return first, (text.count("\n", 0, end.start()) + 1 if end else first)


# -- coverage ---------------------------------------------------------------------------------
# `go test ARGS` runs as `go test -coverprofile=<io>/cover.out -coverpkg=<packages> ARGS`, and
# `gotestsum ... -- ARGS` gets the same two flags after its `--`. `-coverpkg`'s packages: those
# of the change's Go files (import path: the module line of the nearest go.mod, and the folder
# below it), so a changed line run by another package's tests counts, and only those packages
# are instrumented.
#
# The profile to LCov: diff-cover reads Cobertura, LCov and JaCoCo, not Go's cover profile, and
# no maintained Python library converts one (the converters, gcov2lcov and gocover-cobertura,
# are Go programs the module proxy would have to bring, which the sandbox does not reach). The
# format is small and fixed (`go tool cover`'s): a `mode:` line, then one block a line,
# `<import path>/<file>.go:<startLine>.<startCol>,<endLine>.<endCol> <statements> <count>`.
# `profile_to_lcov` turns it into LCov `DA:<line>,<count>` records: a block's lines from its
# first to its last are executable (Go's executable lines are its statements' line ranges), a
# line in several blocks takes the highest count (a line whose statement ran is run even when
# a block starting on it did not), blocks without statements are no lines, and a block seen
# more than once (each test binary writes every `-coverpkg` package) takes the highest count
# too. The file's import path becomes its path in the repository through the go.mod module
# lines; files of other modules are left out.
COVER_PROFILE = "cover.out"
MODULE_LINE = re.compile(r"^\s*module\s+\"?([^\s\"/]+[^\s\"]*)\"?", re.MULTILINE)
BLOCK = re.compile(r"^(.+\.go):(\d+)\.(\d+),(\d+)\.(\d+) (\d+) (\d+)$")


@dataclass(frozen=True)
class GoModule:
    path: str  # the module's import path (`example.com/inventory`)
    folder: str  # its folder in the repository ("" at the top)


def is_go_test(command: str) -> bool:
    tokens = plain_tokens(command) or []
    return tokens[:2] == ["go", "test"] or (tokens[:1] == ["gotestsum"] and "--" in tokens)


def coverage_command(command: str, packages: Sequence[str], io_dir: Path) -> str | None:
    """`command` writing a cover profile of `packages` to `io_dir/cover.out`; None when it is
    not a plain `go test ...` or `gotestsum ... -- ...`."""
    tokens = plain_tokens(command)
    if not tokens or not packages or not is_go_test(command):
        return None
    if any(t.startswith(("-coverprofile", "-coverpkg", "--coverprofile")) for t in tokens):
        return None  # the command's own profile: not overridden
    flags = [f"-coverprofile={io_dir / COVER_PROFILE}", f"-coverpkg={','.join(packages)}"]
    at = 2 if tokens[0] == "go" else tokens.index("--") + 1
    return shlex.join([*tokens[:at], *flags, *tokens[at:]])


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """`go test -coverprofile -coverpkg=<the changed packages>`, the profile read as LCov."""
    if not is_go_test(command):
        return None
    sources = tuple(p for p in ask.sources if p.endswith(".go"))
    if not sources:
        return "the change has no Go source file to measure"
    mods = modules(ask.read, sources)
    covered = coverage_command(command, packages(sources, mods), ask.io_dir)
    if covered is None:
        return (
            "the Go test command sets its own -coverprofile or -coverpkg, or no "
            "go.mod holds the changed files"
        )
    return CoveragePlan(
        command=covered,
        report=COVER_PROFILE,
        format="lcov",
        sources=sources,
        convert=lambda profile: profile_to_lcov(profile, mods),
        missing="no cover profile: did the Go tests build? (see coverage/logs/coverage.log)",
        what="cover profile",
    )


def modules(read: Read, files: Iterable[str]) -> list[GoModule]:
    """The modules (nearest go.mod) that hold `files`, read through `read`."""
    found: dict[str, GoModule] = {}
    for rel in files:
        folder = PurePosixPath(rel).parent
        for candidate in (folder, *folder.parents):
            key = "" if str(candidate) == "." else candidate.as_posix()
            if key in found:
                break
            text = read(f"{key}/go.mod" if key else "go.mod")
            if text is None:
                continue
            match = MODULE_LINE.search(text)
            if match:
                found[key] = GoModule(match[1], key)
            break
    return list(found.values())


def packages(files: Iterable[str], mods: Sequence[GoModule]) -> list[str]:
    """The import paths of the packages that hold `files`."""
    out: list[str] = []
    for rel in files:
        module = _module_of(rel, mods)
        if module is None:
            continue
        inner = PurePosixPath(rel).parent.as_posix()
        inner = inner[len(module.folder) :].strip("/") if module.folder else inner
        out.append(module.path if inner in ("", ".") else f"{module.path}/{inner}")
    return list(dict.fromkeys(out))


def _module_of(rel: str, mods: Sequence[GoModule]) -> GoModule | None:
    inside = [m for m in mods if not m.folder or rel.startswith(m.folder + "/")]
    return max(inside, key=lambda m: len(m.folder), default=None)


def repo_path(import_file: str, mods: Sequence[GoModule]) -> str | None:
    """`example.com/inventory/units/units.go` -> `units/units.go` (the longest module path
    that prefixes it); None for a file of no module of the repository."""
    best: GoModule | None = None
    for module in mods:
        if import_file.startswith(module.path + "/") and (
            best is None or len(module.path) > len(best.path)
        ):
            best = module
    if best is None:
        return None
    inner = import_file[len(best.path) + 1 :]
    return f"{best.folder}/{inner}" if best.folder else inner


def profile_to_lcov(profile: str, mods: Sequence[GoModule]) -> str:
    """A Go cover profile as LCov, paths relative to the repository (see above)."""
    blocks: dict[tuple[str, int, int, int, int], tuple[int, int]] = {}
    for line in profile.splitlines():
        match = BLOCK.match(line.strip())
        if match is None:
            continue  # `mode: set`, blank lines
        key = (match[1], int(match[2]), int(match[3]), int(match[4]), int(match[5]))
        statements, count = int(match[6]), int(match[7])
        seen = blocks.get(key)
        if seen is not None:
            statements, count = max(statements, seen[0]), max(count, seen[1])
        blocks[key] = (statements, count)
    lines: dict[str, dict[int, int]] = {}
    for (name, first, _, last, _), (statements, count) in blocks.items():
        rel = repo_path(name, mods)
        if rel is None or statements == 0:
            continue
        hits = lines.setdefault(rel, {})
        for number in range(first, last + 1):
            hits[number] = max(hits.get(number, 0), count)
    records: list[str] = []
    for rel, hits in sorted(lines.items()):
        records.append(f"SF:{rel}")
        records += [f"DA:{number},{count}" for number, count in sorted(hits.items())]
        records.append("end_of_record")
    return "".join(f"{r}\n" for r in records)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = ()
COVERAGE = (
    "`go test -coverprofile -coverpkg=<the changed packages>` (`coverage_command`), the "
    "profile turned into LCov (`profile_to_lcov`)"
)
