"""Existing tests are kept: a change that removes a test the base commit ran, skips or disables
it, or makes fewer tests run, is not a success (`validation.protect_tests`, default `keep`).

The check compares two runs of the whole suite: the base commit's (the pre-flight's full runs,
or the baseline's run of the suite in the base worktree, gate/baseline.py) and the round that
would otherwise pass. For pytest, whose pre-flight only collects, the collection lists the
base commit's tests through the `codegen_first` plugin (gate/baseline.py says the rest).

A test is known by its id: its JUnit id (`classname::name`, gate/junit/cases.py), or, for a
test command that wrote no JUnit, the name its runner printed (Rust's libtest `test name ...
ok|ignored`, `go test -v`'s `--- PASS: Name`, unittest's verbose `name (module.Class.name) ...
ok`); where a runner prints only totals (unittest's `Ran N tests` and `skipped=K`, node's
`tests N` and `skipped K`, vitest's and jest's `Tests` summary line), the command's tests count
as one unnamed group. Ids are compared
as multisets: a test the base ran twice (two parameters of the same name) must still run
twice. A position pytest numbered itself (jmespath's compliance cases,
`[given667-starts_with(str, 'S')-...]`: a parameter it cannot print, named by its argument
and its place in the list) is not part of the comparison where both runs numbered that
test's cases 0..n-1, so a case added or deleted before it does not renumber the rest into
"removed" tests (`_renumbering`).

A test is *removed* when the change's run lists it fewer times than the base run did (its file
deleted, its function removed or renamed, a Rust `mod tests` taken out of `src/lib.rs`);
*skipped* when it is still listed but runs fewer times: the change's run reports it skipped
(pytest `skip`/`skipif`/`xfail`, unittest `skip`, jest/vitest/mocha `.skip`/`xit`/`.todo`,
node:test `{skip}`/`t.skip`/`todo`, Go `t.Skip`, Rust `#[ignore]`). When every test is still
there, an existing test file (or a Rust file's inline tests) holding fewer assertions than on
the base commit is *weakened* (an assertion removed: the test runs and proves less). So is a
doctest (pytest's `--doctest-modules`, `--doctest-glob`) that runs fewer examples than on the
base commit: pytest makes one test of a docstring however many examples it holds, so deleting
the failing example, or marking it `# doctest: +SKIP`, leaves the test listed and passing, in
a file that is no test file (`boltons/mathutils.py::boltons.mathutils.clamp`). Each doctest the
round listed in a file the change edited is counted in the file's base and current text, read,
never imported: its runner says how (`doctest_examples`, runners/pytest.py: `ast` finds the
docstring of the test's qualified name, doctest's parser its examples, a `+SKIP` one does not
run). The doctests are those the base commit's runs listed (the pre-flight's collection, a
full run on the base); where they listed none (the baseline ran only the tests a round did not
run, and found none), the round's listing stands for the base's: the ids were compared first,
so every test the base ran is still listed, and one whose docstring the base commit lacks is
new. Tests the change adds, examples it adds, and a docstring reworded around the same
examples are never a problem. Where neither run says which tests ran, nothing is compared.

Subtests are their test's: unittest's `subTest` (and pytest's subtests) report a subtest only
when it fails (`test_valid [inf-and-nan]`, `test_x (n=3)`), and the parent test itself only
when none did. So an id with a subtest's suffix (a space, then `[...]` or `(...)`) counts as its
parent, once: a right fix that makes the failing subtests pass keeps `test_valid`, while a
change that deletes or skips `test_valid` still removes it. (pytest's parameters,
`test_x[1]`, have no space: each stays a test of its own.)

With `keep` (or `true`) such a round fails: the model is told which tests to restore (a
`removed` failure per test, gate/reflection.py), so the run ends successful only with the tests
back. With `false` the round stands, and the report lists what was removed or skipped (the PR
body says the task allowed it).

A round that fails anyway (`noticed`): its tests failed, so the check above does not run, and
the base commit's suite may not be known yet (a pytest pre-flight only collects). The model is
told all the same, beside its failures, what the base runs that already happened can tell
(the pre-flight's full runs, its pytest collection, a full run on the base the baseline made
for this or an earlier round's failures, its runs of failing tests alone, which also say they
ran there): no run of the base commit starts for it, so a skip only the change shows and no
base run confirmed is left out, as is everything when nothing is known yet. It is said only
of a round whose test commands ran to their end (none skipped or timed out; pytest's exit 0, 1
or 5; each failed test command's failure explained by its failing JUnit cases) and whose
change wrote a test file, test configuration or Rust source: tests a round did not reach for
another reason (collection or build errors, `-x`) are not the change's removal. A round that
stopped after the previously failing tests (gate/validation.py) ran only those: only they are
compared (the usual cheat, the failing test deleted or skipped while another still fails, is
one of them; a passing test deleted then shows as its file's fewer assertions, below). A
test inside a unit that failed as a whole (a pytest module that did not import, a Go package
that did not build) is left out too. Files left with fewer assertions are named as in a
passing round. None of this changes the round: it fails for its failures, its stuck
signature is its failures' (the same failures plus a removal are the same failures: a removal
does not buy a round), the report's `removed_tests` stay the last otherwise passing round's,
and the round's `removed` failures are only the check's.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codegen_ci import runners
from codegen_ci.gate import pytest_commands
from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.validation import FailedCommand, RoundOutcome
from codegen_ci.report import CommandResult, Failure, RemovedTest
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import Untrusted, strip_ansi
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.file_kinds import is_protected_test_path, is_test_file
from codegen_ci.workspace.worktree import Worktree

MAX_LOG_BYTES = 32_000_000  # a log longer than this is read in part (output_cap limits logs)
CHECK_NAME = "existing tests kept"

# Runners' own lines naming one test and how it ended, for commands that wrote no JUnit, and
# their totals where that is all a runner prints: each runner's `named_tests`, `totals` and
# `RAN_COUNT` (runners/).


@dataclass(frozen=True)
class SuiteTests:
    """Which tests a run of the whole suite listed (`listed`) and ran, not skipped (`ran`);
    `known`: some command wrote JUnit or printed what it ran (a count of 0 included)."""

    listed: Counter[str] = field(default_factory=Counter)
    ran: Counter[str] = field(default_factory=Counter)
    known: bool = False


def suite_tests(
    cases: Iterable[JUnitCase], records: Iterable[CommandResult], roots: Sequence[Path] = ()
) -> SuiteTests:
    """The tests a run listed: its JUnit cases, and for each test command that wrote no JUnit
    the tests its output names (or counts). `roots`: the tree the run ran in, cut from ids."""
    listed: Counter[str] = Counter()
    ran: Counter[str] = Counter()
    prefixes = _root_prefixes(roots)  # resolved once, not once per test

    def add(test_id: str, skipped: bool, times: int = 1) -> None:
        test_id = _without_roots(test_id, prefixes)
        listed[test_id] += times
        if not skipped:
            ran[test_id] += times

    for case in cases:
        add(case.key, case.outcome == "skipped")
    known = bool(listed)
    for record in records:
        if record.kind != "test" or record.skipped or record.collect_only:
            continue
        known = known or record.junit_tests is not None
        if record.junit_tests is None and record.output_path:
            text = _log(record.output_path)
            known = known or runners.ran_count(text)
            for test_id, skipped, times in _from_output(record.command, text):
                add(test_id, skipped, times)
    return SuiteTests(listed, ran, known or bool(listed))


SUBTEST = re.compile(r"^(?P<parent>\S.*?) (?:\[[^\]]*\]|\([^)]*\))$")


def subtest_parent(test_id: str) -> str:
    """The test a subtest's id (`m.T::test_x (n=3)`) belongs to; any other id itself."""
    match = SUBTEST.match(test_id)
    return match.group("parent") if match else test_id


