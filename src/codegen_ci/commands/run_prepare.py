"""Before a run: its id, its output directory, its worktree on a new branch, the settings the
environment gives, and the secrets the redactor must know."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Spec, slugify
from codegen_ci.workspace import git
from codegen_ci.workspace.finalize import GENERATED_BY, task_trailer
from codegen_ci.workspace.worktree import Worktree, create_worktree, worktrees_root


def environment_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from the environment (lowest precedence above the built-in defaults)."""
    layer: dict[str, Any] = {}
    if environ.get("CODEGEN_MODEL"):
        layer["model"] = {"name": environ["CODEGEN_MODEL"]}
    return layer


def register_secrets() -> None:
    REDACTOR.add_from_env(os.environ)


def new_run_id(spec: Spec) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"{stamp}-{slugify(spec.slug, 24)}-{secrets.token_hex(2)}"


def default_output_dir(root: Path, run_id: str) -> Path:
    runner_temp = os.environ.get("RUNNER_TEMP")
    if os.environ.get("GITHUB_ACTIONS") == "true" and runner_temp:
        return Path(runner_temp) / "codegen" / run_id
    return git.common_dir(root) / "codegen" / "runs" / run_id


def prepare_worktree(
    root: Path, spec: Spec, run_id: str, *, branch: str | None = None, reset: bool = False
) -> Worktree:
    wanted = branch or spec.git.branch.replace("{slug}", spec.slug)
    name = wanted if reset else branch_for(root, wanted, spec)
    reset = reset or git.branch_exists(root, name)  # only an earlier run's branch of this task
    path = worktrees_root(root) / run_id
    try:
        worktree = create_worktree(root, path, branch=name, base=spec.git.base or "HEAD",
                                   protected=spec.protected_paths, reset_branch=reset)  # fmt: skip
    except BaseException:
        with contextlib.suppress(OSError):  # the run's private folder, still empty
            path.parent.rmdir()
        raise
    worktree.named = tuple(spec.outputs)
    return worktree


def branch_for(root: Path, wanted: str, spec: Spec) -> str:
    """`wanted`, `wanted-2`, ...: the first that an earlier run of this task left (to update)
    or that does not exist yet."""
    name, n = wanted, 1
    while git.branch_exists(root, name) and not rerun_branch(root, name, spec):
        n += 1
        name = f"{wanted}-{n}"
    return name


def rerun_branch(root: Path, name: str, spec: Spec) -> bool:
    """True when `name` is a branch an earlier run of the same task left (its tip is a
    codegen-ci commit whose `Codegen-task` trailer matches this task) and no worktree has it
    checked out: a re-run replaces it (the old tip stays in the branch's reflog) instead of
    adding `-2`, `-3`... A branch with anyone's own commit on top, or in use, is left alone
    and the run takes a suffixed name."""
    if not git.branch_exists(root, name):
        return False
    message = git.git(["log", "-1", "--format=%B", f"refs/heads/{name}", "--"], root, check=False)
    lines = message.splitlines()
    if GENERATED_BY not in lines or task_trailer(spec) not in lines:
        return False
    listing = git.git(["worktree", "list", "--porcelain"], root, check=False)
    return f"branch refs/heads/{name}" not in listing.splitlines()
