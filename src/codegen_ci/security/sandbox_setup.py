"""Setting up each sandbox mode for one run (security/sandbox.py picks the mode): bubblewrap,
proven by one command started the way every command will be; user mode, with the places its
user must not read held and one command proven to run as that user; and the fall-back from
the first to the second in `auto` mode, which only root can take."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.security import user_mode
from codegen_ci.security.bwrap import bwrap_argv, has_credentials, without_credentials
from codegen_ci.security.sandbox_places import SandboxUnavailable, unavailable
from codegen_ci.security.user_access import PermissionHold, SandboxUser, UserModeError

BWRAP_ENV = "CODEGEN_BWRAP"  # an explicit bwrap binary; default: `bwrap` on PATH at start-up


@dataclass(frozen=True)
class Setup:
    """What one run's confinement is set up from (see `open_sandbox`)."""

    environ: Mapping[str, str]
    root: Path
    git_dir: Path | None
    checkout: Path | None
    hidden: tuple[Path, ...]
    workdirs: Sequence[Path]
    private: Sequence[Path]


def start_bwrap(setup: Setup) -> str:
    """The bwrap binary, proven to start a sandbox like the commands' here."""
    bwrap = setup.environ.get(BWRAP_ENV) or shutil.which("bwrap") or ""
    if not bwrap or not os.access(bwrap, os.X_OK) or Path(bwrap).is_dir():
        raise SandboxUnavailable(unavailable(f"bubblewrap ({bwrap or 'bwrap'}) is not installed"))
    config = setup.git_dir / "config" if setup.git_dir else None
    if config is not None and config.is_file():
        text = config.read_text(encoding="utf-8", errors="replace")
        (setup.root / "gitconfig").write_text(without_credentials(text), encoding="utf-8")
    bwrap = str(Path(bwrap).absolute())
    probe = setup.root / "rw" / "tmp"
    config = setup.root / "gitconfig"
    argv = bwrap_argv(bwrap, probe, network=False, hidden=setup.hidden, scratch=setup.root / "rw",
                      checkout=setup.checkout, git_dir=setup.git_dir,
                      git_config=config if config.is_file() else None)  # fmt: skip
    try:
        proc = subprocess.run(
            [*argv, "/bin/sh", "-c", "exit 0"],
            capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        problem = proc.stderr.decode("utf-8", errors="replace").strip()[-500:]
        failed = proc.returncode != 0
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed, problem = True, str(exc)
    if failed:
        raise SandboxUnavailable(unavailable(f"bubblewrap could not start a sandbox: {problem}"))
    return bwrap


def fall_back(exc: SandboxUnavailable, setup: Setup) -> tuple[SandboxUser, PermissionHold]:
    """bwrap failed in `auto` mode: user mode, when the tool is root."""
    first = exc.message.split(". codegen-ci runs", 1)[0]
    if os.geteuid() != 0:
        raise exc
    try:
        user, hold = start_user(setup)
    except SandboxUnavailable as second:
        raise SandboxUnavailable(f"{first}; {second.message}") from None
    print(
        f"codegen-ci: {first}; commands run as the unprivileged user {user.name} "
        f"(uid {user.uid}) instead (user mode, docs/sandbox.md)",
        file=sys.stderr,
    )
    return user, hold


def start_user(setup: Setup) -> tuple[SandboxUser, PermissionHold]:
    """The sandbox user, with the places it must not read held, proven by one command."""
    if os.geteuid() != 0:
        raise SandboxUnavailable(unavailable("user mode needs codegen-ci to run as root"))
    git_dir = setup.git_dir
    places = [*setup.hidden, *setup.private]
    if git_dir is not None and has_credentials(git_dir / "config"):
        places.append(git_dir / "config")  # git inside commands then cannot read it
    owned = [p for p in (git_dir, setup.checkout) if p is not None]
    try:
        user, hold = user_mode.prepare(setup.environ.get(user_mode.USER_ENV), setup.root,
                                       places=places, not_owned=owned,
                                       workdirs=setup.workdirs)  # fmt: skip
    except UserModeError as exc:
        raise SandboxUnavailable(unavailable(f"user mode is not available: {exc}")) from None
    return user, hold
