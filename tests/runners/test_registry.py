"""The registry: every runner module is listed, each provides the whole `TestRunner`
Protocol (so a new runner is one new file, plus its line in `RUNNERS`), and the questions the
gate asks across runners get each runner's answer."""

from __future__ import annotations

import inspect
import pkgutil
import re
from pathlib import Path
from types import FunctionType

import pytest
from tests.helpers.coverage_ask import coverage_ask

import codegen_ci
from codegen_ci import runners
from codegen_ci.runners import RUNNERS
from codegen_ci.runners import TestRunner as RunnerProtocol  # not a test class
from codegen_ci.workspace.file_kinds import is_protected_test_path
from codegen_ci.workspace.paths import ARTIFACT_GLOBS, matches

NOT_RUNNERS = {"base"}


def protocol_members() -> set[str]:
    functions = {n for n, v in vars(RunnerProtocol).items() if isinstance(v, FunctionType)}
    return (set(RunnerProtocol.__annotations__) | functions) - {
        n for n in functions if n.startswith("_")
    }


def test_every_module_of_the_package_is_a_registered_runner() -> None:
    # a module whose name starts with `_` holds what several runners share (_node, _python)
    names = {m.name for m in pkgutil.iter_modules(runners.__path__)}
    modules = {n for n in names if not n.startswith("_")} - NOT_RUNNERS
    registered = {runner.__name__.rsplit(".", 1)[-1] for runner in RUNNERS.values()}
    assert modules == registered
    expected = {"pytest", "unittest", "jest", "vitest", "mocha", "node_test", "go", "cargo"}
    assert expected <= registered  # a new runner is one more file: nothing here names it


@pytest.mark.parametrize("key", list(RUNNERS))
def test_each_runner_provides_the_whole_protocol(key: str) -> None:
    runner = RUNNERS[key]
    members = protocol_members()
    assert {"NAME", "COMMAND", "JUNIT_HINT", "COVERAGE"} <= members
    missing = [name for name in members if not hasattr(runner, name)]
    assert not missing, f"{key} lacks {missing}"
    for name in members:
        declared = vars(RunnerProtocol).get(name)
        if isinstance(declared, FunctionType):
            wanted = list(inspect.signature(declared).parameters)[1:]  # without self
            assert list(inspect.signature(getattr(runner, name)).parameters) == wanted, name
    assert isinstance(runner.COMMAND, re.Pattern)
    assert runner.COVERAGE


@pytest.mark.parametrize(
    ("text", "runner"),
    [
        ("npx vitest run", "vitest"),
        ("vitest run && jest", "vitest"),
        ("jest --ci", "jest"),
        ("mocha test/", "mocha"),
        ("node --test tests/", "node's test runner"),
        ("go test ./...", "go"),
        ("gotestsum -- ./...", "go"),
        ("cargo test", "cargo"),
        ("python -m pytest -q", "pytest"),
        ("tox -e py311", "pytest"),
    ],
)
def test_the_junit_hint_names_the_runner_the_command_uses(text: str, runner: str) -> None:
    hint = runners.junit_hint(text)
    assert hint is not None and hint.startswith(runner + ":")


def test_no_hint_for_a_command_no_runner_knows_nor_for_unittest() -> None:
    assert runners.junit_hint("make check") is None
    assert runners.junit_hint("python -m unittest discover") is None


@pytest.mark.parametrize(
    ("text", "report"),
    [
        ("vitest run --reporter=junit --outputFile.junit=out/v.xml", "out/v.xml"),
        ("JEST_JUNIT_OUTPUT_FILE=r/j.xml jest --reporters=jest-junit", "r/j.xml"),
        ("mocha --reporter mocha-junit-reporter --reporter-options mochaFile=m.xml", "m.xml"),
        ("node --test --test-reporter=junit --test-reporter-destination=n.xml", "n.xml"),
        ("gotestsum --junitfile g.xml ./...", "g.xml"),
        ("pytest --junitxml=p.xml", "p.xml"),
        ("jest --reporters=default --reporters=jest-junit", None),
    ],
)
def test_a_command_that_asks_for_junit_names_its_file(text: str, report: str | None) -> None:
    assert runners.asks_for_junit(text)
    assert runners.junit_file(text) == report