def _folded(counts: Counter[str]) -> Counter[str]:
    """`counts` with each subtest counted as its parent test, at least once (a test with three
    failing subtests is one test, as a passing one is)."""
    out: Counter[str] = Counter()
    subtests: set[str] = set()
    for test_id, times in counts.items():
        parent = subtest_parent(test_id)
        if parent == test_id:
            out[test_id] += times
        elif times > 0:
            subtests.add(parent)
    for parent in subtests:
        out[parent] = max(out[parent], 1)
    return out


# pytest names a parameter it cannot print (a dict, an object) by its argument and its
# position in the list: `test_expression[given667-starts_with(str, 'S')-True-functions.json]`
# (jmespath's compliance cases, read from JSON files). A case added or deleted before it
# renumbers every later one, so by their ids a right fix that adds one case "removed" a
# hundred, and deleting the failing case named those hundred instead of it.
AUTO_PARAM = re.compile(r"(?<=[\[-])([A-Za-z_][A-Za-z_]*)(\d+)(?=[-\]])")


def _numbered(test_id: str) -> tuple[str, str, int] | None:
    """(test, argument, position) when the id's first parameter part looks like pytest's own
    `argument<position>`."""
    test, bracket, _ = test_id.partition("[")
    match = AUTO_PARAM.search(test_id, len(test) + 1) if bracket else None
    return (test, match[1], int(match[2])) if match else None


