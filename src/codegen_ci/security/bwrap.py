"""Bubblewrap backend: the argv that runs one command under `bwrap` (security/sandbox.py says
what it confines), and the repository's git config as a confined command may see it."""

from __future__ import annotations

import re
from pathlib import Path

from codegen_ci.security.confinement import Confinement

_CREDENTIALS = re.compile(r"^\s*extraheader\s*=.*$", re.IGNORECASE | re.MULTILINE)
_USERINFO = re.compile(r"(://)[^/@\s]+@")


def bwrap_argv(bwrap: str, confinement: Confinement) -> list[str]:
    """The machine read-only; each hidden place an empty read-only tmpfs (or /dev/null for a
    file), with the read-only places shown again inside; the writable places bound
    read-write; replaced and frozen files read-only on top; own namespaces (network only if
    allowed), no capability, a new session."""
    c = confinement
    argv = [bwrap, "--unshare-all", *(["--share-net"] if c.network else []),
            "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/dev/shm"]  # fmt: skip  # noqa: S108 - inside the sandbox
    read_only = []  # empty and read-only: no message can be left there for later steps
    for path in c.hidden:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
            read_only += ["--remount-ro", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    for path in c.read_only:  # only what a hidden place covers: the rest is the read-only /
        if path.exists() and any(h == path or h in path.parents for h in c.hidden):
            argv += ["--ro-bind", str(path), str(path)]
    for source, target in c.replaced:
        if source.exists() and target.exists():
            argv += ["--ro-bind", str(source), str(target)]
    for path in c.writable:
        argv += ["--bind", str(path), str(path)]
    for path in c.frozen:
        if path.is_file():
            argv += ["--ro-bind", str(path), str(path)]
    return [*argv, *read_only, "--chdir", str(c.workdir), "--"]


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
