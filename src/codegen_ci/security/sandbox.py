"""Confinement for every command that runs repository code: the model's `run_command`, the
validation `setup`, `lint` and `test` commands, and the re-runs on the base commit.

Two mechanisms, one guarantee (SECURITY.md, docs/sandbox.md):
- **bwrap** (security/bwrap.py): own PID, IPC, UTS and network namespaces (network only if
  `validation.network` names the command's kind), no capability, `no_new_privs`, the
  machine's files read-only but for the workdir and the run's scratch directory (HOME,
  TMPDIR); secret places (security/sandbox_places.py) hidden, the repository's git config
  shown without credentials, the worktree's `.git` file read-only.
- **user** (security/user_mode.py, user_jail.py): where bwrap cannot create namespaces (a
  container under Docker's default seccomp profile: GitHub's Docker actions) and the tool
  is root, each command runs as an unprivileged user, with no capability, `no_new_privs`
  and a seccomp filter in place of the network namespace; the same places are kept from it
  by ownership and permission bits.

`CODEGEN_SANDBOX` (or the action's `sandbox` input) picks one: `auto` (default: bwrap, else
user mode when root), `bwrap`, `user`, or `off` (unconfined, never the default). When none
can be set up, `open_sandbox` fails closed with `SandboxUnavailable` (exit 3).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegen_ci.errors import InfraError, InputError
from codegen_ci.security import user_mode
from codegen_ci.security.bwrap import bwrap_argv, has_credentials, without_credentials
from codegen_ci.security.sandbox_places import hidden_places, unavailable

SANDBOX_ENV = "CODEGEN_SANDBOX"
BWRAP_ENV = "CODEGEN_BWRAP"  # an explicit bwrap binary; default: `bwrap` on PATH at start-up
OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})
AUTO = frozenset({"", "auto", "on", "true", "1", "yes"})
CACHE_VARS = ("GOCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache")
Kind = Literal["bwrap", "user", "off"]


class SandboxUnavailable(InfraError):
    """Confinement could not be set up, and nobody switched it off."""


@dataclass(frozen=True)
class Sandbox:
    """How this run confines its commands (`kind`), and what it needs to do so."""

    kind: Kind
    root: Path  # private: the sanitized git config; `root/rw` is the writable scratch
    git_dir: Path | None  # the repository's common git dir, shown read-only
    hidden: tuple[Path, ...] = ()
    checkout: Path | None = None  # the user's checkout, read-only (linked dependencies live there)
    bwrap: str | None = None
    user: user_mode.SandboxUser | None = None
    hold: user_mode.PermissionHold | None = None  # user mode: permission bits to give back

    @property
    def enabled(self) -> bool:
        return self.kind != "off"

    @property
    def scratch(self) -> Path:
        """Writable inside the sandbox: HOME, TMPDIR, JUnit and plugin files."""
        return self.root / "rw"

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        out = dict(env)
        if self.enabled:
            out.update(HOME=str(self.scratch / "home"), TMPDIR=str(self.scratch / "tmp"))
            if "RUNNER_TEMP" in out:  # the real one is hidden; reports written there still count
                out["RUNNER_TEMP"] = str(self.scratch / "runner-temp")
            for name in CACHE_VARS:  # a build cache elsewhere is read-only: one per run instead
                if name in out:
                    out[name] = str(self.scratch / "cache" / name.lower())
        if self.user is not None:  # the repository belongs to another uid: git must accept it
            home, original = self.scratch / "home", out.get("GIT_CONFIG_GLOBAL")
            out["GIT_CONFIG_GLOBAL"] = user_mode.git_config(home, original)
        return out

    def prefix(self, workdir: Path, *, network: bool) -> list[str]:
        """The argv that runs a command confined, working in (and writing only) `workdir`."""
        if self.bwrap is not None:
            config = self.root / "gitconfig"
            return bwrap_argv(self.bwrap, workdir, network=network, hidden=self.hidden,
                              scratch=self.scratch, checkout=self.checkout, git_dir=self.git_dir,
                              git_config=config if config.is_file() else None)  # fmt: skip
        if self.user is not None:  # what the tool wrote since the last command becomes theirs
            user_mode.hand_over(self.user, workdir, keep=[workdir / ".git"])
            user_mode.hand_over(self.user, self.scratch)
            return self.user.jail(network=network)
        return []

    def close(self) -> None:
        if self.hold is not None:
            self.hold.restore()
        shutil.rmtree(self.root, ignore_errors=True)


def open_sandbox(
    environ: Mapping[str, str],
    *,
    git_dir: Path | None,
    checkout: Path | None = None,
    workdirs: Sequence[Path] = (),
) -> Sandbox:
    """Set up confinement for one run and prove it works, or fail closed. `workdirs`: where
    commands will work (user mode keeps their hidden ancestors enterable)."""
    # The action's `sandbox` input arrives as INPUT_SANDBOX; the variable wins when both are set.
    mode = (environ.get(SANDBOX_ENV) or environ.get("INPUT_SANDBOX") or "").strip().lower()
    if mode not in OFF | AUTO | {"bwrap", "user"}:
        raise InputError(f"{SANDBOX_ENV} / sandbox input: unknown value {mode!r} "
                          "(auto, bwrap, user or off)")  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="codegen-sandbox-"))
    for sub in ("rw/home", "rw/tmp", "rw/runner-temp"):
        (root / sub).mkdir(parents=True)
    if mode in OFF:
        print(f"codegen-ci: WARNING: {SANDBOX_ENV}=off: commands run UNCONFINED, with the "
              "tool's user, files and network", file=sys.stderr)  # fmt: skip
        return Sandbox("off", root, git_dir, (), checkout)
    hidden = hidden_places(environ)
    try:
        if mode == "user":
            return _open_user(environ, root, git_dir, hidden, checkout, workdirs)
        try:
            return _open_bwrap(environ, root, git_dir, hidden, checkout)
        except SandboxUnavailable as exc:
            if mode == "bwrap":
                raise
            return _fall_back(exc, environ, root, git_dir, hidden, checkout, workdirs)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _open_bwrap(environ: Mapping[str, str], root: Path, git_dir: Path | None,
                hidden: tuple[Path, ...], checkout: Path | None) -> Sandbox:  # fmt: skip
    bwrap = environ.get(BWRAP_ENV) or shutil.which("bwrap") or ""
    if not bwrap or not os.access(bwrap, os.X_OK) or Path(bwrap).is_dir():
        raise SandboxUnavailable(unavailable(f"bubblewrap ({bwrap or 'bwrap'}) is not installed"))
    config = git_dir / "config" if git_dir else None
    if config is not None and config.is_file():
        text = config.read_text(encoding="utf-8", errors="replace")
        (root / "gitconfig").write_text(without_credentials(text), encoding="utf-8")
    sandbox = Sandbox("bwrap", root, git_dir, hidden, checkout, bwrap=str(Path(bwrap).absolute()))
    probe = root / "rw" / "tmp"
    try:
        proc = subprocess.run(
            [*sandbox.prefix(probe, network=False), "/bin/sh", "-c", "exit 0"],
            capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        problem = proc.stderr.decode("utf-8", errors="replace").strip()[-500:]
        failed = proc.returncode != 0
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed, problem = True, str(exc)
    if failed:
        raise SandboxUnavailable(unavailable(f"bubblewrap could not start a sandbox: {problem}"))
    return sandbox


def _fall_back(exc: SandboxUnavailable, environ: Mapping[str, str], root: Path,
               git_dir: Path | None, hidden: tuple[Path, ...], checkout: Path | None,
               workdirs: Sequence[Path]) -> Sandbox:  # fmt: skip
    """bwrap failed in `auto` mode: user mode, when the tool is root."""
    first = exc.message.split(". codegen-ci runs", 1)[0]
    if os.geteuid() != 0:
        raise exc
    try:
        sandbox = _open_user(environ, root, git_dir, hidden, checkout, workdirs)
    except SandboxUnavailable as second:
        raise SandboxUnavailable(f"{first}; {second.message}") from None
    assert sandbox.user is not None
    print(
        f"codegen-ci: {first}; commands run as the unprivileged user {sandbox.user.name} "
        f"(uid {sandbox.user.uid}) instead (user mode, docs/sandbox.md)",
        file=sys.stderr,
    )
    return sandbox


def _open_user(environ: Mapping[str, str], root: Path, git_dir: Path | None,
               hidden: tuple[Path, ...], checkout: Path | None,
               workdirs: Sequence[Path]) -> Sandbox:  # fmt: skip
    if os.geteuid() != 0:
        raise SandboxUnavailable(unavailable("user mode needs codegen-ci to run as root"))
    places = list(hidden)
    if git_dir is not None and has_credentials(git_dir / "config"):
        places.append(git_dir / "config")  # git inside commands then cannot read it
    owned = [p for p in (git_dir, checkout) if p is not None]
    try:
        user, hold = user_mode.prepare(environ.get(user_mode.USER_ENV), root, places=places,
                                       not_owned=owned, workdirs=workdirs)  # fmt: skip
    except user_mode.UserModeError as exc:
        raise SandboxUnavailable(unavailable(f"user mode is not available: {exc}")) from None
    return Sandbox("user", root, git_dir, hidden, checkout, user=user, hold=hold)