def _auto_numbered(*runs: Counter[str]) -> set[tuple[str, str]]:
    """The (test, argument) pairs that pytest numbered itself in every run given: their
    numbers are exactly 0..n-1 over the test's n cases, once each (explicit ids such as
    `case1`, `case2`, or two stacked parametrizations, are not, and keep their exact ids)."""
    found: dict[tuple[str, str], list[Counter[int]]] = {}
    cases: list[Counter[str]] = []
    for run in runs:
        numbers: dict[tuple[str, str], Counter[int]] = {}
        per_test: Counter[str] = Counter()
        for test_id, times in run.items():
            per_test[test_id.partition("[")[0]] += times
            if (numbered := _numbered(test_id)) is not None:
                numbers.setdefault(numbered[:2], Counter())[numbered[2]] += times
        for key, counts in numbers.items():
            found.setdefault(key, []).append(counts)
        cases.append(per_test)
    return {
        key
        for key, per_run in found.items()
        if len(per_run) == len(runs)
        and all(
            counts == Counter(range(per_test[key[0]]))
            for counts, per_test in zip(per_run, cases, strict=True)
        )
    }


def _renumbering(base: Counter[str], change: Counter[str]) -> Callable[[str], str]:
    """The key a test is compared by: its id, with pytest's own position numbers left out
    where both runs numbered the test's cases themselves (`given#-starts_with(...)`), so
    cases renumbered by an insertion are the same cases, while a case deleted is missing by
    what the rest of its id says (its expression, its file)."""
    auto = _auto_numbered(base, change)
    if not auto:
        return lambda test_id: test_id

    def key(test_id: str) -> str:
        numbered = _numbered(test_id)
        if numbered is None or numbered[:2] not in auto:
            return test_id
        position = str(numbered[2])  # each argument pytest numbered has the case's position
        return AUTO_PARAM.sub(lambda m: f"{m[1]}#" if m[2] == position else m[0], test_id)

    return key


