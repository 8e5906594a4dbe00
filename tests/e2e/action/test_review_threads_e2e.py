"""Review comments and reviews that start with the trigger phrase, end to end through
`codegen-ci action`: the thread reaches the model, the fix lands on the pull request's branch
(on top, no force), the tool answers in the thread, and a re-delivery adds no second reply."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from action_env import VERSION, ActionWorld, open_world, push_branch
from pr_loop_env import review_comment_payload, review_payload, seed_comment
from sample_repo import FIXED_LINE_NEW, SampleRepo, fixing_script


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # the thread, the branch and the replies are the subject, not what the gate finds: the
    # test command is `QUICK_GATE`'s check of the fixed line (`quick`), no pytest starts
    with open_world(sample_repo, readers=("rob",), reruns=0, quick=True) as world:
        head = push_branch(sample_repo, "feature-x", {"NOTES.md": "notes\n"}, "notes")
        world.github.add_pull("feature-x", title="Feature X", user="alice", head_sha=head)
        yield world


def tool_replies(world: ActionWorld) -> list[str]:
    return [c.body for c in world.github.review_comments.values() if c.user == world.github.actor]


def status_of(world: ActionWorld, number: int) -> str:
    (body,) = [
        c.body
        for c in world.github.comments.values()
        if c.issue_number == number and "codegen-ci:status" in c.body
    ]
    return body


def test_review_comment_fixes_on_the_branch_and_replies_in_its_thread(world: ActionWorld) -> None:
    old_head = world.origin_git("rev-parse", "feature-x").strip()
    root = seed_comment(world, 1, "bump_minor keeps the old patch number here", user="rob")
    ask = seed_comment(
        world,
        1,
        "/codegen reset the patch to zero in bump_minor",
        user="alice",
        in_reply_to=root.id,
        start_line=14,
    )
    world.model.add(*fixing_script())

    result = world.run("pull_request_review_comment", review_comment_payload(world, ask))

    assert result.code == 0, result.log
    assert result.outputs["status"] == "success" and result.outputs["branch"] == "feature-x"
    first = world.model.requests[0]["messages"][1]["content"]
    assert first.startswith("# Task: reset the patch to zero in bump_minor")
    assert "src/semver/version.py, lines 14-15" in first
    assert "return Version(self.major, self.minor + 1, self.patch)" in first  # the diff hunk
    assert "@rob: bump_minor keeps the old patch number here" in first  # the thread, fenced
    assert first.index("<<untrusted") < first.index("@rob:")
    # on top of the PR's head, not forced
    assert world.origin_git("rev-parse", "feature-x~1").strip() == old_head
    assert FIXED_LINE_NEW in world.origin_git("show", f"feature-x:{VERSION}")
    commit = world.origin_git("rev-parse", "feature-x").strip()
    (reply,) = tool_replies(world)
    assert commit[:12] in reply and "src/semver/version.py" in reply
    (made,) = [c for c in world.github.review_comments.values() if c.user == world.github.actor]
    assert made.in_reply_to_id == root.id
    assert world.github.review_comments[ask.id].reactions == ["eyes"]
    assert f"pushed {commit[:12]}" in status_of(world, 1)

    # GitHub delivers the same event again: the reply is edited, not repeated
    world.model.add(*fixing_script())
    again = world.run("pull_request_review_comment", review_comment_payload(world, ask))

    assert again.code == 1, again.log  # changed nothing: not a success
    assert len(tool_replies(world)) == 1
    assert "changed nothing (`no_change`)" in tool_replies(world)[0]
    assert world.origin_git("rev-parse", "feature-x").strip() == commit


def test_submitted_review_addresses_all_its_comments_in_one_run(world: ActionWorld) -> None:
    one = seed_comment(world, 1, "bump_minor must reset the patch", review_id=77)
    two = seed_comment(
        world,
        1,
        "and keep major as it is",
        review_id=77,
        path="README.md",
        line=1,
        diff_hunk="@@ -0,0 +1 @@\n+# semver",
    )
    seed_comment(world, 1, "an older review, not this one", review_id=12)
    world.model.add(*fixing_script())

    result = world.run("pull_request_review", review_payload(world, 1, 77, "/codegen please"))

    assert result.code == 0, result.log
    assert len(world.model.tool_requests) == 3  # one run
    first = world.model.requests[0]["messages"][1]["content"]
    assert "bump_minor must reset the patch" in first and "and keep major as it is" in first
    assert "an older review" not in first
    replies = [c for c in world.github.review_comments.values() if c.user == world.github.actor]
    assert sorted(c.in_reply_to_id for c in replies) == sorted([one.id, two.id])

    world.model.add(*fixing_script())
    again = world.run("pull_request_review", review_payload(world, 1, 77, "/codegen please"))
    assert again.code == 1, again.log  # already done: the run changed nothing (no_change)
    assert len(tool_replies(world)) == 2  # edited in place, one per thread


def test_a_review_by_a_reader_is_refused(world: ActionWorld) -> None:
    seed_comment(world, 1, "rewrite it all", user="rob", review_id=88)

    result = world.run("pull_request_review", review_payload(world, 1, 88, "/codegen", "rob"))

    assert result.code == 0 and result.outputs["status"] == "skipped", result.log
    assert "rob has read permission" in result.stdout
    assert world.model.requests == [] and world.github.writes() == []


def test_review_comment_by_a_reader_or_an_unlisted_bot_is_refused(world: ActionWorld) -> None:
    refs = world.origin_refs()
    by_rob = seed_comment(world, 1, "/codegen rewrite everything", user="rob")
    world.github.add_user("helper[bot]", kind="Bot")
    by_bot = seed_comment(world, 1, "/codegen rewrite everything", user="helper[bot]")

    rob = world.run("pull_request_review_comment", review_comment_payload(world, by_rob))
    bot = world.run(
        "pull_request_review_comment", review_comment_payload(world, by_bot, user_type="Bot")
    )

    assert rob.code == 0 and bot.code == 0, rob.log + bot.log
    assert rob.outputs["status"] == "skipped" and "rob has read permission" in rob.stdout
    assert "not listed in allowed-bots" in bot.stdout
    assert world.model.requests == [] and world.origin_refs() == refs
    assert tool_replies(world) == [] and world.github.writes() == []


def test_review_comment_on_a_fork_pr_is_refused(world: ActionWorld) -> None:
    world.github.add_fork("mallory/hello")
    world.github.add_pull("mallory:evil", title="Evil", user="alice")
    ask = seed_comment(world, 2, "/codegen fix it")
    refs = world.origin_refs()

    result = world.run("pull_request_review_comment", review_comment_payload(world, ask))

    assert result.code == 0, result.log
    assert "comes from a fork" in result.stdout
    assert world.model.requests == [] and world.origin_refs() == refs
    assert json.dumps(status_of(world, 2)).count("does not work on pull requests from forks")
