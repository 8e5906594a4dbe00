"""A run's commit says what changed, and running the same task again updates its branch
instead of piling up `-2`, `-3` branches; a branch with someone's own work is never reset.
What the gate finds is not their subject: a gate of exit codes (QUICK_GATE)."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from sample_repo import FIX, QUICK_GATE, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

BRANCH = "codegen/fix-the-patch-reset-in-bump-minor"


def run(repo: SampleRepo, spec_name: str = "spec.yaml", **fields: object) -> tuple[int, str]:
    spec = repo.write_spec(
        spec_name, title="Fix the patch reset in bump_minor", validation=QUICK_GATE, **fields
    )
    result = CliRunner().invoke(cli, ["run", str(spec), "--repo", str(repo.path)])
    return result.exit_code, result.output


def codegen_branches(repo: SampleRepo) -> list[str]:
    return repo.git("branch", "--list", "codegen/*", "--format=%(refname:short)").split()


def test_rerunning_the_same_task_updates_its_branch_and_each_commit_says_what_changed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*fixing_script(), *fixing_script(), *fixing_script())
    tips, outputs = [], []
    for _ in range(3):
        code, output = run(sample_repo)
        assert code == 0, output
        tips.append(sample_repo.git("rev-parse", BRANCH).strip())
        outputs.append(output)
        # each run's commit says what changed, without repeating "fix"
        subject = sample_repo.git("log", "-1", "--format=%s", BRANCH).strip()
        assert subject == "fix(semver): the patch reset in bump_minor", subject

    assert codegen_branches(sample_repo) == [BRANCH]
    base = sample_repo.git("rev-parse", "main").strip()
    assert sample_repo.git("rev-list", "--count", f"{base}..{BRANCH}").strip() == "1"
    assert len(set(tips)) == 3  # each run committed anew on the same branch
    reflog = sample_repo.git("reflog", "show", "--format=%H", BRANCH).split()
    assert tips[0] in reflog  # the earlier result stays reachable from the branch's reflog
    # and the run says so: a failed re-run would otherwise put its wip commit where a success
    # was, without a word (xmltodict: a success, then a failed attempt of the same task)
    assert "earlier run's commit" not in outputs[0]
    assert (
        f"the branch held an earlier run's commit {tips[0][:12]}; this run replaces it"
        in (outputs[1])
    )


def test_a_branch_with_the_users_own_commit_or_another_task_is_left_alone(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*fixing_script(), *fixing_script(), *fixing_script(), *fixing_script())
    assert run(sample_repo)[0] == 0
    # someone adds their own commit on the branch: the next run must not reset it
    sample_repo.git("checkout", "-q", BRANCH)
    mine = sample_repo.commit({"NOTES.md": "my notes\n"}, "my own work")
    sample_repo.git("checkout", "-q", "main")

    assert run(sample_repo)[0] == 0
    # a different task with the same title: its own branch too
    assert run(sample_repo, "other.yaml", task="Another task entirely.")[0] == 0

    assert sample_repo.git("rev-parse", BRANCH).strip() == mine
    assert codegen_branches(sample_repo) == [BRANCH, BRANCH + "-2", BRANCH + "-3"]
    # the first task once more: it updates the suffixed branch it had to take
    second = sample_repo.git("rev-parse", BRANCH + "-2").strip()
    assert run(sample_repo)[0] == 0
    assert codegen_branches(sample_repo) == [BRANCH, BRANCH + "-2", BRANCH + "-3"]
    assert sample_repo.git("rev-parse", BRANCH + "-2").strip() != second


def test_a_run_whose_branch_is_deleted_under_it_leaves_nothing_in_the_next_runs_way(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Someone else (another process: not a command of the run's) deletes the run's branch
    while it runs: git fails (exit 3), yet the report is written and no worktree stays on the
    branch, so the next run of the task is not stopped by "already checked out"."""

    def deleting(request: dict[str, Any]) -> Reply:
        sample_repo.git("update-ref", "-d", f"refs/heads/{BRANCH}")
        return Reply(tool_calls=[FIX])

    model_env.add(deleting, Reply("Fixed."), *fixing_script())
    out = sample_repo.tmp / "out"
    spec = sample_repo.write_spec(title="Fix the patch reset in bump_minor", validation=QUICK_GATE)
    first = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    )

    assert first.exit_code == 3, first.output
    assert "ambiguous argument 'HEAD'" in first.output
    report = json.loads((out / "report.json").read_text())
    assert (report["status"], report["worktree"], report["branch"]) == ("error", None, None)
    listing = sample_repo.git("worktree", "list", "--porcelain")
    assert listing.count("worktree ") == 1, listing  # the checkout alone

    code, output = run(sample_repo)
    assert code == 0, output
    assert codegen_branches(sample_repo) == [BRANCH]