def test_the_first_junit_file_named_wins_and_plain_commands_ask_for_none() -> None:
    text = "pytest --junitxml=a.xml && gotestsum --junitfile b.xml"
    assert runners.junit_file(text) == "a.xml"
    assert not runners.asks_for_junit("npm test")
    assert runners.junit_file("npm test") is None


def test_only_pytest_is_asked_through_the_environment() -> None:
    env = runners.junit_env({"HOME": "/h"}, "/d/t.xml")
    assert env == {"HOME": "/h", "PYTEST_ADDOPTS": "--junitxml=/d/t.xml"}
    assert runners.junit_args("pytest --junit-xml r.xml") == ["r.xml"]
    assert runners.junit_args("go test ./...") == []


@pytest.mark.parametrize(
    ("output", "means"),
    [
        ("Error: Cannot find module 'jest'", "runner missing"),
        ("Error: Cannot find module 'ts-jest'", "runner missing"),
        ("Error: Cannot find module 'vitest'", "runner missing"),
        ("Error: Cannot find module 'mocha'", "runner missing"),
        ('Error: invalid reporter "mocha-junit-reporter"', "reporter missing"),
        ("Could not resolve a module for a custom reporter: jest-junit", "reporter missing"),
        ("Error: Failed to load custom Reporter from junit", "reporter missing"),
        ("No tests found, exiting with code 1", "no tests"),
        ("No test files found, exiting with code 1", "no tests"),
        ('Error: No test files found: "test/"', "no tests"),
        ("ℹ tests 0", "no tests"),
        ("# tests 0", "no tests"),
        ("Ran 0 tests in 0.000s", "no tests"),
    ],
)
def test_each_runners_cannot_start_signatures(output: str, means: runners.StartFailure) -> None:
    assert any(p.search(output) for p in runners.signatures(means))
    kinds: tuple[runners.StartFailure, ...] = ("runner missing", "reporter missing", "no tests")
    others = [kind for kind in kinds if kind != means]
    assert not any(p.search(output) for m in others for p in runners.signatures(m))


@pytest.mark.parametrize(
    "line",
    [
        "FAILED tests/test_a.py::test_x - assert 1 == 2",
        "--- FAIL: TestAdd (0.00s)",
        "not ok 1 - adds",
        "  ✕ adds (3 ms)",
        "   × adds 2ms",
        "test tests::adds ... FAILED",
    ],
)
def test_a_failed_test_line_of_every_runner_is_known(line: str) -> None:
    assert runners.failed_test().search("some output\n" + line + "\nmore")


def test_a_passing_line_is_no_failed_test() -> None:
    assert not runners.failed_test().search("test tests::adds ... ok\n--- PASS: TestAdd\nok 1")


@pytest.mark.parametrize(
    "path",
    [
        "conftest.py",
        "pkg/conftest.py",
        "pytest.ini",
        "tox.ini",
        "jest.config.ts",
        "vitest.config.mjs",
    ],
)
def test_each_runners_configuration_is_protected_with_the_tests(path: str) -> None:
    assert is_protected_test_path(path)


@pytest.mark.parametrize(
    "path",
    [".pytest_cache/v/cache/lastfailed", ".jest-cache/x", ".vitest/results.json", "coverage.out"],
)
def test_each_runners_own_caches_and_reports_are_artifacts(path: str) -> None:
    assert matches(path, ARTIFACT_GLOBS)


