"""The action's world as the untrusted-input tests need it: alice may write, rob and mallory
may only read, issue #1 is rob's, issue #2 is alice's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from action_env import ActionWorld, open_world
from sample_repo import SampleRepo

ROBS_ISSUE = "Version.bump_minor() must reset the patch number to 0 (3.4.5 -> 3.5.0)."
ALICES_ISSUE = "bump_minor keeps the patch number; it should reset it to 0."


@contextmanager
def action_world(
    sample: SampleRepo,
    *,
    token_user: str = "github-actions[bot]",
    reruns: int | None = None,
    quick: bool = False,
) -> Iterator[ActionWorld]:
    """`token_user`: whom the token belongs to (the Actions token writes as the bot);
    `reruns`, `quick`: as `open_world`'s."""
    with open_world(
        sample, readers=("rob", "mallory"), token_user=token_user, reruns=reruns, quick=quick
    ) as world:
        world.github.add_issue("Reset patch in bump_minor", ROBS_ISSUE, user="rob")
        world.github.add_issue("Patch not reset", ALICES_ISSUE, user="alice")
        yield world


def status_comments(world: ActionWorld, number: int) -> list[tuple[str, str]]:
    """(author, body) of the comments on `number` that carry the status marker."""
    return [
        (c.user, c.body)
        for c in world.github.comments.values()
        if c.issue_number == number and "codegen-ci:status" in c.body
    ]


def first_prompt(world: ActionWorld) -> str:
    """The task as the model got it: the first request's user message."""
    messages = world.model.requests[0]["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "user")


def comment(world: ActionWorld, number: int, body: str, user: str = "alice") -> dict[str, Any]:
    """`world.comment`, with the issue's author as the double has it."""
    return _authored(world, number, world.comment(number, body, user=user))


def labeled(world: ActionWorld, number: int, sender: str = "alice") -> dict[str, Any]:
    return _authored(world, number, world.issue_labeled(number, sender=sender))


def _authored(world: ActionWorld, number: int, payload: dict[str, Any]) -> dict[str, Any]:
    payload["issue"]["user"]["login"] = world.github.issues[number].user
    return payload
