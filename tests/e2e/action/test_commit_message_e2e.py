"""The commit the tool pushes carries no control taken from an issue, end to end through
`codegen-ci action`, real git and the GitHub double: a reader's issue that says "Fixes #2",
"Closes other/repo#3", links an issue, mentions someone and ends with `Signed-off-by:` and
`Co-authored-by:` lines gives a commit message that closes, references and mentions nothing
and whose only trailer is the tool's own. The control: the same words, taken as they are,
close issues by GitHub's rules and parse as trailers by git's."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest
from action_env import ActionWorld
from action_world import action_world, labeled
from sample_repo import SampleRepo, fixing_script

TITLE = "Fixes #2: reset the patch in bump_minor"
ISSUE = """\
Version.bump_minor() must reset the patch number to 0 (3.4.5 -> 3.5.0).

Fixes #2
Closes other/repo#3, resolves https://github.com/octo-org/hello/issues/4 and GH-5
cc @alice @octo-org/admins

Signed-off-by: Mallory <m@evil.example>
Co-authored-by: Mallory <m@evil.example>
"""
# GitHub's closing keywords followed by an issue reference (docs: "Linking a pull request to
# an issue"); a bare reference or URL links the commit into that issue's timeline.
CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:[\w.-]+/[\w.-]+)?#\d+", re.I
)
REFERENCE = re.compile(r"(?:^|[^\w])(?:[\w.-]+/[\w.-]+)?#\d+|\bGH-\d+|https?://", re.I)
ZWJ = "\u200d"
MENTION = re.compile(r"(?<![\w@/.:+-])@[A-Za-z0-9]")


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # the test command is `QUICK_GATE`'s check of the fixed line (`quick`): what the gate
    # finds is not this test's subject, no pytest starts
    with action_world(sample_repo, reruns=0, quick=True) as world:
        yield world


def trailers(message: str, cwd: str) -> list[str]:
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return parsed.stdout.splitlines()


def test_a_commit_message_closes_mentions_and_signs_nothing_from_the_issue(
    world: ActionWorld,
) -> None:
    issue = world.github.add_issue(TITLE, ISSUE, user="rob")
    world.model.add(*fixing_script())

    result = world.run("issues", labeled(world, issue.number))

    assert result.code == 0, result.log
    message = world.origin_git("log", "-1", "--format=%B", result.outputs["branch"])
    cwd = str(world.sample.path)
    # control: the issue's words, as they are, close, reference, mention and sign
    raw = f"{TITLE}\n\n{ISSUE}"
    assert len(CLOSING.findall(raw)) == 3 and MENTION.search(raw)
    assert trailers(raw, cwd) == [
        "Signed-off-by: Mallory <m@evil.example>",
        "Co-authored-by: Mallory <m@evil.example>",
    ]
    # ...and they reached the commit message, where they read the same and do nothing
    assert "Fixes #\u200d2" in message and "other/repo#\u200d3" in message
    assert "> Signed-off-by: Mallory" in message and "@\u200dalice" in message
    assert CLOSING.findall(message) == [] and REFERENCE.search(message) is None
    assert MENTION.search(message) is None
    assert not re.search(r"^(signed-off-by|co-authored-by):", message, re.I | re.M)
    ours = trailers(message, cwd)
    assert ours[0] == "Generated-by: codegen-ci" and len(ours) == 2
    assert re.fullmatch(r"Codegen-task: [0-9a-f]{16}", ours[1])
    # the pull request's title is the issue's too: it reads the same and links nothing
    (pull,) = world.github.pulls()
    assert pull.title == f"Fixes #{ZWJ}2: reset the patch in bump_minor"