def test_go_s_build_cache_is_warm_and_cargo_s_target_only_beside_a_cargo_toml(
    tmp_path: Path,
) -> None:
    gocache = tmp_path / "gocache"
    gocache.mkdir()
    assert runners.user_caches({"GOCACHE": str(gocache)}) == (("GOCACHE", gocache),)
    assert runners.user_caches({"GOCACHE": "off"}) == ()
    xdg = tmp_path / "xdg"
    (xdg / "go-build").mkdir(parents=True)
    environ = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(xdg)}
    assert runners.user_caches(environ) == (("GOCACHE", xdg / "go-build"),)
    assert ("GOCACHE", "cache/go-build") in runners.user_cache_places()
    (tmp_path / "target").mkdir()
    assert not runners.is_checkout_cache(tmp_path / "target")
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    assert runners.is_checkout_cache(tmp_path / "target")
    assert "target" in runners.checkout_caches()


@pytest.mark.parametrize(
    ("output", "tests"),
    [
        (
            "test tests::adds ... ok\ntest tests::slow ... ignored\n",
            [("tests::adds", False), ("tests::slow", True)],
        ),
        ("test src/lib.rs - clamp (line 3) ... ok\n", [("src/lib.rs - clamp", False)]),
        (
            "--- PASS: TestAdd (0.00s)\n    --- SKIP: TestAdd/sub (0.00s)\n",
            [("TestAdd", False), ("TestAdd/sub", True)],
        ),
        (
            "test_a (m.T.test_a) ... ok\ntest_b (m.T.test_b) ... skipped 'later'\n",
            [("m.T.test_a", False), ("m.T.test_b", True)],
        ),
    ],
)
def test_skipped_tests_in_a_runners_own_lines(output: str, tests: list[tuple[str, bool]]) -> None:
    assert runners.named_tests(output) == tests


@pytest.mark.parametrize(
    ("output", "total", "skipped"),
    [
        ("Ran 4 tests in 0.01s\n\nOK (skipped=1)\n", 4, 1),
        ("ℹ tests 5\nℹ pass 3\nℹ skipped 1\nℹ todo 1\n", 5, 2),
        ("# tests 2\n# skip 0\n", 2, 0),
        # vitest without a JUnit reporter (`npm test` through a wrapper): its summary lines
        (
            " Test Files  2 failed | 1 passed (3)\n      Tests  31 failed | 446 passed (477)\n",
            477,
            0,
        ),
        (" Test Files  1 passed | 2 skipped (3)\n      Tests  477 skipped (477)\n", 477, 477),
        ("      Tests  2 passed | 1 skipped | 1 todo (4)\n      Tests  1 passed (1)\n", 5, 2),
        # jest without jest-junit
        (
            "Test Suites: 1 passed, 1 total\nTests:       1 skipped, 1 todo, 3 passed, 5 total\n",
            5,
            2,
        ),
        ("Tests:       1 failed, 2 passed, 3 total\nSnapshots:   0 total\n", 3, 0),
    ],
)
def test_totals_where_a_runner_names_no_test(output: str, total: int, skipped: int) -> None:
    assert runners.totals(output) == runners.Totals(total, skipped)
    assert runners.ran_count(output)


def test_running_zero_tests_is_a_known_run_with_nothing_named() -> None:
    assert runners.ran_count("running 0 tests\n")
    assert runners.named_tests("running 0 tests\n") == []
    assert not runners.ran_count("make: Nothing to be done")


# a command of each runner whose coverage is measured, and a changed source file it measures
COVERED = {
    "pytest": ("python -m pytest -q", "calc.py"),
    "unittest": ("python -m unittest", "calc.py"),
    "jest": ("npx jest --ci", "src/calc.js"),
    "vitest": ("npx vitest run", "src/calc.ts"),
    "node_test": ("node --test", "src/calc.mjs"),
    "go": ("go test ./...", "calc.go"),
}


