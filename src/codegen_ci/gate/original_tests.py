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
A test file the change moved and edited counts as edited (`renamed_existing`: git's rename
rule, a file it deletes and one it adds at least half alike): its base version runs at the
new path, where the passing round ran it, so its ids, its runner's config (jest's
`testMatch`, a cargo `tests/` binary's name) and the narrowing are the new file's.

Such a run is never `proven`. Under `validation.proof.tests: preferred` it succeeds as
`unproven`, and the PR body, status comment and terminal name each test ("... as it was on
the base commit fails with this change; the change edited it"): a task that changes
behaviour on purpose shows here too, for a reviewer to judge. Under `required` it is not
success: the model is told which original test fails with its code (fenced) and asked to
keep the original expectations; in the last round the run fails (reason `unproven`). A
repository whose tasks change tested behaviour on purpose uses `preferred`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import PurePosixPath

from codegen_ci.gate.junit.cases import JUnitCase
from codegen_ci.gate.junit.parse import JUnitResult
from codegen_ci.report import WeakenedTest
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import Untrusted, fence, strip_invisible
from codegen_ci.workspace.worktree import Worktree

FAILING = ("failure", "error")
SHOWN = 5
MAX_ID_CHARS = 300
RENAME_SIMILARITY = 0.5  # git's default for `git diff -M`
MAX_COMPARED_BYTES = 1_000_000  # a larger test file is not looked for among the moved ones


def edited_existing(worktree: Worktree, test_files: Sequence[str]) -> list[str]:
    """Of the change's test files, those the base commit has and the change keeps: edited."""
    return [
        p
        for p in test_files
        if (worktree.path / p).is_file() and not (worktree.path / p).is_symlink()
        if worktree.in_base(p)
    ]


def renamed_existing(worktree: Worktree, test_files: Sequence[str]) -> dict[str, str]:
    """Of the change's test files, those that are a base-commit test file moved and edited:
    {new path: the base path}. The worktree's files are not staged, so git has no rename to
    tell: a test file the change deletes and one it adds (the same suffix) whose lines are at
    least `RENAME_SIMILARITY` alike, as `git diff -M` pairs them, each deleted file once, the
    most alike first. A file moved unchanged is left out: its base version is the file."""
    gone = {
        p: text
        for p in test_files
        if not (worktree.path / p).exists() and not (worktree.path / p).is_symlink()
        if (text := worktree.base_text(p)) is not None and len(text) <= MAX_COMPARED_BYTES
    }
    pairs: list[tuple[float, str, str]] = []
    for new in test_files:
        if not gone or worktree.in_base(new) or (text := _read(worktree, new)) is None:
            continue
        lines = text.splitlines()
        for old, before in gone.items():
            if PurePosixPath(old).suffix != PurePosixPath(new).suffix or before == text:
                continue
            alike = difflib.SequenceMatcher(None, before.splitlines(), lines, autojunk=False)
            # the cheap upper bounds first: the full ratio is quadratic at worst
            if (
                alike.real_quick_ratio() >= RENAME_SIMILARITY
                and alike.quick_ratio() >= RENAME_SIMILARITY
                and (ratio := alike.ratio()) >= RENAME_SIMILARITY
            ):
                pairs.append((ratio, new, old))
    renamed: dict[str, str] = {}
    for _, new, old in sorted(pairs, reverse=True):
        if new not in renamed and old not in renamed.values():
            renamed[new] = old
    return renamed


def _read(worktree: Worktree, rel: str) -> str | None:
    """A test file of the change (the model's worktree: through the guarded reader)."""
    try:
        return guarded_read.read_text(worktree.path, rel, max_bytes=MAX_COMPARED_BYTES)
    except (guarded_read.Refused, OSError, UnicodeDecodeError):
        return None


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
