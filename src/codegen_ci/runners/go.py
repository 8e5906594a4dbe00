"""go test, and gotestsum (which runs it and writes JUnit); `go test -v`'s lines where no
JUnit was written. What Go's JUnit leaves unsaid is read in gate/junit/go.py."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.runners import base
from codegen_ci.runners.base import EnvironmentAdvice, InitJUnit, Location, Signature, plain_tokens

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

JUNIT_HINT: str | None = base.junit_hint(
    "go", "run `gotestsum --junitfile junit.xml -- ./...` instead of `go test ./...`"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junitfile\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junitfile[= ]")
junit_command = base.no_junit_command
junit_env = base.no_junit_env
junit_arg = base.no_junit_arg
configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id

# `? pkg [no test files]` for every package, and no line saying a test ran
NO_TEST_FILES = re.compile(r"^\?\s+\S+\s+\[no test files\]\s*$", re.M)
RAN = re.compile(r"^(?:ok|FAIL|---|=== RUN|PASS|DONE [1-9]\d* tests?)\b", re.M)
SIGNATURES: tuple[Signature, ...] = (Signature(NO_TEST_FILES, "no test files", unless=RAN),)
NO_TESTS_EXIT: int | None = None
NO_TOOLCHAIN: EnvironmentAdvice | None = None
# modules it tried to download (no network): the module cache is the user's to show
DOWNLOADS: tuple[EnvironmentAdvice, ...] = (
    EnvironmentAdvice(
        re.compile(r"^go: downloading |proxy\.golang\.org|GOPROXY=off|GOFLAGS=-mod=mod", re.M),
        "Go tried to download modules",
        "Go looks for modules in GOMODCACHE, by default `~/go/pkg/mod`. {home_note} Set "
        "GOMODCACHE (or GOPATH) to your module cache in the run's environment "
        "(`go env GOMODCACHE` prints it; it is shown read-only) so nothing is downloaded.",
    ),
)
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


# `go test ARGS` runs as `go test -coverprofile=<io>/cover.out -coverpkg=<packages> ARGS`, and
# `gotestsum ... -- ARGS` gets the same two flags after its `--` (gate/coverage_go.py finds
# the packages and reads the profile)
COVER_PROFILE = "cover.out"


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


COVERAGE = (
    "`go test -coverprofile -coverpkg=<the changed packages>` (`coverage_command`), the "
    "profile read as LCov: gate/coverage_go.py"
)