def test_each_runner_says_how_its_coverage_is_measured_or_why_not(tmp_path: Path) -> None:
    """A measured runner's `coverage_plan` answers for its own command alone (a plan, or why
    not); the others' answer None: its file is where its coverage is planned."""
    not_measured = {k for k, r in RUNNERS.items() if r.COVERAGE.startswith("not measured: ")}
    assert {"mocha", "cargo"} <= not_measured
    assert set(COVERED) == set(RUNNERS) - not_measured
    assert runners.measured() == tuple(RUNNERS[k].NAME for k in RUNNERS if k in COVERED)
    (tmp_path / "go.mod").write_text("module example.com/calc\n")
    (tmp_path / "node_modules" / "@vitest" / "coverage-v8").mkdir(parents=True)
    for key, (command, source) in COVERED.items():
        ask = coverage_ask(tmp_path, [source, "tests/test_x.py"], tmp_path / "io")
        answers = {k: r.coverage_plan(command, ask) for k, r in RUNNERS.items()}
        plan = answers.pop(key)
        assert isinstance(plan, runners.CoveragePlan), (key, plan)
        assert plan.sources == (source,) and plan.report and plan.command != command
        assert set(answers.values()) == {None}, (key, answers)


def test_what_init_writes_for_each_runners_junit() -> None:
    jest, node = runners.by_name("jest").INIT, runners.by_name("node --test").INIT
    assert jest is not None and jest.package == "jest-junit"
    assert jest.env.format(report=jest.report) == "JEST_JUNIT_OUTPUT_FILE=reports/junit-jest.xml "
    assert node is not None and "--test-reporter=junit" in node.options
    go = runners.by_name("go test").INIT
    assert go is not None and any("gotestsum" in line for line in go.setup)
    for key, runner in RUNNERS.items():
        if runner.INIT is not None:  # the report it names is one its JUnit flags write
            assert runner.INIT.report.endswith(".xml"), key
    assert runners.by_name("unittest").INIT is None


def test_a_failed_download_is_advised_by_the_runner_that_keeps_it() -> None:
    cargo_line = "    Updating crates.io index\nerror: failed to get `serde`"
    advice = runners.download("cargo test", cargo_line)
    assert advice is not None and "CARGO_HOME" in advice.advice
    assert runners.download("make test", cargo_line) is None  # cargo's only for cargo commands
    go = runners.download("go test ./...", "go: downloading golang.org/x/text v0.3.0")
    assert go is not None and "{home_note}" in go.advice and "GOMODCACHE" in go.advice
    toolchains = runners.no_toolchain()
    assert any(t.pattern.search("error: rustup could not choose a version") for t in toolchains)


def test_where_tests_failed_without_junit_comes_from_the_runner_that_printed_it() -> None:
    output = "thread 'tests::eq' panicked at src/lib.rs:5:9:\nassertion failed\n"
    found = runners.failed_at(output)
    assert found is not None
    runner, places = found
    assert runner.NAME == "cargo" and runner.FAILED_AT_TITLE == "Rust tests that panicked"
    assert places == [runners.FailedAt("tests::eq", "src/lib.rs", 5)]
    assert runners.failed_at("FAILED tests/test_a.py::test_x") is None


def test_what_says_a_repository_uses_a_runner() -> None:
    assert runners.by_name("go test").MARKERS == ("go.mod",)
    assert runners.by_name("cargo").MARKERS == ("Cargo.toml",)
    words = re.compile(rf"^(?:{runners.script_words()})\b")
    for script in ("jest --coverage", "vitest run", "mocha test/", "node  --test"):
        assert words.match(script), script
    assert not words.match("tsc -p .")
    for runner in RUNNERS.values():  # a Node runner init finds in a script has its JUnit
        assert runner.SCRIPT_WORD is None or runner.INIT is not None


