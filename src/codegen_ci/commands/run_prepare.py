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
from codegen_ci.workspace.create import create_worktree, unique_branch, worktrees_root
from codegen_ci.workspace.worktree import Worktree


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
    name = wanted if reset else unique_branch(root, wanted)
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
