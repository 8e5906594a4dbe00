"""An event's task -> the Spec the pipeline runs, and the branch its result goes to.

Precedence, lowest first: built-in defaults < environment (`CODEGEN_MODEL`, `OPENAI_BASE_URL`)
< the default branch's `.codegen.yml` < action inputs < the event (its task, and the settings
block of an issue or comment, or a dispatch's spec file). The base commit is ours to choose.

`.codegen.yml` chooses the commands that run, so it is read from the default branch's commit
(fetched from origin), never from the working tree or a pull request head: a fork or a PR
author could otherwise pick the commands that run with the workflow's secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codegen_ci.publish import remote
from codegen_ci.security.untrusted import Untrusted, clean_untrusted
from codegen_ci.sources.events import EventTask
from codegen_ci.sources.settings_blocks import clamp_limits, clamp_proof
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.spec.layers import (
    REPO_CONFIG_NAME,
    deep_merge,
    load_layer_file,
    parse_layer_text,
    resolve_spec,
)
from codegen_ci.spec.model import Limits, Spec, Validation, slugify
from codegen_ci.workspace import git


def resolve_event_spec(
    task: EventTask,
    settings: ActionSettings,
    root: Path,
    *,
    config_commit: str,
    base: str,
    notice: Callable[[str], None] = lambda _: None,
) -> Spec:
    """`config_commit`: the default branch's commit whose `.codegen.yml` counts; `base`: the
    commit the work starts from (the default branch, or a pull request's head). The event's
    own overrides may lower the repository's limits, never raise them (`notice` says so)."""
    layers: list[Mapping[str, Any]] = [
        settings.env_layer(),
        default_branch_config(root, config_commit),
        settings.spec_layer(),
    ]
    if task.task:
        layers.append({"task": task.task, "title": task.title})
    if task.spec_path:
        layers.append(load_layer_file(root / task.spec_path, is_spec=True))
    overrides, notices = clamp_limits(task.spec_overrides, _limits(layers))
    overrides, proof_notices = clamp_proof(overrides, _validation(layers))
    for text in notices + proof_notices:
        notice(text)
    layers += [overrides, {"git": {"base": base}}]
    where = task.spec_path or (f"#{task.issue_number}" if task.issue_number else "the event")
    return resolve_spec(*layers, name=where)


def default_branch_config(root: Path, commit: str) -> dict[str, Any]:
    """The validated `.codegen.yml` layer at `commit` ({} when the file is not there)."""
    blob = f"{commit}:{REPO_CONFIG_NAME}"
    if not git.ok(["cat-file", "-e", blob], root):
        return {}
    text = git.git(["show", blob], root)
    return parse_layer_text(text, f"{REPO_CONFIG_NAME} (default branch)", is_spec=False)


def _validation(layers: list[Mapping[str, Any]]) -> Validation:
    merged = deep_merge(*layers).get("validation") or {}
    try:
        return Validation.model_validate(merged)
    except ValidationError:
        return Validation()  # resolving the spec reports the problem, with its key


def _limits(layers: list[Mapping[str, Any]]) -> Limits:
    merged = deep_merge(*layers).get("limits") or {}
    try:
        return Limits.model_validate(merged)
    except ValidationError:
        return Limits()  # resolving the spec reports the problem, with its key


def branch_for(task: EventTask, title: Untrusted, spec: Spec, root: Path, token: str | None) -> str:
    """`codegen/<issue>-<slug>` for an issue, the one already on origin when a run made it
    before (so a re-run after a title edit still updates it); the spec's branch otherwise."""
    if task.issue_number is None:
        return spec.branch_name
    prefix = f"codegen/{task.issue_number}-"
    existing = sorted(remote.remote_branches(root, prefix + "*", token))
    if existing:
        return existing[0]
    return prefix + (slugify(title.raw_for("branch name"), 40) if title else spec.slug)


def issue_title(payload: Mapping[str, Any]) -> Untrusted:
    """The issue's (or pull request's) title as shown, one line; empty without an issue."""
    issue = payload.get("issue")
    if not isinstance(issue, Mapping):
        return Untrusted("")
    title = Untrusted(str(issue.get("title") or ""))
    return title.map(lambda text: " ".join(clean_untrusted(text).split()))
