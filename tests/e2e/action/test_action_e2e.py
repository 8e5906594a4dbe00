"""`codegen-ci action` end to end, as the runner starts it: a subprocess with the runner's
environment, webhook payloads built from real fixtures, the GitHub REST double, the scripted
model over HTTP, a bare origin and real pytest in the sample repository."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_env import EVENTS, TOKEN, VERSION, ActionWorld, checkout_header, open_world, push_branch
from sample_repo import FIXED_LINE_NEW, QUICK_GATE, SampleRepo, fixing_script

from codegen_ci.security.untrusted import Untrusted
from codegen_ci.sources.events import IssueTask
from codegen_ci.sources.task_spec import resolve_event_spec
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.testing.scripted_model import Reply, call

ISSUE_BODY = "Version.bump_minor() must reset the patch number to 0 (3.4.5 -> 3.5.0)."


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    with open_world(sample_repo, readers=("rob",), reruns=0) as world:
        world.github.add_issue("Reset patch in bump_minor", ISSUE_BODY, user="rob")
        yield world


@pytest.fixture
def quick_world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    """`world` with `QUICK_GATE`'s test command, for the tests whose subject is who may
    start a run, where it commits and what it posts, not what the gate finds (the tests above
    them, the failing rounds' comments, keep the sample's pytest): no pytest starts."""
    with open_world(sample_repo, readers=("rob",), reruns=0, quick=True) as world:
        world.github.add_issue("Reset patch in bump_minor", ISSUE_BODY, user="rob")
        yield world


def status_comments(world: ActionWorld, number: int) -> list[str]:
    return [
        c.body
        for c in world.github.comments.values()
        if c.issue_number == number and "codegen-ci:status" in c.body
    ]


def assert_no_credentials(world: ActionWorld) -> None:
    config = (world.last_workspace / ".git" / "config").read_text()
    assert "extraheader" not in config
    assert TOKEN not in config and checkout_header(TOKEN) not in config


def test_issue_label_opens_a_pr_and_a_rerun_updates_it(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    first = world.run("issues", world.issue_labeled(1))

    assert first.code == 0, first.log
    out = first.outputs
    assert out["status"] == "success" and out["iterations"] == "1"
    branch = out["branch"]
    assert branch.startswith("codegen/1-reset-patch")
    (pull,) = world.github.pulls()
    assert out["pr-url"].endswith(f"/pull/{pull.number}")
    assert "Closes #1" in (pull.body or "") and pull.title == "Reset patch in bump_minor"
    assert pull.pull is not None and pull.pull.head_ref == branch and not pull.pull.draft
    assert world.origin_git("rev-list", "--count", f"main..{branch}").strip() == "1"
    assert FIXED_LINE_NEW in world.origin_git("show", f"{branch}:{VERSION}")
    assert int(out["prompt-tokens"]) > 0 and int(out["completion-tokens"]) > 0
    report = Path(world.tmp / "runner-temp") / "codegen"
    assert Path(out["report-path"]).parent == report
    assert json.loads((Path(out["report-path"]) / "report.json").read_text())["pr_url"]
    assert "codegen-ci success" in first.summary and out["pr-url"] in first.summary
    (status,) = status_comments(world, 1)
    assert out["pr-url"] in status
    assert world.github.issues[1].reactions == ["eyes"]
    assert_no_credentials(world)
    assert "::add-mask::" + TOKEN in first.stdout and "::stop-commands::" in first.stdout
    sent = json.dumps([r.body for r in world.github.requests])
    assert TOKEN not in sent and TOKEN not in first.summary
    assert first.stdout.count(TOKEN) == 1  # the add-mask line only

    world.model.add(*fixing_script())
    again = world.run("issues", world.issue_labeled(1), attempt=2)

    assert again.code == 0, again.log
    assert again.outputs["branch"] == branch and again.outputs["pr-url"] == out["pr-url"]
    assert len(world.github.pulls()) == 1
    assert len(status_comments(world, 1)) == 1
    assert "/attempts/2" in status_comments(world, 1)[0]
    assert world.origin_git("rev-list", "--count", f"main..{branch}").strip() == "1"


def test_read_only_user_is_refused_without_a_model_call(world: ActionWorld) -> None:
    refs = world.origin_refs()
    result = world.run("issue_comment", world.comment(1, "/codegen please fix", user="rob"))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped"
    assert "rob has read permission" in result.stdout
    assert world.model.requests == [] and world.origin_refs() == refs
    assert status_comments(world, 1) == []


def test_pr_comment_commits_on_the_pr_branch_with_default_branch_config(
    world: ActionWorld,
) -> None:
    # .codegen.yml on main names the tests; the PR's own .codegen.yml must not count
    # (with the proof off, as `open_world`'s `.codegen.yml` it replaces: not this test's;
    # the tests named are `QUICK_GATE`'s check: which file names them is the subject)
    validation = {**QUICK_GATE, "proof": {"tests": "off", "reruns": 0}}
    config = {"version": 1, "validation": validation, "limits": {"max_iterations": 2}}
    world.sample.path.joinpath(".codegen.yml").write_text(json.dumps(config))
    world.sample.git("add", "-A")
    world.sample.git("commit", "-q", "-m", "config")
    world.sample.git("push", "-q", "origin", "main")
    pwned = world.tmp / "pwned"
    evil = {"version": 1, "validation": {"test": [f"{sys.executable} -c \"open('{pwned}', 'w')\""]}}
    head = push_branch(world.sample, "feature-x", {".codegen.yml": json.dumps(evil)}, "tweak")
    pr = world.github.add_pull("feature-x", title="Feature X", user="alice", head_sha=head)
    world.model.add(*fixing_script())

    result = world.run(
        "issue_comment", world.comment(pr.number, "/codegen fix bump_minor"), **{"test-command": ""}
    )

    assert result.code == 0, result.log
    assert result.outputs["branch"] == "feature-x"
    assert not pwned.exists()
    commands = json.loads((Path(result.outputs["report-path"]) / "report.json").read_text())
    assert commands["rounds"][0]["commands"][0]["command"] == QUICK_GATE["test"][0]
    new_head = world.origin_git("rev-parse", "feature-x").strip()
    assert world.origin_git("rev-parse", f"{new_head}^").strip() == head  # on top, no force
    assert len(world.github.pulls()) == 1
    assert world.github.comments[max(world.github.comments)].body  # status comment on the PR
    assert status_comments(world, pr.number)


def test_fork_pr_gets_a_refusal_and_nothing_is_pushed(world: ActionWorld) -> None:
    world.github.add_fork("mallory/hello")
    pr = world.github.add_pull("mallory:evil", title="Evil", user="mallory")
    refs = world.origin_refs()

    result = world.run("issue_comment", world.comment(pr.number, "/codegen go"))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped"
    (refusal,) = status_comments(world, pr.number)
    assert "forks" in refusal
    assert world.origin_refs() == refs and world.model.requests == []


def test_unsolvable_task_comments_the_failures_and_opens_no_pr(world: ActionWorld) -> None:
    refs = world.origin_refs()
    result = world.run("issues", world.issue_labeled(1), **{"max-iterations": "2"})

    assert result.code == 1, result.log
    assert result.outputs["status"] == "failed" and result.outputs["iterations"] == "2"
    (failure,) = status_comments(world, 1)
    assert "test_bump_minor_resets_patch" in failure and "2 validation round(s)" in failure
    assert "actions/runs/4242" in failure
    assert world.github.pulls() == [] and world.origin_refs() == refs
    edits = [r for r in world.github.writes() if r.method == "PATCH" and "/comments/" in r.path]
    assert len(edits) >= 2  # after round 1, and the final report


def test_draft_on_failure_opens_a_draft_pr(world: ActionWorld) -> None:
    world.model.add(
        Reply(
            tool_calls=[
                call(
                    "edit_file",
                    path="README.md",
                    old_text="# semver",
                    new_text="# semver, soon fixed",
                )
            ]
        ),
        Reply("Done."),
    )
    result = world.run(
        "issues", world.issue_labeled(1), **{"max-iterations": "1", "draft-on-failure": "true"}
    )

    assert result.code == 1, result.log
    (pull,) = world.github.pulls()
    assert pull.pull is not None and pull.pull.draft and result.outputs["pr-url"]
    assert "Closes #" not in (pull.body or "")  # merging a failed attempt closes nothing
    (failure,) = status_comments(world, 1)
    assert "draft pull request" in failure and "test_bump_minor_resets_patch" in failure


def test_rerun_by_a_reader_is_refused(world: ActionWorld) -> None:
    result = world.run(
        "issues",
        world.issue_labeled(1),
        attempt=2,
        env={"GITHUB_ACTOR": "alice", "GITHUB_TRIGGERING_ACTOR": "rob"},
    )

    assert result.code == 0 and result.outputs["status"] == "skipped", result.log
    assert world.model.requests == []


def test_dispatch_task_opens_a_pr_without_an_issue(quick_world: ActionWorld) -> None:
    world = quick_world
    world.model.add(*fixing_script())
    result = world.run("workflow_dispatch", world.dispatch("Reset the patch in bump_minor"))

    assert result.code == 0, result.log
    assert result.outputs["branch"] == "codegen/reset-the-patch-in-bump-minor"
    (pull,) = world.github.pulls()
    assert pull.title == "Reset the patch in bump_minor" and "Closes" not in (pull.body or "")
    assert world.github.comments == {}


def test_permission_api_error_fails_closed(world: ActionWorld) -> None:
    world.github.inject("GET", "*/collaborators/*/permission", 500, times=None)
    result = world.run("issue_comment", world.comment(1, "/codegen fix it"))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped"
    assert "could not check the permission" in result.stdout
    assert world.model.requests == [] and world.github.pulls() == []


def test_bots_need_allowed_bots(quick_world: ActionWorld) -> None:
    world = quick_world
    world.github.add_user("renovate[bot]", kind="Bot")
    refused = world.run("issues", world.issue_labeled(1, "renovate[bot]", sender_type="Bot"))
    assert refused.code == 0 and refused.outputs["status"] == "skipped", refused.log
    assert world.model.requests == []

    world.model.add(*fixing_script())
    allowed = world.run(
        "issues",
        world.issue_labeled(1, "renovate[bot]", sender_type="Bot"),
        **{"allowed-bots": "renovate[bot]"},
    )
    assert allowed.code == 0 and allowed.outputs["status"] == "success", allowed.log


@pytest.mark.parametrize(
    "body",
    ["thanks, looks good", "> /codegen fix it\n\nquoted, not asked", "```\n/codegen fix it\n```"],
)
def test_comments_without_the_trigger_are_ignored(world: ActionWorld, body: str) -> None:
    result = world.run("issue_comment", world.comment(1, body))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped"
    assert world.model.requests == [] and world.github.writes() == []


def test_comments_by_codegen_itself_never_trigger(world: ActionWorld) -> None:
    body = "/codegen is what started this run"
    result = world.run(
        "issue_comment", world.comment(1, body, user="github-actions[bot]", user_type="Bot")
    )

    assert result.code == 0 and result.outputs["status"] == "skipped", result.log
    assert world.model.requests == [] and world.github.writes() == []


def test_pr_creation_forbidden_leaves_the_branch_and_a_compare_link(
    quick_world: ActionWorld,
) -> None:
    world = quick_world
    world.github.forbid_pull_creation = True
    world.model.add(*fixing_script())
    result = world.run("issues", world.issue_labeled(1))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "success" and result.outputs["pr-url"] == ""
    branch = result.outputs["branch"]
    assert f"refs/heads/{branch}" in world.origin_refs()
    compare = "https://github.com/octo-org/hello/compare/main..."
    assert compare in result.summary
    (status,) = status_comments(world, 1)
    assert compare in status
    assert "::warning" in result.stdout


def test_bad_settings_block_is_bad_input(world: ActionWorld) -> None:
    body = "/codegen fix it\n\n```yaml codegen\nlimits: {max_iterations: lots}\n```"
    result = world.run("issue_comment", world.comment(1, body))

    assert result.code == 2, result.log
    assert result.outputs["status"] == "error"
    assert "Traceback" not in result.stderr and world.model.requests == []


def test_github_failing_after_retries_is_an_infrastructure_error(quick_world: ActionWorld) -> None:
    world = quick_world
    world.github.inject("POST", "*/pulls", 502, times=None)
    world.model.add(*fixing_script())
    result = world.run("issues", world.issue_labeled(1))

    assert result.code == 3, result.log
    assert result.outputs["status"] == "error" and "Traceback" not in result.stderr
    (status,) = status_comments(world, 1)
    assert "stopped with an error" in status and "HTTP 502" in status
    assert "::error" in result.stdout


def test_precedence_event_over_inputs_over_default_branch_config(sample_repo: SampleRepo) -> None:
    config = {
        "version": 1,
        "validation": {"test": ["from-config"], "lint": ["lint-config"]},
        "limits": {"max_iterations": 4},
        "model": {"name": "config-model"},
    }
    (sample_repo.path / ".codegen.yml").write_text(json.dumps(config))
    sample_repo.git("add", "-A")
    sample_repo.git("commit", "-q", "-m", "config")
    commit = sample_repo.head()
    (sample_repo.path / ".codegen.yml").write_text("version: 1\nvalidation: {test: [worktree]}\n")
    settings = ActionSettings.from_env(
        {
            "INPUT_TEST-COMMAND": "from-input",
            "INPUT_MAX-ITERATIONS": "3",
            "CODEGEN_MODEL": "env-model",
        }
    )
    task = IssueTask(
        task="Fix it",
        title=Untrusted("Fix it"),
        issue_number=7,
        pr_number=None,
        actor="alice",
        actor_type="User",
        spec_overrides={"limits": {"max_iterations": 2}},
        spec_path=None,
        delivery_key="issue-7",
    )

    spec = resolve_event_spec(task, settings, sample_repo.path, config_commit=commit, base=commit)

    assert spec.validation.test == ["from-input"]  # input over .codegen.yml
    assert spec.validation.lint == ["lint-config"]  # .codegen.yml where no input is given
    assert spec.limits.max_iterations == 2  # the issue's settings block over the input
    assert spec.model.name == "config-model"  # .codegen.yml over the environment
    assert spec.git.base == commit and spec.task == "Fix it"


def test_a_scheduled_matrix_job_runs_its_spec(quick_world: ActionWorld) -> None:
    """nightly.yml's matrix jobs run under the `schedule` event with the `spec` input."""
    world = quick_world
    spec = {
        "version": 1,
        "title": "Nightly patch reset",
        "task": "Reset the patch in bump_minor.",
        "validation": QUICK_GATE,
        "limits": {"max_iterations": 1},
    }
    world.sample.commit({"specs/nightly.yaml": json.dumps(spec)}, "nightly spec")
    world.sample.git("push", "-q", "origin", "main")
    world.model.add(*fixing_script())
    payload = json.loads(
        (
            EVENTS / "azure-sdk-tools-github-event-processor" / "ScheduledEvent_payload.json"
        ).read_text()
    )

    skipped = world.run("schedule", payload, env={"GITHUB_ACTOR": "alice"})
    assert skipped.code == 0 and skipped.outputs["status"] == "skipped", skipped.log
    result = world.run(
        "schedule", payload, env={"GITHUB_ACTOR": "alice"}, spec="specs/nightly.yaml"
    )

    assert result.code == 0 and result.outputs["status"] == "success", result.log
    (pull,) = world.github.pulls()
    assert pull.title == "Nightly patch reset"
