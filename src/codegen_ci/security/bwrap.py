"""Bubblewrap mode: the argv that runs one command under `bwrap` (security/sandbox.py says
what it confines), and the repository's git config as a confined command may see it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_CREDENTIALS = re.compile(r"^\s*extraheader\s*=.*$", re.IGNORECASE | re.MULTILINE)
_USERINFO = re.compile(r"(://)[^/@\s]+@")


def bwrap_argv(
    bwrap: str,
    workdir: Path,
    *,
    network: bool,
    hidden: Sequence[Path],
    scratch: Path,
    checkout: Path | None,
    git_dir: Path | None,
    git_config: Path | None,
) -> list[str]:
    """Work in (and write only) `workdir` and `scratch`; `git_config` (credentials removed)
    is shown in place of the repository's own."""
    argv = [bwrap, "--unshare-all", *(["--share-net"] if network else []),
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/dev/shm"]  # fmt: skip  # noqa: S108 - inside the sandbox
    read_only = []  # empty and read-only: no message can be left there for later steps
    for path in hidden:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
            read_only += ["--remount-ro", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    if checkout is not None and checkout.is_dir():
        argv += ["--ro-bind", str(checkout), str(checkout)]
    if git_dir is not None and git_dir.is_dir():
        argv += ["--ro-bind", str(git_dir), str(git_dir)]
        if git_config is not None:
            argv += ["--ro-bind", str(git_config), str(git_dir / "config")]
    argv += ["--bind", str(workdir), str(workdir), "--bind", str(scratch), str(scratch)]
    if (workdir / ".git").is_file():
        argv += ["--ro-bind", str(workdir / ".git"), str(workdir / ".git")]
    return [*argv, *read_only, "--chdir", str(workdir), "--"]


def without_credentials(text: str) -> str:
    """A git config without tokens (actions/checkout leaves an auth header there; a remote's
    URL may carry `user:token@`)."""
    return _USERINFO.sub(r"\1", _CREDENTIALS.sub("", text))


def has_credentials(config: Path) -> bool:
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return without_credentials(text) != text
