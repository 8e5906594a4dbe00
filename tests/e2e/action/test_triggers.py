"""Through `codegen-ci action` and the GitHub double: only a line of prose starts a run (the
rule itself, on every trigger, is table-tested without the action in
tests/sources/test_triggers.py); text someone other than the triggering actor wrote reaches the
model fenced as data; the status comment is only ever one the tool's own identity wrote."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from action_env import ActionWorld
from action_world import (
    ALICES_ISSUE,
    ROBS_ISSUE,
    action_world,
    comment,
    first_prompt,
    labeled,
    status_comments,
)
from sample_repo import SampleRepo, fixing_script

from codegen_ci.publish.status import status_marker
from codegen_ci.testing.scripted_model import Reply


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # what starts a run, what the model is told and which comment is edited are the subject,
    # not what the gate finds: the test command is `QUICK_GATE`'s check (`quick`), no pytest
    with action_world(sample_repo, reruns=0, quick=True) as world:
        yield world


# --- only prose triggers: the action skips what the parser ignores --------------------------------

NOT_PROSE = {
    "indented code": "Steps:\n\n    /codegen fix it\n",
    "html comment": "<!--\n/codegen fix it\n-->",
}


@pytest.mark.parametrize("case", list(NOT_PROSE))
def test_code_quotes_and_hidden_text_never_trigger(world: ActionWorld, case: str) -> None:
    result = world.run("issue_comment", world.comment(2, NOT_PROSE[case]))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "skipped" and "trigger phrase" in result.stdout
    assert world.model.requests == [] and world.github.writes() == []


def test_control_a_prose_line_indented_less_than_four_spaces_triggers(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    result = world.run("issue_comment", world.comment(2, "Thanks!\n\n   /codegen fix it"))

    assert result.code == 0 and result.outputs["status"] == "success", result.log
    assert "fix it\n\nThis request was made in a comment on issue #2" in first_prompt(world)


# --- untrusted text is data, whoever triggers -----------------------------------------------------


def test_a_writers_bare_trigger_on_a_readers_issue_fences_the_issue(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    result = world.run("issue_comment", comment(world, 1, "/codegen"))

    assert result.code == 0 and result.outputs["status"] == "success", result.log
    prompt = first_prompt(world)
    begin, end = prompt.index("BEGIN UNTRUSTED DATA"), prompt.index("END UNTRUSTED DATA")
    assert ROBS_ISSUE in prompt[begin:end] and ROBS_ISSUE not in prompt[:begin]  # rob's words
    assert "Reset patch in bump_minor" in prompt[begin:end]  # and his title
    assert "by @rob" in prompt[:begin] and "@alice asked" in prompt[:begin]


def test_control_a_writers_own_issue_is_her_instruction(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    result = world.run("issue_comment", comment(world, 2, "/codegen"))

    assert result.code == 0 and result.outputs["status"] == "success", result.log
    prompt = first_prompt(world)
    task = prompt.split("\n\nRepository map")[0]  # (the map is the repository's: fenced)
    assert ALICES_ISSUE in task and "UNTRUSTED DATA" not in task


def test_a_label_on_a_readers_issue_fences_title_and_body(world: ActionWorld) -> None:
    world.model.add(*fixing_script())
    result = world.run("issues", labeled(world, 1))

    assert result.code == 0, result.log
    prompt = first_prompt(world)
    begin, end = prompt.index("BEGIN UNTRUSTED DATA"), prompt.index("END UNTRUSTED DATA")
    assert ROBS_ISSUE in prompt[begin:end] and ROBS_ISSUE not in prompt[:begin]


# --- the status comment is ours only --------------------------------------------------------------

FAKE = f"{status_marker(1)}\nmallory's comment, dressed as the status comment"


def failing_run(world: ActionWorld) -> None:
    world.model.add(Reply("Nothing to do."))
    result = world.run("issues", labeled(world, 1), **{"max-iterations": "1"})
    assert result.code == 1 and result.outputs["status"] == "failed", result.log


def test_a_marker_in_someone_elses_comment_is_never_edited(world: ActionWorld) -> None:
    planted = world.github.add_comment(1, FAKE, user="mallory")

    failing_run(world)

    assert planted.body == FAKE
    edits = [r.path for r in world.github.writes() if r.method == "PATCH"]
    assert not any(path.endswith(f"/comments/{planted.id}") for path in edits)
    ours = [(user, body) for user, body in status_comments(world, 1) if user != "mallory"]
    assert [user for user, _ in ours] == ["github-actions[bot]"]
    assert "could not complete" in ours[0][1]
    assert any(r.path == "/user" for r in world.github.requests)  # asked who it is (403)


def test_control_with_a_users_token_its_own_marked_comment_is_the_one_edited(
    sample_repo: SampleRepo,
) -> None:
    """The token is mallory's (a personal access token): her marked comment is the tool's own
    status comment, so it is the one edited, and no second one appears."""
    with action_world(sample_repo, reruns=0, token_user="mallory", quick=True) as world:
        planted = world.github.add_comment(1, FAKE, user="mallory")
        failing_run(world)

        assert planted.body != FAKE and "could not complete" in planted.body
        assert [user for user, _ in status_comments(world, 1)] == ["mallory"]
