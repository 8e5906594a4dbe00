"""Setting up a sandbox backend for one run (security/sandbox.py picks it): bubblewrap or
Landlock, each proven by one command started the way every command will be, and what `auto`
says when it passes from the first to the second."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.security.bwrap import bwrap_argv, has_credentials, without_credentials
from codegen_ci.security.confinement import Confinement
from codegen_ci.security.landlock import kernel_abi, landlock_argv
from codegen_ci.security.sandbox_places import SandboxUnavailable, unavailable

BWRAP_ENV = "CODEGEN_BWRAP"  # an explicit bwrap binary; default: `bwrap` on PATH at start-up


@dataclass(frozen=True)
class Setup:
    """What one run's confinement is set up from (see `open_sandbox`)."""

    environ: Mapping[str, str]
    root: Path
    git_dir: Path | None
    checkout: Path | None
    hidden: tuple[Path, ...]
    toolchains: tuple[Path, ...]
    dependencies: Sequence[Path] = ()

    def probe(self) -> Confinement:
        """A confinement like a command's, working in the scratch directory."""
        read_only = [*self.toolchains, *self.dependencies]
        read_only += [p for p in (self.checkout, self.git_dir) if p is not None]
        config = self.root / "gitconfig"
        replaced = ((config, self.git_dir / "config"),) if self.git_dir and config.is_file() else ()
        return Confinement(self.root / "rw" / "tmp", (self.root / "rw",), tuple(read_only),
                           self.hidden, replaced)  # fmt: skip


def sanitise_git_config(setup: Setup) -> None:
    """The repository's config without credentials, for commands to see in its place; none
    when it holds none (then commands read the real one)."""
    config = setup.git_dir / "config" if setup.git_dir else None
    if config is not None and has_credentials(config):
        text = config.read_text(encoding="utf-8", errors="replace")
        (setup.root / "gitconfig").write_text(without_credentials(text), encoding="utf-8")


def start_bwrap(setup: Setup) -> str:
    """The bwrap binary, proven to start a sandbox like the commands' here."""
    bwrap = setup.environ.get(BWRAP_ENV) or shutil.which("bwrap") or ""
    if not bwrap or not os.access(bwrap, os.X_OK) or Path(bwrap).is_dir():
        raise SandboxUnavailable(f"bubblewrap ({bwrap or 'bwrap'}) is not installed")
    bwrap = str(Path(bwrap).absolute())
    problem = _prove(bwrap_argv(bwrap, setup.probe()))
    if problem is not None:
        raise SandboxUnavailable(f"bubblewrap could not start a sandbox: {problem}")
    return bwrap


def start_landlock(setup: Setup, *, unix_stream: bool) -> int:
    """The kernel's Landlock ABI, proven by one command confined with it."""
    abi = kernel_abi()
    if abi < 1:
        raise SandboxUnavailable("this kernel has no Landlock (Linux 5.13 or later, with "
                                 "`landlock` in /sys/kernel/security/lsm)")  # fmt: skip
    problem = _prove(landlock_argv(setup.probe(), unix_stream=unix_stream))
    if problem is not None:
        raise SandboxUnavailable(f"Landlock could not confine a command: {problem}")
    return abi


def _prove(argv: list[str]) -> str | None:
    """None when `/bin/sh -c 'exit 0'` ran under `argv`, else what went wrong."""
    try:
        proc = subprocess.run([*argv, "/bin/sh", "-c", "exit 0"], capture_output=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode("utf-8", errors="replace").strip()[-500:] or f"exit {proc.returncode}"


def fail_closed(problems: Sequence[str]) -> SandboxUnavailable:
    return SandboxUnavailable(unavailable("; ".join(problems)))
