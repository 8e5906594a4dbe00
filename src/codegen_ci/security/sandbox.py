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

Each is set up, and proven by one command, in security/sandbox_setup.py.
`CODEGEN_SANDBOX` (or the action's `sandbox` input) picks one: `auto` (default: bwrap, else
user mode when root), `bwrap`, `user`, or `off` (unconfined, never the default). When none
can be set up, `open_sandbox` fails closed with `SandboxUnavailable` (exit 3).
"""

from __future__ import annotations

import itertools
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from codegen_ci.errors import InputError
from codegen_ci.security import guarded_read, user_access
from codegen_ci.security.bwrap import bwrap_argv
from codegen_ci.security.sandbox_places import SandboxUnavailable, hidden_places
from codegen_ci.security.sandbox_setup import Setup, fall_back, start_bwrap, start_user

SANDBOX_ENV = "CODEGEN_SANDBOX"
OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})
AUTO = frozenset({"", "auto", "on", "true", "1", "yes"})
CACHE_VARS = ("GOCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache")
SCRATCH_DIRS = ("home", "tmp", "runner-temp")
# Per-user package folders outside HOME that interpreters load code from at start-up: off for
# every command (HOME itself is fresh per phase; see `new_phase`).
NO_USER_SITE = {"PYTHONNOUSERSITE": "1"}
Kind = Literal["bwrap", "user", "off"]


@dataclass(frozen=True)
class Sandbox:
    """How this run confines its commands (`kind`), and what it needs to do so."""

    kind: Kind
    root: Path  # private: the sanitized git config; `root/rw` is the writable scratch
    git_dir: Path | None  # the repository's common git dir, shown read-only
    hidden: tuple[Path, ...] = ()
    checkout: Path | None = None  # the user's checkout, read-only (linked dependencies live there)
    bwrap: str | None = None
    user: user_access.SandboxUser | None = None
    hold: user_access.PermissionHold | None = None  # user mode: permission bits to give back
    _phases: itertools.count[int] = field(default_factory=itertools.count, compare=False)

    @property
    def enabled(self) -> bool:
        return self.kind != "off"

    @property
    def scratch(self) -> Path:
        """Writable inside the sandbox: HOME, TMPDIR, caches and each command's JUnit folder.
        The tool never reads it but through the guarded reader (security/guarded_read.py),
        and never writes into it but to make a fresh folder (`command_folder`)."""
        return self.root / "rw"

    @property
    def tool_dir(self) -> Path:
        """The tool's own files that commands need to read, never write: the pytest plugin and
        each run's list of test ids. Outside the scratch, so read-only in every mode (bwrap
        binds only the workdir and the scratch writable; user mode leaves it root's, 0755).
        A backend that allowlists what commands may read must let them read it."""
        return self.root / "tool"

    def command_folder(self, tag: str) -> Path:
        """A new, empty folder in the scratch for one command to write (its JUnit report and
        plugin status), made without following anything a command left there."""
        return guarded_read.make_fresh_dir(self.scratch, f"{tag}-{secrets.token_hex(4)}")

    def new_phase(self) -> None:
        """Start a phase (the pre-flight, a validation round, the base-commit re-runs) with a
        fresh scratch: HOME, TMPDIR and caches start over, so nothing an earlier command left
        there (a `.pth`, a `usercustomize`, a shell profile, a poisoned cache) runs again. What
        `setup` installed during the pre-flight, on the untouched code, is the one thing kept:
        each phase starts from a copy of it (`keep_setup_state`)."""
        n = next(self._phases)
        old = self.scratch
        if old.exists():
            gone = self.root / f"old-{n}"
            old.rename(gone)
            shutil.rmtree(gone, ignore_errors=True)
        seed = self.root / "seed"
        if seed.is_dir() and not _copy(seed, old):
            print("codegen-ci: WARNING: could not copy what setup installed into this phase's "
                  "fresh HOME; it starts empty", file=sys.stderr)  # fmt: skip
        old.mkdir(exist_ok=True)
        for sub in SCRATCH_DIRS:
            (old / sub).mkdir(exist_ok=True)

    def keep_setup_state(self) -> None:
        """Keep what `setup` left in the scratch (on the untouched code, before any model
        command ran) as the start of every later phase."""
        seed = self.root / "seed"
        # Owned by the tool (not by user mode's sandbox user, who could then change it).
        if not seed.exists() and not _copy(self.scratch, seed, "--no-preserve=ownership"):
            shutil.rmtree(seed, ignore_errors=True)  # later phases start empty instead

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        out = {**dict(env), **NO_USER_SITE}
        if self.enabled:
            out.update(HOME=str(self.scratch / "home"), TMPDIR=str(self.scratch / "tmp"))
            if "RUNNER_TEMP" in out:  # the real one is hidden; reports written there still count
                out["RUNNER_TEMP"] = str(self.scratch / "runner-temp")
            for name in CACHE_VARS:  # a build cache elsewhere is read-only: one per run instead
                if name in out:
                    out[name] = str(self.scratch / "cache" / name.lower())
        if self.user is not None:  # the repository belongs to another uid: git must accept it
            # In the private root (reachable, not writable, by the sandbox user), not in the
            # scratch HOME: it outlives each phase's fresh scratch and no command changes it.
            original = out.get("GIT_CONFIG_GLOBAL")
            out["GIT_CONFIG_GLOBAL"] = user_access.git_config(self.root, original)
        return out

    def prefix(self, workdir: Path, *, network: bool) -> list[str]:
        """The argv that runs a command confined, working in (and writing only) `workdir`.
        Call it right before the command starts: in user mode it also hands `workdir` and the
        scratch directory to the sandbox user (files the tool wrote since become theirs)."""
        if self.bwrap is not None:
            config = self.root / "gitconfig"
            return bwrap_argv(self.bwrap, workdir, network=network, hidden=self.hidden,
                              scratch=self.scratch, checkout=self.checkout, git_dir=self.git_dir,
                              git_config=config if config.is_file() else None)  # fmt: skip
        if self.user is not None:  # what the tool wrote since the last command becomes theirs
            user_access.hand_over(self.user, workdir, keep=[workdir / ".git"])
            user_access.hand_over(self.user, self.scratch)
            return self.user.jail(network=network)
        return []

    def close(self) -> None:
        if self.hold is not None:
            self.hold.restore()
        shutil.rmtree(self.root, ignore_errors=True)


def _copy(source: Path, target: Path, *options: str) -> bool:
    """`cp -a`: symlinks copied as symlinks (nothing followed), modes (and owners) kept."""
    try:
        proc = subprocess.run(["cp", "-a", "--reflink=auto", *options, "--", str(source),
                               str(target)],
                              capture_output=True, check=False, timeout=600)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    if proc.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
    return proc.returncode == 0


def open_sandbox(
    environ: Mapping[str, str],
    *,
    git_dir: Path | None,
    checkout: Path | None = None,
    workdirs: Sequence[Path] = (),
    private: Sequence[Path] = (),
) -> Sandbox:
    """Set up confinement for one run and prove it works, or fail closed. `workdirs`: where
    commands will work (user mode keeps their hidden ancestors enterable); `private`: the
    run's own files (its output directory), which user mode also keeps from commands."""
    # The action's `sandbox` input arrives as INPUT_SANDBOX; the variable wins when both are set.
    mode = (environ.get(SANDBOX_ENV) or environ.get("INPUT_SANDBOX") or "").strip().lower()
    if mode not in OFF | AUTO | {"bwrap", "user"}:
        raise InputError(f"{SANDBOX_ENV} / sandbox input: unknown value {mode!r} "
                          "(auto, bwrap, user or off)")  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="codegen-sandbox-"))
    for sub in (*(f"rw/{d}" for d in SCRATCH_DIRS), "tool"):
        (root / sub).mkdir(parents=True)
    (root / "tool").chmod(0o755)
    if mode in OFF:
        print(f"codegen-ci: WARNING: {SANDBOX_ENV}=off: commands run UNCONFINED, with the "
              "tool's user, files and network", file=sys.stderr)  # fmt: skip
        return Sandbox("off", root, git_dir, (), checkout)
    setup = Setup(environ, root, git_dir, checkout, hidden_places(environ), workdirs, private)
    try:
        if mode != "user":
            try:
                bwrap = start_bwrap(setup)
                return Sandbox("bwrap", root, git_dir, setup.hidden, checkout, bwrap=bwrap)
            except SandboxUnavailable as exc:
                if mode == "bwrap":
                    raise
                user, hold = fall_back(exc, setup)
        else:
            user, hold = start_user(setup)
        return Sandbox("user", root, git_dir, setup.hidden, checkout, user=user, hold=hold)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
