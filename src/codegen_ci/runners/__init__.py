"""Test runners: one module per runner, each providing the whole `TestRunner` Protocol
(`base.py`), listed once in `RUNNERS`. What the gate, the workspace and init know about a
runner they ask here: how to get its JUnit and how its reporter names cases, what its output
says when it could not start, its configuration and cache files, what its output says ran or
was skipped, what its output says that its JUnit does not, how its coverage is measured, which
CI line runs it and what init writes for it (for its CI line, for the root file that marks it).

Takes a command (and, where the repository's files matter, a guarded reader of them or a
`CoverageAsk`/`InitAsk`); returns that runner's answer. A new runner is one new file here,
its line in `RUNNERS`, and its tests (docs/architecture.md, "A new test runner"). Modules
whose names start with `_` hold what several runners share and are no runners. The order of
`RUNNERS` is the order they are asked in: the first whose `COMMAND` matches gives a command's
JUnit hint, the first with a coverage plan for a command measures it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from codegen_ci.runners import cargo, go, jest, mocha, node_test, pytest, unittest, vitest
from codegen_ci.runners.base import (
    CoverageAsk,
    CoverageFormat,
    CoveragePlan,
    DefinedAt,
    EnvironmentAdvice,
    FailedAt,
    FromOutput,
    InitAsk,
    InitJUnit,
    InitLeftOut,
    InitTests,
    Location,
    NestedCases,
    OutputCase,
    Ran,
    Read,
    ReportedCase,
    Signature,
    StartFailure,
    TestRunner,
    Totals,
    Tree,
    WorkflowAsk,
    in_folder,
)

__all__ = [
    "RUNNERS",
    "CoverageAsk",
    "CoverageFormat",
    "CoveragePlan",
    "DefinedAt",
    "EnvironmentAdvice",
    "FailedAt",
    "FromOutput",
    "InitAsk",
    "InitJUnit",
    "InitLeftOut",
    "InitTests",
    "Location",
    "NestedCases",
    "OutputCase",
    "Ran",
    "Read",
    "ReportedCase",
    "Signature",
    "StartFailure",
    "TestRunner",
    "Totals",
    "Tree",
    "WorkflowAsk",
    "artifact_globs",
    "asks_for_junit",
    "by_name",
    "case_id",
    "checkout_caches",
    "ci_test",
    "ci_tests",
    "config_globs",
    "configured_reports",
    "coverage_plan",
    "defined_at",
    "doctest_examples",
    "download",
    "every_test",
    "failed_at",
    "failed_test",
    "from_output",
    "installs",
    "is_checkout_cache",
    "junit_args",
    "junit_env",
    "junit_file",
    "junit_hint",
    "library_paths",
    "locations",
    "measured",
    "named_tests",
    "nested_cases",
    "no_tests_exit",
    "no_toolchain",
    "ran_count",
    "refine",
    "script_words",
    "signatures",
    "start_failures",
    "totals",
    "user_cache_places",
    "user_caches",
    "whole_unit",
    "workflow_steps",
]

RUNNERS: dict[str, TestRunner] = {
    "vitest": vitest,
    "jest": jest,
    "mocha": mocha,
    "unittest": unittest,
    "node_test": node_test,
    "go": go,
    "cargo": cargo,
    "pytest": pytest,
}


def by_name(name: str) -> TestRunner:
    """The runner whose `NAME` is `name` (`node --test`, `jest`, ...)."""
    return next(r for r in RUNNERS.values() if name == r.NAME)


def script_words() -> str:
    """How a package.json script starts any Node runner (`jest|vitest|...`), for a regex."""
    return "|".join(r.SCRIPT_WORD for r in RUNNERS.values() if r.SCRIPT_WORD)


def ci_test(line: str) -> bool:
    """Whether a CI line runs some runner's tests (its `CI_TEST`)."""
    return any(r.CI_TEST and r.CI_TEST.match(line) for r in RUNNERS.values())


def installs() -> dict[str, str]:
    """How to install each program a runner's commands need (its `INSTALLS`), by name."""
    return {name: how for r in RUNNERS.values() for name, how in r.INSTALLS}


def ci_tests(line: str, ask: InitAsk, marked: Callable[[TestRunner], bool]) -> InitTests | None:
    """What init writes for a CI line: the first runner's whose command it is, among those a
    root file marks (`marked`) or that need none."""
    for runner in RUNNERS.values():
        if runner.MARKERS and not marked(runner):
            continue
        if (found := runner.ci_tests(line, ask)) is not None:
            return found
    return None


def workflow_steps(ask: WorkflowAsk) -> list[str]:
    """The steps init's runner-host workflow adds to set up the runners' toolchains, each
    runner's (`workflow_steps`) in the registry's order, each step once."""
    return list(dict.fromkeys(step for r in RUNNERS.values() for step in r.workflow_steps(ask)))


def junit_hint(text: str) -> str | None:
    """How to make the runner `text` (a command and the script it runs) names write JUnit."""
    for runner in RUNNERS.values():
        if runner.JUNIT_HINT and runner.COMMAND.search(text):
            return runner.JUNIT_HINT
    return None


