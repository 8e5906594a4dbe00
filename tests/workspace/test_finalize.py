"""`finalize` returns the commit it made (a `Committed` value) and leaves the report to the
pipeline: on a real git repository, with a real worktree."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_repo import SampleRepo

from codegen_ci.report import Reason, Report, Status
from codegen_ci.spec.model import Spec
from codegen_ci.workspace.finalize import finalize
from codegen_ci.workspace.worktree import Worktree, create_worktree

SPEC = Spec(task="Add a greeting file.", title="Add a greeting")


@pytest.fixture
def worktree(sample_repo: SampleRepo, tmp_path: Path) -> Worktree:
    parent = tmp_path / "worktrees"
    parent.mkdir(mode=0o700)
    return create_worktree(
        sample_repo.path, parent / "wt", branch="codegen/greeting", base="HEAD", protected=()
    )


def test_the_commit_is_returned_and_the_report_is_not_written(
    sample_repo: SampleRepo, worktree: Worktree, tmp_path: Path
) -> None:
    (worktree.path / "hello.txt").write_text("hello\n")
    report = Report()
    report.finish(Status.SUCCESS)

    committed = finalize(SPEC, worktree, tmp_path, report)

    assert committed is not None and committed.commit
    assert committed.files == ["hello.txt"]
    assert sample_repo.git("rev-parse", "codegen/greeting").strip() == committed.commit
    assert (report.commit, report.files_changed, report.refusals) == (None, [], [])
    assert not worktree.path.exists()
    assert "hello.txt" in (tmp_path / "diff.patch").read_text()


def test_nothing_changed_gives_no_commit_and_no_branch(
    sample_repo: SampleRepo, worktree: Worktree, tmp_path: Path
) -> None:
    report = Report()
    report.finish(Status.FAILED, Reason.MAX_ITERATIONS)

    committed = finalize(SPEC, worktree, tmp_path, report)

    assert committed is not None and committed.commit is None and committed.files == []
    assert "codegen/greeting" not in sample_repo.git("branch", "--list")


def test_an_interrupted_run_keeps_its_worktree_and_commits_nothing(
    worktree: Worktree, tmp_path: Path
) -> None:
    (worktree.path / "hello.txt").write_text("hello\n")
    report = Report()
    report.finish(Status.ERROR, Reason.INTERRUPTED, "interrupted")

    assert finalize(SPEC, worktree, tmp_path, report) is None
    assert (worktree.path / "hello.txt").is_file()
