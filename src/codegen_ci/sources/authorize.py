"""Who may start a run: the event's actor and, on a re-run, whoever re-ran it.

Humans need write, maintain or admin permission, read from the collaborator-permission API
(`author_association` in the payload is not enough: it says nothing about write access).
An API error refuses the run: failing open would let anyone spend the token and the budget.
Bots pass only when listed in `allowed-bots`; their permission is the workflow author's call.
"""

from __future__ import annotations

from typing import Protocol

from codegen_ci.errors import GitHubError
from codegen_ci.sources.events import EventTask
from codegen_ci.spec.action_inputs import ActionSettings

WRITE_ROLES = frozenset({"admin", "maintain", "write"})


class PermissionSource(Protocol):
    def permission(self, login: str) -> str: ...


def refusal(task: EventTask, settings: ActionSettings, github: PermissionSource) -> str | None:
    """None when every actor may trigger the run; otherwise why not (for a notice)."""
    actors = {task.actor: task.actor_type == "Bot"}
    if settings.triggering_actor and settings.triggering_actor not in actors:
        actors[settings.triggering_actor] = False
    for login, is_bot in actors.items():
        reason = refuse_actor(login, is_bot or login.lower().endswith("[bot]"), settings, github)
        if reason:
            return reason
    return None


def refuse_actor(
    login: str, is_bot: bool, settings: ActionSettings, github: PermissionSource
) -> str | None:
    """Why `login` may not start a run, or None when it may."""
    if not login:
        return "the event names no actor"
    if is_bot:
        if settings.is_allowed_bot(login):
            return None
        return f"{login} is a bot that is not listed in allowed-bots"
    try:
        role = github.permission(login)
    except GitHubError as exc:
        return f"could not check the permission of {login}, so the run is refused: {exc.message}"
    if role in WRITE_ROLES:
        return None
    return (
        f"{login} has {role} permission on {settings.repository}; "
        "write, maintain or admin permission is needed to start codegen-ci"
    )