def _keyed(counts: Counter[str], key: Callable[[str], str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for test_id, times in counts.items():
        out[key(test_id)] += times
    return out


def compare(base: SuiteTests, change: SuiteTests) -> list[RemovedTest]:
    """The base run's tests the change's run lists fewer times (removed) or runs fewer times
    (skipped), subtests counted as their test, pytest's own position numbers not counted
    (`_renumbering`); empty when either run names no test."""
    if not (base.known and change.known):
        return []
    problems: list[RemovedTest] = []
    key = _renumbering(base.listed, change.listed)
    base_listed, base_ran = _keyed(_folded(base.listed), key), _keyed(_folded(base.ran), key)
    change_listed = _keyed(_folded(change.listed), key)
    change_ran = _keyed(_folded(change.ran), key)
    raw_base, raw_change = _folded(base.listed), _folded(change.listed)
    named: dict[str, list[str]] = {}  # each key's ids as the base run named them, in order
    for test_id in raw_base:
        named.setdefault(key(test_id), []).append(test_id)

    def as_named(test_key: str) -> Untrusted:
        """The base's id for a key: one the change's run does not list as such, if any."""
        ids = named[test_key]
        return Untrusted(next((i for i in ids if raw_change[i] < raw_base[i]), ids[0]))

    for test_key, times in base_listed.items():
        gone = times - change_listed[test_key]
        if gone > 0:
            problems.append(RemovedTest(id=as_named(test_key), how="removed", count=gone))
            continue
        skipped = base_ran[test_key] - change_ran[test_key]
        if skipped > 0:
            problems.append(RemovedTest(id=as_named(test_key), how="skipped", count=skipped))
    return problems


class BaseSuite(Protocol):
    """What answers "which of the base commit's tests does this run no longer run?"
    (gate/baseline.py); None when the base runs cannot tell. `listed`: the tests its runs
    listed so far, without running anything (None: none has listed them)."""

    def removed_tests(self, change: SuiteTests) -> list[RemovedTest] | None: ...

    def listed(self) -> Counter[str] | None: ...

    def known_removed_tests(self, change: SuiteTests) -> list[RemovedTest] | None:
        """The same, from what the base runs already answered, starting none; None when
        nothing answered yet."""


def check_kept(
    outcome: RoundOutcome, base: BaseSuite, validation: Validation, worktree: Worktree
) -> list[RemovedTest]:
    """For a round that would pass: the base commit's tests it removed or skipped (or, when
    every test is still there, test files left with fewer assertions). Under `keep` (or
    `true`) the round then fails with a `removed` failure per entry."""
    change = suite_tests(outcome.junit.cases, outcome.round.commands, [worktree.path])
    problems = (base.removed_tests(change) or []) if change.known else []
    if not problems:
        listed = base.listed()
        problems = weakened(worktree, change.listed if listed is None else listed)
    if problems and validation.keep_tests:
        refuse(outcome, problems)
    return problems


def noticed(
    outcome: RoundOutcome, base: BaseSuite, validation: Validation, worktree: Worktree
) -> list[RemovedTest]:
    """For a round that fails anyway: the base commit's tests it removed or skipped, as far as
    the base runs made so far tell (the module's docstring says when), else the test files it
    left with fewer assertions; for the model only, never the round's failures. Empty under
    `protect_tests: false`."""
    if not validation.keep_tests:
        return []
    problems: list[RemovedTest] = []
    if _ran_to_end(outcome) and any(map(_may_drop_tests, worktree.agent_changes())):
        change = suite_tests(outcome.junit.cases, outcome.round.commands, [worktree.path])
        found = (base.known_removed_tests(change) or []) if change.known else []
        units = [_unit(case) for case in outcome.junit.failing()]
        problems = [p for p in found if not any(_contains(u, p.key) for u in units)]
        if outcome.only is not None:  # it ran just these: the others tell nothing
            asked = {*outcome.only, *map(subtest_parent, outcome.only)}
            problems = [p for p in problems if p.key in asked]
    return problems or weakened(worktree, base.listed() or ())


def _ran_to_end(outcome: RoundOutcome) -> bool:
    """Every test command ran to its end: the whole suite, or (`outcome.only`) the previously
    failing tests it stopped after; none skipped or timed out, pytest past its collection, and
    each failure told by failing JUnit cases (not a crash that listed fewer tests)."""
    tests = [c for c in outcome.round.commands if c.kind == "test"]
    if not tests or (outcome.carried.cases and outcome.only is None):
        return False
    for c in tests:
        if c.skipped or c.collect_only or c.timed_out or (c.targeted and outcome.only is None):
            return False
        if pytest_commands.mentions_pytest(c.command) and c.exit_code not in (0, 1, 5):
            return False  # collection errors (2), interrupted, a usage error
    return all(f.explained for f in outcome.failed if f.kind == "test")


def _may_drop_tests(rel: str) -> bool:
    """A file whose edit can remove or skip a test: a test file, test configuration, a Rust
    file (inline tests), the manifests that configure runners."""
    return is_protected_test_path(rel) or rel.endswith(".rs") or rel in PROJECT_MANIFESTS


PROJECT_MANIFESTS = frozenset({"pyproject.toml", "package.json"})


def _unit(case: JUnitCase) -> str:
    """What a failing case stands for: a whole unit when its runner says so (a Go package
    that did not build), else its own id (a pytest module that did not import is
    `tests.test_x`)."""
    unit = runners.whole_unit(case.classname, case.name)
    return case.key if unit is None else unit


def _contains(unit: str, test_id: str) -> bool:
    """Is `unit` (a failed module, file or package) the container of `test_id`? (As
    gate/proof.py's, which cannot be imported from here.)"""
    if not unit or unit == test_id:
        return False
    return any(test_id.startswith(unit + sep) for sep in ("::", ".", "/", " "))


def refuse(outcome: RoundOutcome, problems: list[RemovedTest]) -> None:
    """Fail the round for `problems`, keeping what the baseline said of its other failures."""
    outcome.removed_tests = outcome.round.removed_tests = problems
    note = Untrusted(describe(problems))  # the tool's words, in the field of a command's output
    outcome.failed.append(FailedCommand(CHECK_NAME, "test", note, True))
    outcome.round.failures += [
        Failure(id=p.id, message=f"existing test {p.how} by the change", kind="removed")
        for p in problems
    ]
    outcome.round.passed = False


# An assertion, as the usual test styles write one: `assert x`, `self.assertEqual(`,
# `assert.equal(`, `assert_eq!(`, `expect(`, Go's `t.Errorf(`/`t.Fatal(`, `self.fail(`.
ASSERTION = re.compile(
    r"\bassert(?:\w*!?\s*\(|\s|\.)|\bexpect\s*\(|\bt\.(?:Errorf?|Fatalf?|Fail(?:Now)?)\s*\("
    r"|\bself\.fail\s*\("
)
RUST_TESTS = "#[cfg(test)]"  # where a Rust file's inline tests start
MAX_TEST_FILE_BYTES = 4_000_000


def weakened(worktree: Worktree, listed: Iterable[str] = ()) -> list[RemovedTest]:
    """Test files the change edited that hold fewer assertions than on the base commit (an
    assertion removed, so a test still runs and proves less): test paths, and Rust files with
    inline tests (counted from `#[cfg(test)]`); and the doctests among `listed` (the base
    commit's test ids) in files it edited that run fewer examples than on the base commit. A
    file the change deleted is the ids' to tell."""
    problems = []
    ids = list(dict.fromkeys(listed))
    for rel in worktree.agent_changes():
        before = worktree.base_text(rel)
        if before is None:
            continue
        tests_inline = is_test_file(rel) or (rel.endswith(".rs") and RUST_TESTS in before)
        doctests = [(i, n) for i in ids if (n := runners.doctest_examples(i, rel, before))]
        if not (tests_inline or doctests):
            continue
        try:
            after = guarded_read.read_text(worktree.path, rel, max_bytes=MAX_TEST_FILE_BYTES)
        except (guarded_read.Refused, OSError):
            continue  # deleted, or not a regular file
        lost = _assertions(before, rel) - _assertions(after, rel) if tests_inline else 0
        if lost > 0:
            problems.append(RemovedTest(id=Untrusted(rel), how="weakened", count=lost))
        problems += fewer_examples(doctests, rel, after)
    return problems


def fewer_examples(doctests: Sequence[tuple[str, int]], rel: str, text: str) -> list[RemovedTest]:
    """The doctests of `rel` (id, examples that ran on the base commit) that run fewer examples
    in its current `text` (one deleted or marked `+SKIP`); one its runner cannot count there
    (the module no longer parses: its run says so) is left to the ids."""
    problems = []
    for test_id, was in doctests:
        now = runners.doctest_examples(test_id, rel, text)
        if now is not None and now < was:
            problems.append(
                RemovedTest(id=Untrusted(test_id), how="weakened", count=was - now, doctest=True)
            )
    return problems


def _assertions(text: str, rel: str) -> int:
    if rel.endswith(".rs") and not is_test_file(rel):
        text = text[text.index(RUST_TESTS) :] if RUST_TESTS in text else ""
    return len(ASSERTION.findall(text))


def describe(problems: Sequence[RemovedTest]) -> str:
    """What the check found, counted, in the tool's words (the output of its failed "command"):
    the tests themselves travel as data, in `outcome.removed_tests` and the round's `removed`
    failures, and reach the model fenced (gate/reflection.py)."""
    counts = Counter(p.how for p in problems)
    found = ", ".join(f"{counts[h]} {h}" for h in ("removed", "skipped", "weakened") if counts[h])
    return f"existing tests {found} by the change"


def _from_output(command: str, text: str) -> Iterable[tuple[str, bool, int]]:
    """(id, skipped, times) for each test a runner's own output names; one unnamed group per
    command when it prints only totals."""
    named = runners.named_tests(text)
    for test_id, skipped in named:
        yield test_id, skipped, 1
    if named:
        return
    group = f"(the tests of `{command}`)"
    if (found := runners.totals(text)) is not None:
        skips = min(found.total, found.skipped)
        if found.total - skips:
            yield group, False, found.total - skips
        if skips:
            yield group, True, skips


def _log(path: str) -> str:
    try:
        with open(path, "rb") as f:  # the tool's own log of the command's output
            return strip_ansi(f.read(MAX_LOG_BYTES).decode("utf-8", errors="replace"))
    except OSError:
        return ""


def _root_prefixes(roots: Sequence[Path]) -> list[str]:
    """Each root as given and as resolved (the longer first), as a `dir/` prefix."""
    return [
        variant.rstrip("/") + "/"
        for root in roots
        for variant in sorted({str(root), os.path.realpath(root)}, key=len, reverse=True)
    ]


def _without_roots(test_id: str, prefixes: Sequence[str]) -> str:
    for prefix in prefixes:
        test_id = test_id.replace(prefix, "")
    return test_id
