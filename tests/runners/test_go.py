"""How go test and gotestsum are asked for a cover profile of the changed packages
(runners/go.py); its module cache's misses; its packages that did not build, its cases made
precise against the package's sources and where its tests are defined."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from codegen_ci import runners
from codegen_ci.runners.base import CaseOutcome
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


def test_a_module_missing_from_a_read_only_module_cache_is_a_download_to_make() -> None:
    """Go's line under bubblewrap (EROFS) and Landlock (EACCES), as go 1.19 printed them; a
    read-only place elsewhere is no download."""
    for errno in ("read-only file system", "permission denied"):
        text = f"x_test.go:6:2: mkdir /home/u/go/pkg/mod/cache/download/github.com: {errno}\n"
        found = runners.needed_download(text)
        assert found is not None and "go mod download" in found[0].advice
        assert found[1].group(0).startswith("/home/u/go/pkg/mod/cache/download/")
    assert runners.needed_download("open /etc/app.conf: read-only file system") is None


BUILD_OUTPUT = """\
# example.com/demo/broken [example.com/demo/broken.test]
broken/broken_test.go:6:17: cannot use Half(4) (value of type int) as type string
broken/broken_test.go:9:2: undefined: x
=== RUN   TestAdd
--- FAIL: TestAdd (0.00s)
"""


def _ran(ok: bool, cases: tuple[runners.ReportedCase, ...] | None) -> runners.Ran:
    return runners.Ran(ok, lambda chars: BUILD_OUTPUT[:chars], cases)


def test_a_package_that_did_not_compile_is_an_error_case_its_junit_lacks() -> None:
    """gotestsum's JUnit lists no case for it: the output's compiler lines are the case."""
    calc = runners.ReportedCase(
        "example.com/demo/calc", "TestAdd", "Failed", "--- FAIL: TestAdd", "failure", None, None
    )
    found = runners.from_output(_ran(False, (calc,)))
    assert found is not None and not found.instead
    (broken,) = found.cases
    assert (broken.classname, broken.name, broken.outcome) == (
        "example.com/demo/broken",
        "[build failed]",
        "error",
    )
    assert (broken.file, broken.line) == ("broken/broken_test.go", 6)
    assert broken.message == "cannot use Half(4) (value of type int) as type string"
    assert broken.details.count("\n") == 1  # both compiler lines


@pytest.mark.parametrize(
    "ran",
    [
        _ran(True, ()),  # it passed
        # the package has its case already
        _ran(
            False,
            (
                runners.ReportedCase(
                    "example.com/demo/broken", "TestX", "Failed", "", "failure", None, None
                ),
            ),
        ),
    ],
)
def test_no_build_failure_case_where_it_passed_or_the_junit_has_the_package(
    ran: runners.Ran,
) -> None:
    assert runners.from_output(ran) is None


STORE_TEST = """\
package store

import "testing"

func TestGet(t *testing.T) {
\tt.Fatal("boom")
}

func TestPut(t *testing.T) {
\tt.Run("one", func(t *testing.T) {})
}

func TestAfter(t *testing.T) {}
"""


def _module(root: Path) -> runners.Tree:
    """A Go module with a nested package, `store`, as the gate hands it to a runner."""
    (root / "go.mod").write_text("module example.com/shop\n\ngo 1.21\n")
    (root / "inner" / "store").mkdir(parents=True)
    (root / "inner" / "store" / "store_test.go").write_text(STORE_TEST)
    files = ["go.mod", "inner/store/store_test.go"]

    def glob(pattern: str) -> list[str]:
        return [f for f in files if PurePosixPath(f).match(pattern)]

    return runners.Tree(root, lambda rel: (root / rel).read_text(), glob)


def _case(
    name: str, message: str, details: str, outcome: CaseOutcome = "failure"
) -> runners.ReportedCase:
    store = "example.com/shop/inner/store"
    return runners.ReportedCase(store, name, message, details, outcome, None, None)


def test_go_cases_are_made_precise_against_the_packages_sources(tmp_path: Path) -> None:
    """The log line's words at the file in its package's folder; a parent that failed only
    through its subtest left out; a panic names the tests it kept from running."""
    tree = _module(tmp_path)
    logged = _case("TestGet", "Failed", "=== RUN   TestGet\n    store_test.go:6: boom\n")
    parent = _case("TestPut", "Failed", "=== RUN   TestPut\n--- FAIL: TestPut (0.00s)\n")
    child = _case("TestPut/one", "Failed", "    store_test.go:10: want 1\n")
    panicked = _case("TestPut/two", "Failed", "panic: nil map [recovered]\n\ngoroutine 7\n")
    refined = runners.refine((logged, parent, child, panicked), tree)
    assert refined is not None
    got, folded, sub, panic = refined
    assert folded is None
    assert got is not None and (got.message, got.file, got.line) == (
        "boom",
        "inner/store/store_test.go",
        6,
    )
    assert sub is not None and sub.message == "want 1"
    assert panic is not None and panic.message == (
        "panic: nil map (the panic stopped the test binary: 1 of 3 tests in "
        "example.com/shop/inner/store did not run: TestAfter)"
    )
    passed = _case("TestAfter", "", "", "passed")
    assert runners.refine((passed,), tree) is None  # no Go failure: as reported


def test_a_go_tests_definition_and_a_package_that_did_not_build(tmp_path: Path) -> None:
    tree = _module(tmp_path)
    store = "example.com/shop/inner/store"
    assert runners.defined_at(store, "TestPut/one", tree) == ("inner/store/store_test.go", 9, 11)
    assert runners.defined_at(store, "TestGone", tree) is None
    assert runners.defined_at("example.com/other", "TestPut", tree) is None
    assert runners.whole_unit(store, "[build failed]") == store
    assert runners.whole_unit(store, "TestPut") is None