def asks_for_junit(text: str) -> bool:
    """Whether `text` already passes some runner its JUnit flags."""
    return any(r.ASKS_FOR_JUNIT and r.ASKS_FOR_JUNIT.search(text) for r in RUNNERS.values())


def junit_file(text: str) -> str | None:
    """The report file the first JUnit flag in `text` names."""
    found = [m for r in RUNNERS.values() if r.JUNIT_FILE and (m := r.JUNIT_FILE.search(text))]
    return min(found, key=lambda m: m.start())[1] if found else None


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    """The variables that ask every runner that reads one for JUnit at `report`."""
    out = dict(env)
    for runner in RUNNERS.values():
        out.update(runner.junit_env(out, report))
    return out


def every_test(command: str) -> str:
    """`command` as the gate runs it: each runner's way of running and reporting every test
    even when some fail (cargo's `--no-fail-fast`)."""
    for runner in RUNNERS.values():
        command = runner.every_test(command)
    return command


def junit_args(command: str) -> list[str]:
    """Report paths `command` passes its runner itself."""
    return [path for r in RUNNERS.values() if (path := r.junit_arg(command))]


def configured_reports(command: str, env: Mapping[str, str], read: Read) -> list[str]:
    """Reports the repository's own runner config makes `command` write."""
    return [path for r in RUNNERS.values() for path in r.configured_reports(command, env, read)]


def from_output(ran: Ran) -> FromOutput | None:
    """What the first runner with an answer reads from a test command's output that its JUnit
    leaves unsaid (Go's build failures; plain `cargo test`'s cases)."""
    return next((f for r in RUNNERS.values() if (f := r.from_output(ran)) is not None), None)


def refine(
    cases: tuple[ReportedCase, ...], tree: Tree | None
) -> tuple[ReportedCase | None, ...] | None:
    """One report's cases made precise by the first runner that has an answer (Go's messages,
    places, subtests and panics), one for each case, None for one left out; None: as they
    are."""
    return next((f for r in RUNNERS.values() if (f := r.refine(cases, tree)) is not None), None)


def whole_unit(classname: str, name: str) -> str | None:
    """What a failing case stands for when some runner says it is a whole unit of tests (Go's
    package that did not build); None: a test."""
    return next(
        (u for r in RUNNERS.values() if (u := r.whole_unit(classname, name)) is not None), None
    )


def defined_at(classname: str, name: str, tree: Tree) -> DefinedAt | None:
    """Where the first runner that knows says the test `classname::name` is defined in
    `tree`."""
    return next((d for r in RUNNERS.values() if (d := r.defined_at(classname, name, tree))), None)


def case_id(name: str, classname: str) -> str | None:
    """The first runner's own id for a JUnit case its reporter names in a shape of its own;
    None: the common `classname::name`."""
    return next((i for r in RUNNERS.values() if (i := r.case_id(name, classname))), None)


def nested_cases(classname: str) -> NestedCases | None:
    """The runner's rule for a case whose `classname` says nothing, named by its suites."""
    return next(
        (n for r in RUNNERS.values() if (n := r.NESTED_CASES) and n.classname == classname),
        None,
    )


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """The coverage run of `command` by the first runner it is a command of, or that runner's
    reason it cannot be measured; None when no runner measures such a command.

    A command run from a folder (`cd DIR && COMMAND`, base.py's `in_folder`) is COMMAND's plan
    asked in DIR, for every runner alike: the change's files, the files read and the tree
    relative to DIR; the plan's command run in DIR again, its `sources` the repository's
    paths, and its `folder` DIR (where gate/coverage.py reads the report's relative paths
    from)."""
    folder, inner = in_folder(command)
    if folder.path:
        outer = ask.read

        def read(rel: str) -> str | None:
            return outer(folder.outward(rel))

        ask = replace(
            ask,
            sources=tuple(folder.inward(s) for s in ask.sources),
            tree=folder.tree(ask.tree),
            read=read,
        )
    plan = next((p for r in RUNNERS.values() if (p := r.coverage_plan(inner, ask))), None)
    if not folder.path or not isinstance(plan, CoveragePlan):
        return plan
    return replace(
        plan,
        command=folder.wrap(plan.command),
        sources=tuple(folder.outward(s) for s in plan.sources),
        folder=folder.path,
    )


def measured() -> tuple[str, ...]:
    """The names of the runners whose coverage is measured (their `COVERAGE` says how)."""
    return tuple(r.NAME for r in RUNNERS.values() if not r.COVERAGE.startswith("not measured"))


def signatures(means: StartFailure) -> tuple[re.Pattern[str], ...]:
    """Every runner's output patterns that mean `means`."""
    return tuple(s.pattern for r in RUNNERS.values() for s in r.SIGNATURES if s.means == means)


def start_failures(means: StartFailure) -> tuple[Signature, ...]:
    """Every runner's signatures that mean `means`, with their `unless`."""
    return tuple(s for r in RUNNERS.values() for s in r.SIGNATURES if s.means == means)


