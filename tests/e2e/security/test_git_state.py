"""A command that moves HEAD or the user's branches is refused and put back, never followed:
the run's commit lands on its own branch and every other ref stays exactly where it was."""

from __future__ import annotations

import subprocess

import pytest
from sample_repo import FIX, PYTEST, QUICK_GATE, SampleRepo
from tests.e2e.run.test_resilience import run_cli, tool_results

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call


def refs(repo: SampleRepo) -> dict[str, str]:
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def with_feature_branch(repo: SampleRepo) -> tuple[str, str]:
    """A user branch `feature` one commit ahead of main; the checkout stays on main."""
    main = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    feature = repo.commit({"FEATURE.md": "work in progress\n"}, "feature work")
    repo.git("checkout", "-q", "main")
    return main, feature


def test_the_old_final_step_rewinds_a_branch_head_was_pointed_at(sample_repo: SampleRepo) -> None:
    """Positive control, without the tool: after `git symbolic-ref HEAD refs/heads/feature` in
    a worktree, the final `reset --soft <base>` the run used to make moves `feature`."""
    main, feature = with_feature_branch(sample_repo)
    tree = sample_repo.tmp / "plain-worktree"
    sample_repo.git("worktree", "add", "-q", "-b", "codegen/plain", str(tree), main)
    for args in (["symbolic-ref", "HEAD", "refs/heads/feature"], ["reset", "-q", "--soft", main]):
        subprocess.run(["git", *args], cwd=tree, check=True)

    assert refs(sample_repo)["refs/heads/feature"] == main != feature


def test_commands_that_move_head_or_user_branches_are_refused_and_restored(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the layer below the sandbox (read-only .git)
    # the model's commands move the refs: no proof and coverage runs after the passing round
    # (conftest.py's default; the next test keeps them: its hostile test command runs there too)
    sample_repo.proof = False
    main, feature = with_feature_branch(sample_repo)
    before = refs(sample_repo)
    moves = [
        "git symbolic-ref refs/heads/$(git branch --show-current) refs/heads/main",
        "git symbolic-ref HEAD refs/heads/feature",
        f"git update-ref refs/heads/main {feature}",
        "git checkout -q -B other && git tag sneaky",
    ]
    model_env.add(
        Reply(tool_calls=[call("run_command", command=c) for c in moves]),
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
    )

    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    code, output, report = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))

    assert code == 0, output
    after = refs(sample_repo)
    branch = report["branch"]
    assert after.pop(f"refs/heads/{branch}") == report["commit"]
    assert after == before  # feature, main, origin/main as they were; no `other`, no tag
    assert sample_repo.git("rev-parse", f"{report['commit']}^").strip() == main
    assert sample_repo.git("diff", "--name-only", main, report["commit"]).split() == [
        "src/semver/version.py"
    ]
    assert sample_repo.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    refused = {r["path"]: r["reason"] for r in report["refusals"]}
    assert {"refs/heads/main", "refs/heads/other", "refs/tags/sneaky"} <= set(refused)
    assert "HEAD (the worktree's)" in refused
    assert f"refs/heads/{branch}" in refused  # made to follow main: a plain branch again
    assert all(r == "git ref moved by a command; restored" for r in refused.values())
    results = tool_results(model_env.requests[1])
    assert "HEAD (the worktree's) was moved; it was put back" in results
    assert "refs/heads/main was moved; it was put back" in results


def test_a_test_command_that_moves_a_user_branch_is_undone(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the layer below the sandbox (read-only .git)
    main, feature = with_feature_branch(sample_repo)
    before = refs(sample_repo)
    test = f"git update-ref refs/heads/feature {main} && git symbolic-ref HEAD refs/heads/feature"
    spec = sample_repo.write_spec(validation={"test": [f"{test} && {PYTEST}"], "timeout": 60})
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))

    code, output, report = run_cli(sample_repo, spec)

    assert code == 0, output
    after = refs(sample_repo)
    assert after.pop(f"refs/heads/{report['branch']}") == report["commit"]
    assert after == before and after["refs/heads/feature"] == feature
    refused = {r["path"] for r in report["refusals"]}
    assert {"refs/heads/feature", "HEAD (the worktree's)"} <= refused
