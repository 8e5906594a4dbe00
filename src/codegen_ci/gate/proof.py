"""Proof: the tests that fail on the base commit and pass with the change ("fail to pass").

A passing suite shows the change broke nothing the suite checks; it does not show the change
does what the task asked. After a passing final round, the test commands run once more, as
they are, on the base commit's code with the change's test files applied and its other files
left out (a detached worktree of its own, confined like every command). A test that passes
with the change and fails there is proof; so is one the base run could not even run because
its file, module or package failed as a whole (a test of a function the change adds). Tests
the base run already saw failing (the repository's own test of a bug) count the same way:
their files are the base's own. `pass_to_pass` counts the tests that pass in both runs.

What is a test file is `is_test_file` (workspace/file_kinds.py), the definition `protect_tests`
uses. A pytest command runs there with `--continue-on-collection-errors`, so one new test file
that cannot import on the base does not stop the rest of the suite from answering.

When the change applies no test file, that tree is the base commit as it is, and a test
command that is no pytest ran there in full already: the pre-flight's run of the same commands
on the same untouched code (gate/preflight.py), in the same environment and sandbox. Its JUnit
is the base run's answer (`seed`), and the suite is not run again; the base tree is made only
when a test passes now and failed there (to say where it is defined). When such a test is to
be re-run there (`reruns`, below), the suite runs there first as above: a re-run follows a
run in the same tree, so a test that fails only in a fresh tree (a cold cache, a first-run
timeout) is seen flaky, as before. A pytest command only collected in the pre-flight, and a
run resumed without a pre-flight has none: those run on the base as above.

A test that fails on the base only by chance is no proof: each candidate is re-run there
(gate/flaky.py) and one that passes is `flaky`, as are the tests flaky with the change.
Then the changed lines the tests run are measured in the run's worktree (gate/coverage.py),
unless `required` refuses the pass (below): that change is still to change, and its coverage
run (the whole suite once more) would measure nothing the next round keeps.

The policy (`validation.proof.tests`): `preferred` reports `unproven` and lets the run
succeed; `required` turns an unproven pass into a reflection (`missing`) and, in the last
round, a failure of its own (reason `unproven`); `off` runs nothing here. A share of changed
lines run below `validation.proof.coverage` is a reflection the same way.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen_ci import runners
from codegen_ci.gate import pytest_commands
from codegen_ci.gate.baseline import base_env, base_record, base_run_problem
from codegen_ci.gate.changed_tests import ChangedTests, changed_tests
from codegen_ci.gate.coverage import CoverageRun, below, uncovered_message
from codegen_ci.gate.file_selection import narrowed
from codegen_ci.gate.flaky import Rerunner, merge_flaky
from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.gate.junit.refine import guarded_tree
from codegen_ci.gate.kept_tests import subtest_parent
from codegen_ci.gate.original_tests import (
    edited_existing,
    judge_originals,
    renamed_existing,
    weakened_message,
    weakened_reason,
)
from codegen_ci.gate.project_source import ImportCheck
from codegen_ci.gate.test_runs import Runner
from codegen_ci.gate.validation import RoundOutcome
from codegen_ci.report import (
    ChangedLines,
    CommandResult,
    FlakyTest,
    Proof,
    ProofStatus,
    ProvingTest,
    WeakenedTest,
)
from codegen_ci.security import guarded_read
from codegen_ci.security.guarded_read import Refused
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible
from codegen_ci.spec.model import Validation
from codegen_ci.workspace.dependency_links import give_back, unlink_dependencies
from codegen_ci.workspace.file_kinds import is_test_file
from codegen_ci.workspace.worktree import Worktree, attach_worktree, worktree_git

MAX_TEST_FILE_BYTES = 5_000_000
FAILING = ("failure", "error")
SHOWN = 5  # tests named in a reflection, uncovered lines in a reason
MAX_ID_CHARS = 300
# a pass `required` refuses: its changed lines are measured when a round is proven
NOT_YET_MEASURED = "the change is not proven yet (`validation.proof.tests: required`)"
GO_TEST_FUNC = re.compile(r"^func (Test\w*)\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)


@dataclass(kw_only=True)
class Prover:
    """Runs the fail-to-pass check for one run; each `prove` makes and removes its tree."""

    repo: Path
    base_commit: str
    validation: Validation
    worktree: Worktree
    work_dir: Path  # logs and reports of the proof runs (`<output>/proof`)
    env: Mapping[str, str]
    tree_path: Path  # outside any `.git`, beside the run's worktree
    sandbox: Sandbox | None = None
    # where the commands import the project's own code from (gate/project_source.py): the
    # proof tree's code goes first, as the worktree's does for the rounds
    sources: Callable[[], ImportCheck | None] = lambda: None
    # a progress line for each phase (the proof's base run, re-runs, coverage, cleanup)
    note: Callable[[str], None] = lambda _: None
    runs: int = 0
    # test commands that wrote no JUnit in the passing round (a typecheck beside the runner,
    # `npm test`'s `&& npm run check:type:ts`): their base runs name no test either, and that
    # is no reason the proof cannot tell
    without_junit: frozenset[str] = frozenset()
    # the pre-flight's full runs of every test command on the untouched base commit (`seed`)
    preflight: tuple[list[CommandResult], JUnitResult] | None = None

    def seed(self, preflight: RoundOutcome, tree: Path) -> None:
        """Keep the pre-flight's test runs (on the untouched code in `tree`, the base commit)
        when they ran every test command in full, in order: no pytest command (it only
        collected there), none skipped or stopped."""
        tests = [c for c in preflight.round.commands if c.kind == "test"]
        full = [c for c in tests if not (c.skipped or c.collect_only or c.targeted)]
        same = [c.command for c in full] == list(self.validation.test)
        if same and full and not any(pytest_commands.mentions_pytest(c.command) for c in full):
            self.preflight = (full, preflight.junit)

    def prove(self, outcome: RoundOutcome, flaky: Sequence[FlakyTest] = ()) -> Proof:
        """The proof behind a passing round `outcome` (its JUnit holds the whole suite);
        `flaky`: tests seen flaky with the change so far, never proof."""
        if self.validation.proof.tests == "off":
            return Proof(reason="validation.proof.tests is off", flaky=list(flaky))
        if not outcome.junit.cases:
            return Proof(reason="no JUnit report: which tests ran is unknown", flaky=list(flaky))
        test_files = [p for p in self.worktree.agent_changes() if is_test_file(p)]
        go_tests = self._go_tests(test_files)
        self.without_junit = frozenset(
            c.command for c in outcome.round.commands if c.kind == "test" and c.junit_tests is None
        )
        self.work_dir.mkdir(parents=True, exist_ok=True)
        tree: Path | None = None
        links: tuple[str, ...] = ()
        try:
            exclude = frozenset(f.key for f in flaky)
            theirs = changed_tests(self.worktree, test_files)
            base = None if test_files else self._preflights_answer()
            if base is not None:
                proof = judge(outcome.junit, base, test_files, go_tests, exclude, None, theirs)
                if self._suspects(proof, flaky, base) and self.validation.proof.reruns:
                    base = None  # a re-run there follows a run there, as a round's does
            if base is None:
                tree, links = self._attach(test_files)
                changed = len(test_files)
                self.note(f"proving: the tests on the base commit, {changed} test file(s) changed")
                base, problem = self._run_on_base(tree)
                if problem:
                    reason = f"the run on the base commit cannot tell: {problem}"
                    cannot_tell = Proof(reason=reason, flaky=list(flaky))
                    self._weaken(cannot_tell, outcome, test_files)  # edited tests still checked
                    return cannot_tell
            else:
                self.note(
                    "proving: the pre-flight's run on the base commit answers (no test changed)"
                )
            proof = judge(outcome.junit, base, test_files, go_tests, exclude, tree, theirs)
            # A test that fails on the base only by chance is no proof: re-run them there,
            # with the tests flaky with the change that failed there too (the repository's?).
            suspects = self._suspects(proof, flaky, base)
            if suspects and tree is None:  # where a proving test is defined: the base tree's
                tree, links = self._attach(test_files)
                proof = judge(outcome.junit, base, test_files, go_tests, exclude, tree, theirs)
            if suspects:
                self.note(f"proving: re-running {len(suspects)} test(s) on the base (flaky?)")
            again = self._rerunner(tree).passing(suspects) if tree else {}
            on_base = [FlakyTest(id=Untrusted(i), runs=n, where="base") for i, n in again.items()]
            flaky = merge_flaky(list(flaky), on_base)
            if again:
                exclude |= frozenset(again)
                proof = judge(outcome.junit, base, test_files, go_tests, exclude, tree, theirs)
            proof.flaky = list(flaky)
        finally:
            if tree is not None:
                self.note("proving: removing the base commit's worktree")
                give_back(tree, self.worktree.path, links, self.repo)
                self._remove(tree, links)
        self._weaken(proof, outcome, test_files)
        if refused(self.validation, proof):
            # the round is not done (a reflection asks for proof, or the last round fails): a
            # coverage run, the whole suite once more, would measure a change still to change
            proof.changed_lines = ChangedLines(reason=NOT_YET_MEASURED)
            return proof
        self.note("proving: measuring which changed lines the tests run (coverage)")
        proof.changed_lines = self._changed_lines()
        return proof

    @staticmethod
    def _suspects(proof: Proof, flaky: Sequence[FlakyTest], base: JUnitResult) -> list[str]:
        """The tests to re-run on the base: the proof's, and those flaky with the change that
        failed there too (the repository's?)."""
        failing_there = {c.key for c in base.failing()}
        return [t.key for t in proof.fail_to_pass] + [
            f.key for f in flaky if f.key in failing_there
        ]

    def _attach(self, test_files: list[str]) -> tuple[Path, tuple[str, ...]]:
        """The base commit's tree with the change's `test_files` applied."""
        self.note("proving: preparing a worktree on the base commit with the change's tests")
        tree, links = attach_worktree(
            self.repo, self.tree_path, commit=self.base_commit, lender=self.worktree.path
        )
        try:
            for rel in test_files:
                self._apply(tree, rel)
        except BaseException:
            self._remove(tree, links)
            raise
        return tree, links

    def _preflights_answer(self) -> JUnitResult | None:
        """The pre-flight's JUnit as the base run's, when its runs (`seed`) can tell as a
        base run would (`base_run_problem`); None: run the commands on the base."""
        if self.preflight is None:
            return None
        records, junit = self.preflight
        for record in records:
            expects_junit = record.command not in self.without_junit
            if base_run_problem(record, expects_junit, whole_suite=True):
                return None
        return junit

    def _weaken(self, proof: Proof, outcome: RoundOutcome, test_files: list[str]) -> None:
        """The mirror image: the edited tests as they were, on the change's code
        (gate/original_tests.py); `proof` is never proven when one of them fails there."""
        exclude = frozenset(f.key for f in proof.flaky)
        weakened, problem = self._originals(outcome, test_files, exclude)
        if weakened:
            proof.weakened = weakened
            proof.status = ProofStatus.UNPROVEN
            proof.reason = weakened_reason(len(weakened))
        elif problem:
            proof.reason += f"; the edited tests' base versions could not be checked: {problem}"

    def _remove(self, tree: Path, links: tuple[str, ...]) -> None:
        unlink_dependencies(tree, links)
        worktree_git(self.repo, ["remove", "--force", str(tree)], check=False)
        shutil.rmtree(tree, ignore_errors=True)

    def _originals(
        self, outcome: RoundOutcome, test_files: list[str], exclude: frozenset[str]
    ) -> tuple[list[WeakenedTest], str | None]:
        """The base versions of the existing test files the change edited, run (narrowed to
        them) in a base tree with every other file of the change applied."""
        renamed = renamed_existing(self.worktree, test_files)  # each at its new path
        edited = [*edited_existing(self.worktree, test_files), *renamed]
        if not edited:
            return [], None
        self.note(f"proving: {len(edited)} edited test file(s) as they were on the base commit")
        # a path of its own: the proof's tree may still be there (its run could not tell)
        where = self.tree_path.with_name(self.tree_path.name + "-orig")
        tree, links = attach_worktree(self.repo, where, commit=self.base_commit)
        try:
            for new, old in renamed.items():
                self._apply(tree, new, source=(tree, old))
            for rel in self.worktree.agent_changes():
                if rel not in edited:
                    self._apply(tree, rel)
            go_tests = _declared_go_tests(tree, edited)

            def select(command: str) -> str:
                return narrowed(command, edited, sorted(go_tests), tree) or command

            junit, problem = self._run_on_base(tree, select, "original")
            if problem and any(select(c) != c for c in self.validation.test):
                # narrowing misread the command: the commands as they are, once
                junit, problem = self._run_on_base(tree, name="original")
            if problem:
                return [], problem
            modules = _modules(edited)
            belongs = [c for c in junit.cases if _belongs(c, edited, modules, go_tests)]
            weakened = judge_originals(belongs, outcome.junit, exclude)
            # one that fails there only by chance is no weakening: re-run them (gate/flaky.py)
            if again := self._rerunner(tree).passing([t.key for t in weakened]):
                weakened = [t for t in weakened if t.key not in again]
        finally:
            self._remove(tree, links)
        return weakened, None

    def _changed_lines(self) -> ChangedLines:
        """In the run's worktree, after the base tree is gone (gate/coverage.py)."""
        run = CoverageRun(
            worktree=self.worktree,
            validation=self.validation,
            work_dir=self.work_dir.with_name("coverage"),
            env=self._env(self.worktree.path),
            sandbox=self.sandbox,
        )
        if self.sandbox is not None:
            self.sandbox.new_phase()
        self.worktree.before_command()  # refs the tests move are put back, as in a round
        return run.measure()

    def _env(self, tree: Path) -> dict[str, str]:
        found = self.sources()
        return dict(found.apply(self.env, tree) if found else self.env)

    def _go_tests(self, test_files: list[str]) -> frozenset[str]:
        """Top-level Go tests the change's `_test.go` files declare: gotestsum names a case by
        its package, not its file."""
        return _declared_go_tests(self.worktree.path, test_files)

    def _wrap(self, tree: Path) -> list[str]:
        if self.sandbox is None:
            return []
        return self.sandbox.prefix(tree, network="test" in self.validation.network)

    def _run_on_base(
        self, tree: Path, select: Callable[[str], str] = lambda c: c, name: str = "proof"
    ) -> tuple[JUnitResult, str | None]:
        """The test commands in `tree` (each as `select` makes it), in a phase of their own;
        a problem that makes the run unable to tell (gate/baseline.py's `base_run_problem`),
        or None."""
        if self.sandbox is not None:
            self.sandbox.new_phase()  # nothing the model's commands left in HOME runs here
        runner = Runner(tree, self.validation, self.work_dir, self.sandbox, self._wrap(tree))
        junit = JUnitResult()
        for written in self.validation.test:
            command = select(written)
            self.runs += 1
            tag = f"{name}-{self.runs:02d}"
            env = base_env(self._env(tree), tree)
            if pytest_commands.mentions_pytest(command):
                addopts = f"{env.get('PYTEST_ADDOPTS', '')} --continue-on-collection-errors"
                env["PYTEST_ADDOPTS"] = addopts.strip()
            log = self.work_dir / "logs" / f"{tag}.log"
            # the test (the model's) may run git: the refs it moves are put back, as in a round
            self.worktree.before_command()
            run = runner.run(command, env, tag, log)
            record = base_record(command, run.result, run.junit)
            whole = name == "proof"  # the originals' run is narrowed to some files
            expects_junit = written not in self.without_junit
            if problem := base_run_problem(record, expects_junit, whole_suite=whole):
                return junit, f"`{command}`: {problem} (see proof/logs)"
            junit = junit.merge(run.junit)
        return junit, None

    def _rerunner(self, tree: Path) -> Rerunner:
        env = base_env(self._env(tree), tree)
        return Rerunner(
            tree, self.validation, self.work_dir, env, self.sandbox, "proof", self._wrap(tree)
        )

    def _apply(self, tree: Path, rel: str, source: tuple[Path, str] | None = None) -> None:
        """The change's version of test file `rel` in `tree` (deleted when the change deleted
        it); `source`: another file's instead (a moved test's base version, from `tree`).
        Read through the guarded reader (the model's worktree); written only below real
        directories of the fresh base tree, never through a link."""
        dest = tree / rel
        parent = tree
        for part in PurePosixPath(rel).parent.parts:
            parent = parent / part
            if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
                return  # the base has a link or a file there: leave the base's as it is
            parent.mkdir(exist_ok=True)
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        # Deleted by the change, or not a regular file: absent on the base too.
        with contextlib.suppress(Refused, OSError):
            root, name = source or (self.worktree.path, rel)
            guarded_read.copy_file(root, name, dest, max_bytes=MAX_TEST_FILE_BYTES)


def judge(
    after: JUnitResult,
    base: JUnitResult,
    test_files: list[str],
    go_tests: frozenset[str] = frozenset(),
    exclude: frozenset[str] = frozenset(),
    root: Path | None = None,
    changed: ChangedTests | None = None,
) -> Proof:
    """Compare the passing round's cases (`after`) with the base run's (`base`, the change's
    test files applied). A test the base run did not report counts only when it is one of
    the change's (`test_files`; `go_tests` by name) and its container failed as a whole.
    `not_proof`: the tests the change added or edited (`changed`; None: every test of its
    test files) that pass on the base too."""
    on_base = _worst(base.cases)
    for key, failed in list(on_base.items()):  # a failed subtest is its test's failure there
        parent = subtest_parent(key)
        if parent != key and failed.outcome in FAILING and parent not in on_base:
            on_base[parent] = failed
    containers = [_container(c) for c in on_base.values() if c.outcome in FAILING]
    passed_after = {c.key: c for c in after.cases if c.outcome == "passed"}
    proving: list[ProvingTest] = []
    pass_to_pass = 0
    not_proof: list[Untrusted] = []
    modules = _modules(test_files)
    new_modules = _modules(sorted(changed.new_files)) if changed else []
    for test_id, case in passed_after.items():
        if test_id in exclude:  # flaky: neither proof nor a test that passes in both runs
            continue
        base_case = on_base.get(test_id)
        ours = _belongs(case, test_files, modules, go_tests)
        if base_case is not None and base_case.outcome in FAILING:
            proving.append(_proving(case, base_case, base_case.outcome, root))
        elif base_case is None and ours and any(_contains(c, test_id) for c in containers):
            proving.append(_proving(case, None, "not run", root))  # its file could not load
        elif base_case is not None and base_case.outcome == "passed":
            pass_to_pass += 1
            if ours and (changed is None or _changed(case, changed, new_modules)):
                not_proof.append(Untrusted(test_id))
    # The reason is the tool's words: the ids are the repository's and stay in the typed
    # fields (`fail_to_pass`, `not_proof`), where a reader shows them (publish/proof_text.py).
    if proving:
        return Proof(
            status=ProofStatus.PROVEN,
            reason=f"{len(proving)} test(s) fail on the base commit and pass with the change",
            fail_to_pass=proving,
            pass_to_pass=pass_to_pass,
            not_proof=not_proof,
        )
    if not test_files:
        reason = "no test fails on the base commit and passes with the change; the change adds "
        reason += "or edits no test"
    elif not_proof:
        reason = "none of the tests the change adds or edits fails on the base commit: "
        reason += f"{len(not_proof)} of them pass there"
    else:
        reason = "none of the tests the change adds or edits fails on the base commit"
    return Proof(
        status=ProofStatus.UNPROVEN, reason=reason, pass_to_pass=pass_to_pass, not_proof=not_proof
    )


def refused(validation: Validation, proof: Proof) -> bool:
    """`validation.proof.tests: required` and no proof: a weakened test, or an unproven pass."""
    required = validation.proof.tests == "required"
    return required and (bool(proof.weakened) or proof.status == ProofStatus.UNPROVEN)


def missing(validation: Validation, proof: Proof, *, iteration: int, last: int) -> str | None:
    """What a passing round still lacks, as the model's next message; None: it is a
    success. `required` and a pass the base commit would give too (the proof's reason), or
    fewer changed lines run than `validation.proof.coverage` asks (the uncovered lines)."""
    if refused(validation, proof) and proof.weakened:
        return weakened_message(proof.weakened, iteration=iteration, last=last)
    if refused(validation, proof):
        return missing_proof_message(proof, iteration=iteration, max_iterations=last)
    lines, wanted = proof.changed_lines, validation.proof.coverage
    if lines is not None and wanted is not None and below(validation, lines):
        # the tool's words: the lines are the change's file names, shown from `changed_lines`
        proof.reason = (
            f"the tests run {lines.covered} of {lines.total} changed lines, below "
            f"validation.proof.coverage {wanted:.0%}"
        )
        return uncovered_message(lines, wanted, iteration=iteration, last=last)
    return None


def missing_proof_message(proof: Proof, *, iteration: int, max_iterations: int) -> str:
    """The model's next message when `validation.proof.tests: required` found no proof."""
    detail = ""
    if proof.not_proof:
        names = Untrusted.join("\n", (i.map(_shown_id) for i in proof.not_proof[:SHOWN]))
        detail = "\n\n" + fence("tests that pass on the base commit too", names)
    return (
        f"Validation round {iteration} of {max_iterations} passed, but nothing proves the "
        "change yet: this repository requires a test that fails without the change "
        "(validation.proof.tests: required). The harness ran the tests on the base commit's "
        "code with your test files applied and your other files left out, and "
        + _what_is_missing(proof)
        + ". Add or change a test that exercises what the task asks for, so that it fails on "
        "the base commit and passes with your change; keep the fix and the existing tests." + detail
    )


def _declared_go_tests(tree: Path, files: list[str]) -> frozenset[str]:
    """Top-level Go tests the `_test.go` files among `files` declare in `tree`."""
    names: set[str] = set()
    for rel in files:
        if rel.endswith("_test.go"):
            with contextlib.suppress(Refused, OSError):
                text = guarded_read.read_text(tree, rel, max_bytes=MAX_TEST_FILE_BYTES)
                names.update(GO_TEST_FUNC.findall(text))
    return frozenset(names)


def _shown_id(test_id: str) -> str:
    """A test's id as a line of a note to the model: invisible characters gone, one line."""
    return " ".join(strip_invisible(test_id).split())[:MAX_ID_CHARS]


def _what_is_missing(proof: Proof) -> str:
    if proof.not_proof:
        return (
            f"none of the tests you added or changed fails there: {len(proof.not_proof)} of "
            "them pass on the base commit too (listed below)"
        )
    return "no test failed there: you added or changed no test that shows the change"


# Matching test ids to files and containers.


def _worst(cases: list[JUnitCase]) -> dict[str, JUnitCase]:
    """One case per id: a test reported twice counts as its worse outcome."""
    rank = {"passed": 0, "skipped": 1, "failure": 2, "error": 3}
    out: dict[str, JUnitCase] = {}
    for case in cases:
        known = out.get(case.key)
        if known is None or rank[case.outcome] > rank[known.outcome]:
            out[case.key] = case
    return out


def _container(case: JUnitCase) -> str:
    """What a failing case stands for when it is a whole file, module or package: what its
    runner says (`runners.whole_unit`: a Go package that did not build is its package), else
    its own id."""
    unit = runners.whole_unit(case.classname, case.name)
    return case.key if unit is None else unit


def _contains(container: str, test_id: str) -> bool:
    """Is `container` (a failed module, file or package, as the base run reported it as a
    whole: pytest's `tests.test_x` collection error, a Go package that did not build) the
    container of `test_id`?"""
    if not container or container == test_id:
        return False
    return any(test_id.startswith(container + sep) for sep in ("::", ".", "/", " "))


def _modules(test_files: list[str]) -> list[str]:
    return [p[: -len(".py")].replace("/", ".") for p in test_files if p.endswith(".py")]


def _belongs(
    case: JUnitCase, test_files: list[str], modules: list[str], go_tests: frozenset[str]
) -> bool:
    """Is `case` one of `test_files`'? By the file its report names (vitest's classname is
    its file), else by pytest's dotted module (`tests.test_x::test_y`,
    `tests.test_x.TestK::test_y`), else by a Go test's name."""
    for where in (case.file, case.classname):
        if where and any(where == f or where.endswith("/" + f) for f in test_files):
            return True
    name = case.classname or case.key
    if any(name == m or name.startswith(m + ".") or case.key.startswith(m + "::") for m in modules):
        return True
    return case.name.split("/")[0] in go_tests


def _changed(case: JUnitCase, changed: ChangedTests, new_modules: list[str]) -> bool:
    """Is `case` a test the change added or edited: in a new test file, or by its name."""
    new_file = _belongs(case, sorted(changed.new_files), new_modules, frozenset())
    return changed.holds(case, new_file)


def _proving(
    after: JUnitCase, base: JUnitCase | None, how: str, root: Path | None = None
) -> ProvingTest:
    """Where the test is: the base run's failure located it (its traceback), else the
    passing report's own file and line. A Go test (its package in `root`, the change's tree)
    is where its function is defined, or the failure's line when that lies inside it: a
    helper's `t.Errorf` in another file is no test's place."""
    file = (base.file if base else None) or after.file
    line = (base.line if base and base.file else None) or after.line
    if root is not None and (
        defined := runners.defined_at(after.classname, after.name, guarded_tree(root))
    ):
        rel, first, last = defined
        if not (file == rel and line is not None and first <= line <= last):
            file, line = rel, first
    return ProvingTest(id=after.id, file=file, line=line, on_base=how)
