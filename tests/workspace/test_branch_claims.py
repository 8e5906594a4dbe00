"""Branches other codegen-ci processes work on (workspace/branch_claims.py): a claim whose
holder lives is honoured, by the ref guard too; a claim whose holder died is stale and
ignored."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sample_repo import SampleRepo

from codegen_ci.workspace import branch_claims
from codegen_ci.workspace.git_guard import RefGuard
from codegen_ci.workspace.worktree import create_worktree


@contextmanager
def held_elsewhere(common: Path, branch: str) -> Iterator[None]:
    """`branch` claimed as another process does: its own lock on the claim file (a descriptor
    of its own), dropped when it ends."""
    place = branch_claims.folder(common)
    place.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = place / branch_claims._file_name(branch)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, branch.encode(), 0)
        yield
    finally:
        os.close(fd)


def test_a_live_claim_is_honoured_and_a_dead_ones_is_ignored(sample_repo: SampleRepo) -> None:
    common = sample_repo.path / ".git"
    with held_elsewhere(common, "codegen/theirs"):
        assert branch_claims.live(common) == {"codegen/theirs"}
        with pytest.raises(branch_claims.Claimed, match="codegen/theirs"):
            branch_claims.claim(common, "codegen/theirs")
    # the holder died: its file stays, stale; the branch is free to take
    assert branch_claims.live(common) == frozenset()
    assert branch_claims.claim(common, "codegen/theirs")
    assert branch_claims.claim(common, "codegen/theirs")  # this process's again: idempotent
    assert branch_claims.live(common) == {"codegen/theirs"}
    assert branch_claims.others(common) == frozenset()


def test_a_dead_runs_claim_file_goes_when_a_run_next_claims(sample_repo: SampleRepo) -> None:
    common = sample_repo.path / ".git"
    with held_elsewhere(common, "codegen/gone"), held_elsewhere(common, "codegen/alive"):
        pass
    with held_elsewhere(common, "codegen/alive"):
        assert branch_claims.claim(common, "codegen/new")
        files = sorted(p.name for p in branch_claims.folder(common).iterdir())
        assert branch_claims.others(common) == {"codegen/alive"}
    names = ("codegen/alive", "codegen/new")
    assert files == sorted(branch_claims._file_name(n) for n in names)


def test_a_claims_folder_that_is_not_ours_is_not_read(sample_repo: SampleRepo) -> None:
    common = sample_repo.path / ".git"
    with held_elsewhere(common, "codegen/theirs"):
        branch_claims.folder(common).chmod(0o777)
        assert branch_claims.live(common) == frozenset()
        assert not branch_claims.claim(common, "codegen/mine")  # the run goes on, unrecorded


def test_the_ref_guard_leaves_a_live_runs_new_branch_and_removes_a_dead_ones(
    sample_repo: SampleRepo, tmp_path: Path
) -> None:
    folder = tmp_path / "trees"
    folder.mkdir(mode=0o700)
    tree = create_worktree(
        sample_repo.path, folder / "repo", branch="codegen/mine", base="main", protected=()
    )
    guard = RefGuard.for_worktree(tree.path, tree.branch)
    common = sample_repo.path / ".git"
    base = sample_repo.head()

    with held_elsewhere(common, "codegen/theirs"):
        before = guard.state()
        sample_repo.git("branch", "codegen/theirs", base)  # the other run makes its branch
        assert guard.restore(before) == []
    assert sample_repo.git("rev-parse", "codegen/theirs").strip() == base

    before = guard.state()  # that run is gone: its branch is a ref like any other
    sample_repo.git("branch", "codegen/planted", base)
    assert guard.restore(before) == ["refs/heads/codegen/planted"]
    assert "codegen/planted" not in sample_repo.git("branch", "--list")
