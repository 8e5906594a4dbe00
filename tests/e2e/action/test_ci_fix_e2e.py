"""A failed `workflow_run` on a branch codegen-ci pushed, end to end through `codegen-ci
action`: the run's JUnit artifact (a real pytest report, zipped) is downloaded through the
REST double, its failing tests become the task, the fix is pushed on top of the branch, and
the attempts stay bounded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from action_env import TOKEN, VERSION, ActionWorld, open_world, push_branch
from pr_loop_env import junit_zip, workflow_run_payload
from sample_repo import FIXED_LINE_NEW, SampleRepo, fixing_script

from codegen_ci.testing.github_double import add_workflow_run
from codegen_ci.testing.scripted_model import Reply

BRANCH = "codegen/3-speed-up-parse"
FAILING = "tests.test_version::test_bump_minor_resets_patch"


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # the runs' test command is `QUICK_GATE`'s check of the fixed line (`quick`): what a run
    # is told and where it pushes are these tests' subject; the CI's failures come from the
    # JUnit artifact (a real pytest report, made once per session) or the job's log
    with open_world(sample_repo, token=TOKEN, reruns=0, quick=True) as world:
        head = push_branch(sample_repo, BRANCH, {"NOTES.md": "faster parse\n"}, "speed up")
        world.github.add_pull(
            BRANCH, title="Speed up parse", user="github-actions[bot]", head_sha=head
        )
        yield world


def status_of(world: ActionWorld, number: int) -> str:
    (body,) = [
        c.body
        for c in world.github.comments.values()
        if c.issue_number == number and "codegen-ci:status" in c.body
    ]
    return body


def failed_ci(world: ActionWorld, branch: str = BRANCH, pr: int | None = 1) -> dict[str, object]:
    run = add_workflow_run(
        world.github, branch, artifacts={"junit": junit_zip(world.sample, world.tmp)}
    )
    return workflow_run_payload(world, run.id, branch, pr)


def test_failing_junit_artifact_becomes_the_task_and_the_fix_is_pushed(world: ActionWorld) -> None:
    old_head = world.origin_git("rev-parse", BRANCH).strip()
    world.model.add(*fixing_script())

    result = world.run("workflow_run", failed_ci(world, pr=None))  # found by its branch

    assert result.code == 0, result.log
    task = world.model.requests[0]["messages"][1]["content"]
    assert "The CI workflow failed on pull request #1" in task
    assert "workflow: CI\nbranch: " in task  # the run's names, fenced
    assert "test_bump_minor_resets_patch" in task and "assert '3.5.5' == '3.5.0'" in task
    assert task.index("<<untrusted") < task.index("test_bump_minor_resets_patch")
    assert world.origin_git("rev-parse", f"{BRANCH}~1").strip() == old_head  # on top
    assert FIXED_LINE_NEW in world.origin_git("show", f"{BRANCH}:{VERSION}")
    status = status_of(world, 1)
    assert "pushed" in status and "CI failure" in status
    # the token goes to the API, never along the redirect to the storage behind a download
    downloads = [r for r in world.github.requests if r.path.startswith("/_blobs/")]
    assert downloads and all("authorization" not in r.headers for r in downloads)
    asked = [r for r in world.github.requests if r.path.endswith("/zip")]
    assert asked and all(TOKEN in r.headers["authorization"] for r in asked)


def test_same_failures_again_give_up_without_a_model_call(world: ActionWorld) -> None:
    world.model.add(Reply("I cannot see the problem."))  # no change: the tests still fail
    first = world.run("workflow_run", failed_ci(world), **{"max-iterations": "1"})
    assert first.code == 1, first.log
    calls = len(world.model.requests)

    again = world.run("workflow_run", failed_ci(world))

    assert again.code == 0, again.log
    assert again.outputs["status"] == "skipped"
    assert len(world.model.requests) == calls
    assert "gives up" in status_of(world, 1) and "same failures" in status_of(world, 1)


def test_attempts_are_bounded_per_pull_request(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    first = world.run("workflow_run", failed_ci(world), **{"max-ci-fix-attempts": "1"})
    assert first.code == 0, first.log
    calls = len(world.model.requests)

    # CI fails again (say a flaky job): one attempt was the limit
    again = world.run("workflow_run", failed_ci(world), **{"max-ci-fix-attempts": "1"})

    assert again.code == 0 and again.outputs["status"] == "skipped", again.log
    assert len(world.model.requests) == calls
    assert "the limit is 1" in status_of(world, 1)


def test_without_junit_the_failed_jobs_log_tail_is_the_task(world: ActionWorld) -> None:
    log = b"\n".join(
        [b"2024-05-01T12:00:00Z setting up"] * 200
        + [
            b"2024-05-01T12:00:09Z \x1b[31mE   AssertionError: 3.5.5 != 3.5.0\x1b[0m",
            b"2024-05-01T12:00:09Z ##[error]Process completed with exit code 1.",
        ]
    )
    run = add_workflow_run(
        world.github, BRANCH, jobs=[("build", "success", b"fine"), ("test", "failure", log)]
    )
    world.model.add(*fixing_script())

    result = world.run("workflow_run", workflow_run_payload(world, run.id, BRANCH, 1))

    assert result.code == 0, result.log
    task = world.model.requests[0]["messages"][1]["content"]
    assert "AssertionError: 3.5.5 != 3.5.0" in task and "\x1b[" not in task
    # the job's name (the workflow file's words) opens the fenced log
    assert "CI job 1: name and log tail" in task and "\ntest\n\n" in task
    assert "fine" not in task
    assert task.count("setting up") < 100  # only the tail


@pytest.mark.parametrize(
    ("branch", "head_repo", "conclusion", "notice"),
    [
        ("main", "octo-org/hello", "failure", "default branch"),
        (BRANCH, "mallory/hello", "failure", "fork"),
        (BRANCH, "octo-org/hello", "success", "only a completed run that failed"),
        ("feature-y", "octo-org/hello", "failure", "not one codegen-ci pushed"),
    ],
)
def test_runs_that_are_not_ours_are_ignored(
    world: ActionWorld, branch: str, head_repo: str, conclusion: str, notice: str
) -> None:
    if branch == "feature-y":
        head = push_branch(world.sample, branch, {"Y.md": "y\n"}, "y")
        world.github.add_pull(branch, title="Y", user="alice", head_sha=head)
    refs = world.origin_refs()
    run = add_workflow_run(
        world.github, branch, artifacts={"junit": junit_zip(world.sample, world.tmp)}
    )
    payload = workflow_run_payload(world, run.id, branch, None, conclusion, head_repo)

    result = world.run("workflow_run", payload)

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped" and notice in result.stdout
    assert world.model.requests == [] and world.origin_refs() == refs


def test_a_labelled_pull_request_gets_its_ci_fixed(world: ActionWorld) -> None:
    head = push_branch(world.sample, "feature-y", {"Y.md": "y\n"}, "y")
    pr = world.github.add_pull("feature-y", title="Y", user="alice", head_sha=head)
    pr.labels.append("codegen-fix-ci")
    world.model.add(*fixing_script())

    result = world.run(
        "workflow_run",
        failed_ci(world, "feature-y", pr.number),
        **{"ci-fix-label": "codegen-fix-ci"},
    )

    assert result.code == 0, result.log
    assert FIXED_LINE_NEW in world.origin_git("show", f"feature-y:{VERSION}")


def test_the_branch_prefix_of_codegen_yml_counts_too(world: ActionWorld) -> None:
    # the proof off, as `open_world`'s `.codegen.yml` this one replaces: not this test's
    config = (
        "version: 1\ngit: {branch: 'bot/{slug}'}\n"
        "validation: {proof: {tests: 'off', reruns: 0}, allow_no_tests: true}\n"
    )
    world.sample.commit({".codegen.yml": config}, "config")
    world.sample.git("push", "-q", "origin", "main")
    head = push_branch(world.sample, "bot/faster", {"F.md": "f\n"}, "f")
    pr = world.github.add_pull("bot/faster", title="F", user="alice", head_sha=head)
    world.model.add(*fixing_script())

    result = world.run("workflow_run", failed_ci(world, "bot/faster", pr.number))

    assert result.code == 0, result.log
    assert FIXED_LINE_NEW in world.origin_git("show", f"bot/faster:{VERSION}")


def test_a_payload_without_the_run_id_is_bad_input(world: ActionWorld) -> None:
    payload = failed_ci(world)
    del payload["workflow_run"]["id"]  # type: ignore[attr-defined]

    result = world.run("workflow_run", payload)

    assert result.code == 2, result.log
    assert "event payload has no workflow_run.id" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and world.model.requests == []
