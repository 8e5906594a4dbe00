"""Edited tests, checked as they were: the base commit's version of each existing test file the
change edited, run against the change's code.

The proof (gate/proof.py) runs the change's tests on the base commit's code; this is its
mirror image. A change can break what an existing test checks and edit that test so it still
passes (`assert parse(x) == expected or True`, a looser tolerance, an expected value changed):
the suite passes, a new test may even prove something, and counting assertions sees nothing.
So after a passing final round, when the change edited test files that exist on the base
commit (deleting one is gate/kept_tests.py's), a tree of the base commit with every other
file of the change applied runs the test commands, narrowed to those files
(gate/file_selection.py). A test of those files that fails there, and did not fail in the
passing round (a failure the base already had and the rules allow is not the change's),
is `proof.weakened`: the change altered behaviour that test checked and altered the test.

Such a run is never `proven`. Under `validation.proof.tests: preferred` it succeeds as
`unproven`, and the PR body, status comment and terminal name each test ("... as it was on
the base commit fails with this change; the change edited it"): a task that changes
behaviour on purpose shows here too, for a reviewer to judge. Under `required` it is not
success: the model is told which original test fails with its code (fenced) and asked to
keep the original expectations; in the last round the run fails (reason `unproven`). A
repository whose tasks change tested behaviour on purpose uses `preferred`.
"""

from __future__ import annotations

from collections.abc import Sequence

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.report import WeakenedTest
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible
from codegen_ci.workspace.worktree import Worktree

FAILING = ("failure", "error")
SHOWN = 5
MAX_ID_CHARS = 300


def edited_existing(worktree: Worktree, test_files: Sequence[str]) -> list[str]:
    """Of the change's test files, those the base commit has and the change keeps: edited."""
    return [
        p
        for p in test_files
        if (worktree.path / p).is_file() and not (worktree.path / p).is_symlink()
        if worktree.in_base(p)
    ]


def judge_originals(
    belongs: Sequence[JUnitCase], after: JUnitResult, exclude: frozenset[str] = frozenset()
) -> list[WeakenedTest]:
    """The failing cases of the originals' run that are the edited files' (`belongs`) and
    did not fail in the passing round `after`; `exclude`: flaky tests."""
    failing_after = {c.key for c in after.cases if c.outcome in FAILING}
    seen: dict[str, WeakenedTest] = {}
    for case in belongs:
        if case.outcome not in FAILING or case.key in exclude or case.key in failing_after:
            continue
        seen.setdefault(
            case.key, WeakenedTest(id=case.id, file=case.file, line=case.line, outcome=case.outcome)
        )
    return list(seen.values())


def weakened_reason(count: int) -> str:
    """The proof's reason (the tool's words: the ids are `proof.weakened`'s)."""
    return (
        f"{count} existing test(s) as they were on the base commit fail with this change; "
        "the change edited them"
    )


def weakened_message(weakened: Sequence[WeakenedTest], *, iteration: int, last: int) -> str:
    """The model's next message under `validation.proof.tests: required`."""
    names = Untrusted.join(
        "\n",
        (
            t.id.map(_shown) + Untrusted(f" ({t.where})" if t.where else "")
            for t in weakened[:SHOWN]
        ),
    )
    return (
        f"Validation round {iteration} of {last} passed, but you edited existing tests and "
        "their original versions fail with your change: the harness ran the test files as "
        "they are on the base commit against your code, and the tests listed below fail "
        "there. The change altered behaviour those tests check. Keep what the existing tests "
        "expect: restore their original assertions and make the code pass them; add new "
        "tests for new behaviour instead of loosening old ones (validation.proof.tests: "
        "required).\n\n" + fence("original tests that fail with your change", names)
    )


def _shown(test_id: str) -> str:
    return " ".join(strip_invisible(test_id).split())[:MAX_ID_CHARS]