def test_each_runners_failure_places_have_a_path_and_a_line() -> None:
    """gate/junit/cases.py joins every runner's `LOCATIONS` into one alternation and reads a
    match's last group as the line, the one before as the path."""
    for key, runner in RUNNERS.items():
        assert runner.LOCATIONS or key == "cargo" or runner.LIBRARY_PATHS, key
        for location in runner.LOCATIONS:
            assert re.compile(location.pattern).groups == 2, (key, location.pattern)
    found = {loc.pattern for loc in runners.locations()}
    assert len(found) == len(runners.locations())  # shared ones (a Python frame) once
    assert "node_modules" in runners.library_paths() and "/pkg/mod/" in runners.library_paths()
    panic = runners.by_name("cargo").LOCATIONS[0]
    assert re.search(panic.pattern, "thread 't' panicked at src/lib.rs:12:5:").groups() == (
        "src/lib.rs",
        "12",
    )


def test_go_finding_no_test_file_counts_only_where_no_test_ran() -> None:
    (none,) = runners.start_failures("no test files")
    assert none.found("?   \texample.com/a\t[no test files]\n")
    assert not none.found("?   \texample.com/a\t[no test files]\nok  \texample.com/b\t0.1s\n")


def test_pytest_s_exit_5_says_it_collected_no_test() -> None:
    found = runners.no_tests_exit(5, "python -m pytest -q\ncollected 0 items")
    assert found is not None and found.NAME == "pytest"
    assert runners.no_tests_exit(5, "make test") is None
    assert runners.no_tests_exit(1, "pytest") is None


def test_case_ids_in_a_reporters_own_shape_are_the_runners() -> None:
    # mocha-junit-reporter: name "suite title", classname "title"
    assert runners.case_id("Cart adds an item", "adds an item") == "Cart adds an item"
    assert runners.case_id("test_a", "pkg.mod") is None  # the common `classname::name`
    nested = runners.nested_cases("test")  # node's reporter: every case's classname
    assert nested is not None and nested.suite_attribute == "disabled"
    assert runners.nested_cases("pkg.mod") is None


def test_a_ci_line_is_written_as_the_runner_whose_command_it_is(tmp_path: Path) -> None:
    """init asks every runner a root file marks whether a CI line is its command."""
    ask = runners.InitAsk(
        read=lambda rel: None, installed=lambda name: False, environ={"CARGO_HOME": "/none"}
    )
    marked = runners.ci_tests("go test -race ./...", ask, lambda r: True)
    assert marked is not None and marked.junit == ("reports/junit-go.xml",)
    assert marked.test == ("gotestsum --junitfile reports/junit-go.xml -- -race ./...",)
    assert runners.ci_tests("go test ./...", ask, lambda r: False) is None  # no go.mod
    cargo = runners.ci_tests("cargo test --workspace", ask, lambda r: True)
    assert cargo is not None and cargo.test == ("cargo test --workspace",) and not cargo.junit
    assert "nextest is not installed" in cargo.notes[0]
    assert runners.ci_tests("npm run lint", ask, lambda r: True) is None


@pytest.mark.parametrize(
    ("line", "runs"),
    [
        ("pytest -q", True),
        ("python3 -m unittest discover", True),
        ("npx vitest run", True),
        ("node --test test/", True),
        ("gotestsum -- ./...", True),
        ("cargo nextest run", True),
        ("cargo build", False),
        ("go vet ./...", False),
        ("npx eslint .", False),
    ],
)
def test_a_ci_line_that_runs_tests_is_some_runners(line: str, runs: bool) -> None:
    assert runners.ci_test(line) is runs


def test_every_harness_file_of_gate_is_some_runners_plugin() -> None:
    """The files loaded into a runner's own process live in gate/ (loaded by path, never
    imported by the tool); which runner each belongs to is said in its file (`PLUGINS`)."""
    gate = Path(codegen_ci.__file__).parent / "gate"
    named = {p for r in RUNNERS.values() for p in r.PLUGINS}
    assert {p for p in named if p.endswith(".py")} == {p.name for p in gate.glob("codegen_*.py")}
    assert runners.by_name("unittest").PLUGINS[0] == "codegen_unittest.py"
    assert "vendor/slipcover" in named  # the tool's own package, put beside them
