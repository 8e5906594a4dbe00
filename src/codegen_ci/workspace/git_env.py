"""How our own git runs: which binary, with which config, and in which environment.

The git binary is resolved once, by absolute path, from the system's own directories first
(a `git` planted in a PATH directory later never runs). System and global config are ignored
(`GIT_CONFIG_NOSYSTEM`, and a global config of our own that only sets `safe.directory`), so
are replace refs (`GIT_NO_REPLACE_OBJECTS`), and nested repositories are never entered.
Per-call config (the push token's header above all) travels in the git process's environment
(`GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`), never on its command line.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.security.safe_env import is_hard_denied, is_secret_name

# Our calls never run the repository's hooks or ask for credentials; fsmonitor and other
# config-driven helpers are switched off because the repository's config is not ours to trust.
# The `ext::` transport runs an arbitrary command; no remote of ours ever needs it.
# Filter drivers stay on (git-lfs is one); `GitGuard` keeps a command from planting new ones.
SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "credential.helper=",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "protocol.ext.allow=never",
    "-c", "submodule.recurse=false",
    "-c", "diff.ignoreSubmodules=all",
    "-c", "status.submoduleSummary=false",
)  # fmt: skip
GIT_ENV = "CODEGEN_GIT"  # an explicit git binary; default: the system's, resolved at start-up
SYSTEM_GIT = ("/usr/bin/git", "/bin/git")
BOT_NAME = "codegen-ci"
BOT_EMAIL = "codegen-ci@users.noreply.github.com"


@functools.cache
def git_binary() -> str:
    """The git we run, by absolute path; resolved once (the CLI does it at start-up)."""
    found = os.environ.get(GIT_ENV) or next(
        (p for p in SYSTEM_GIT if os.access(p, os.X_OK)), None
    ) or shutil.which("git")  # fmt: skip
    if not found:
        raise GitError("git is not installed")
    return str(Path(found).absolute())


@functools.cache
def _global_config() -> str:
    """Our own global config: only `safe.directory` (a checkout mounted into a container
    belongs to another uid); the user's and the system's config never reach our git."""
    folder = Path(tempfile.mkdtemp(prefix="codegen-git-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "config"
    path.write_text("[safe]\n\tdirectory = *\n", encoding="utf-8")
    return str(path)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # Git needs none of our secrets (a push gets its token in its own environment only), and
    # the confined commands cannot see other processes' environments.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_")
        and not is_hard_denied(k)
        and (k == "SSH_AUTH_SOCK" or not is_secret_name(k))
    }
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", LC_ALL="C",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=_global_config(),
               GIT_NO_REPLACE_OBJECTS="1")  # fmt: skip
    env.setdefault("GIT_AUTHOR_NAME", BOT_NAME)
    env.setdefault("GIT_AUTHOR_EMAIL", BOT_EMAIL)
    env.setdefault("GIT_COMMITTER_NAME", BOT_NAME)
    env.setdefault("GIT_COMMITTER_EMAIL", BOT_EMAIL)
    if extra:
        env.update(extra)
    return env


def config_env(config: Sequence[str]) -> dict[str, str]:
    """`["-c", "k=v", ...]` as GIT_CONFIG_COUNT/KEY/VALUE variables (git 2.31+)."""
    pairs = [item.partition("=") for flag, item in zip(config[::2], config[1::2], strict=True)
             if flag == "-c"]  # fmt: skip
    if not pairs:
        return {}
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, _, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env