def no_tests_exit(exit_code: int, text: str) -> TestRunner | None:
    """The runner whose `NO_TESTS_EXIT` is `exit_code` and whose name `text` (the command and
    its output) has."""
    return next(
        (r for r in RUNNERS.values() if exit_code == r.NO_TESTS_EXIT and r.NAME in text), None
    )


def failed_test() -> re.Pattern[str]:
    """A line of any runner's output naming a failed test."""
    parts = dict.fromkeys(r.FAILED_TEST for r in RUNNERS.values() if r.FAILED_TEST)
    return re.compile(rf"^(?:{'|'.join(parts)})", re.M)


def no_toolchain() -> tuple[EnvironmentAdvice, ...]:
    """Every runner's toolchain-not-found signature, with its advice."""
    return tuple(r.NO_TOOLCHAIN for r in RUNNERS.values() if r.NO_TOOLCHAIN)


def download(command: str, text: str) -> EnvironmentAdvice | None:
    """The first runner's download that `text` (the output of `command`) shows failing."""
    for runner in RUNNERS.values():
        for advice in runner.DOWNLOADS:
            wanted = advice.command is None or advice.command.search(command)
            if wanted and advice.pattern.search(text):
                return advice
    return None


def needed_download(text: str) -> tuple[EnvironmentAdvice, re.Match[str]] | None:
    """The first runner's download that `text` says was needed and could not happen
    (`EnvironmentAdvice.needed`), and the line that says so."""
    for runner in RUNNERS.values():
        for advice in runner.DOWNLOADS:
            if advice.needed and (match := advice.needed.search(text)):
                return advice, match
    return None


def without_backtraces(text: str) -> str:
    """`text` with each backtrace block a runner's toolchain printed (`BACKTRACE`) replaced by
    one line saying so."""
    for runner in RUNNERS.values():
        if runner.BACKTRACE is not None:
            text = runner.BACKTRACE.sub(BACKTRACE_LEFT_OUT, text)
    return text


BACKTRACE_LEFT_OUT = "(backtrace left out)\n"


def failed_at(output: str) -> tuple[TestRunner, list[FailedAt]] | None:
    """The first runner whose own output says where tests failed, and those places."""
    for runner in RUNNERS.values():
        if found := runner.failed_at(output):
            return runner, found
    return None


def locations() -> tuple[Location, ...]:
    """Every runner's ways of naming a failure's place, each once (a JUnit case's text)."""
    return tuple(dict.fromkeys(loc for r in RUNNERS.values() for loc in r.LOCATIONS))


def library_paths() -> tuple[str, ...]:
    """Parts of a frame's path that mark it as some runner's library or runtime."""
    return tuple(dict.fromkeys(part for r in RUNNERS.values() for part in r.LIBRARY_PATHS))


def config_globs() -> tuple[str, ...]:
    return tuple(dict.fromkeys(g for r in RUNNERS.values() for g in r.CONFIG_GLOBS))


def artifact_globs() -> tuple[str, ...]:
    return tuple(dict.fromkeys(g for r in RUNNERS.values() for g in r.ARTIFACT_GLOBS))


def user_cache_places() -> tuple[tuple[str, str], ...]:
    """(variable, folder in a phase's scratch) of every runner's user caches."""
    return tuple(place for r in RUNNERS.values() for place in r.USER_CACHES)


def user_caches(environ: Mapping[str, str]) -> tuple[tuple[str, Path], ...]:
    """The user's caches that exist, by variable."""
    return tuple(found for r in RUNNERS.values() for found in r.user_caches(environ))


def checkout_caches() -> frozenset[str]:
    """The names of the runners' cache folders in a checkout."""
    return frozenset(name for r in RUNNERS.values() for name in r.CHECKOUT_CACHES)


def tmpdir_caches() -> tuple[str, ...]:
    """The globs of the runners' cache folders in TMPDIR."""
    return tuple(dict.fromkeys(g for r in RUNNERS.values() for g in r.TMPDIR_CACHES))


def is_checkout_cache(folder: Path) -> bool:
    return any(r.is_checkout_cache(folder) for r in RUNNERS.values())


def ran_count(text: str) -> bool:
    """Whether some runner's output says how many tests it ran (none included)."""
    return any(r.RAN_COUNT and r.RAN_COUNT.search(text) for r in RUNNERS.values())


def named_tests(text: str) -> list[tuple[str, bool]]:
    """(test id, skipped) for each test a runner's own output names."""
    return [found for r in RUNNERS.values() for found in r.named_tests(text)]


def totals(text: str) -> Totals | None:
    """The first runner's totals, where its output gives only those."""
    return next((t for r in RUNNERS.values() if (t := r.totals(text)) is not None), None)


def doctest_examples(test_id: str, file: str, text: str) -> int | None:
    """How many examples of the documentation test `test_id` run where `file` holds `text`,
    as the first runner that knows such a test counts them (pytest's doctests); None: no
    runner does."""
    return next(
        (n for r in RUNNERS.values() if (n := r.doctest_examples(test_id, file, text)) is not None),
        None,
    )
