"""Confinement for every command that runs repository code: the model's `run_command`, the
validation `setup`, `lint` and `test` commands, and the re-runs on the base commit.

Two backends, one guarantee (SECURITY.md, docs/sandbox.md), both built from one
`Confinement` (security/confinement.py: explicit lists of writable, read-only and hidden
places, and the network):
- **bwrap** (security/bwrap.py): own PID, IPC, UTS and network namespaces (network only if
  `validation.network` names the command's kind), no capability, `no_new_privs`, the
  machine's files read-only but for the workdir and the run's scratch directory (HOME,
  TMPDIR); HOME and the other hidden places (security/sandbox_places.py) empty, with the
  toolchains in them shown read-only; the repository's git config shown without credentials,
  the worktree's `.git` file read-only.
- **landlock** (security/landlock.py, landlock_exec.py): where bubblewrap cannot start (no
  package, Ubuntu's AppArmor rule, a Docker container), the kernel's Landlock and a seccomp
  filter applied by a launcher before exec: reads beneath an allowlist (system directories,
  toolchains, the checkout, git directory and dependency folders), writes beneath the workdir
  and the scratch directory only, no network, no ptrace of and (ABI 6) no signal to anything
  outside, `no_new_privs`, no capability.

Each is set up, and proven by one command, in security/sandbox_setup.py.
`CODEGEN_SANDBOX` (or the action's `sandbox` input) picks one: `auto` (default: bwrap where it
starts, else landlock), `bwrap`, `landlock`, or `off` (unconfined, never the default). When
none can be set up, `open_sandbox` fails closed with `SandboxUnavailable` (exit 3).
"""

from __future__ import annotations

import itertools
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from codegen_ci.errors import InputError
from codegen_ci.security import guarded_read
from codegen_ci.security.bwrap import bwrap_argv
from codegen_ci.security.confinement import Confinement
from codegen_ci.security.landlock import landlock_argv
from codegen_ci.security.sandbox_places import (
    SandboxUnavailable,
    hidden_places,
    outermost,
    reachable_engine_socket,
    toolchain_places,
)
from codegen_ci.security.sandbox_setup import (
    Setup,
    fail_closed,
    sanitise_git_config,
    start_bwrap,
    start_landlock,
)

SANDBOX_ENV = "CODEGEN_SANDBOX"
OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})
AUTO = frozenset({"", "auto", "on", "true", "1", "yes"})
CACHE_VARS = ("GOCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache")
HOME_FILES = ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME")  # dropped when hidden: HOME's are used
SCRATCH_DIRS = ("home", "tmp", "runner-temp")
# Per-user package folders outside HOME that interpreters load code from at start-up: off for
# every command (HOME itself is fresh per phase; see `new_phase`).
NO_USER_SITE = {"PYTHONNOUSERSITE": "1"}
Kind = Literal["bwrap", "landlock", "off"]


@dataclass(frozen=True)
class Sandbox:
    """How this run confines its commands (`kind`), and what it needs to do so."""

    kind: Kind
    root: Path  # private: the sanitised git config; `root/rw` is the writable scratch
    git_dir: Path | None  # the repository's common git dir, shown read-only
    hidden: tuple[Path, ...] = ()
    checkout: Path | None = None  # the user's checkout, read-only (linked dependencies live there)
    toolchains: tuple[Path, ...] = ()  # shown read-only inside the hidden places
    dependencies: tuple[Path, ...] = ()  # the repository's dependency folders, read-only
    bwrap: str | None = None
    landlock_abi: int | None = None  # the kernel's, when kind is landlock
    unix_stream: bool = True  # landlock: False where a container engine's socket is reachable
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
        binds only the workdir and the scratch writable; Landlock lists it among the
        read-only places in `confinement`)."""
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
            for name in HOME_FILES:  # the user's git config (tokens in insteadOf) stays hidden
                if name in out and self._hides(Path(out[name])):
                    del out[name]
        return out

    def _hides(self, path: Path) -> bool:
        real = path.resolve()
        return any(h == real or h in real.parents for h in self.hidden)

    def confinement(
        self,
        workdir: Path,
        *,
        network: bool,
        writable: Sequence[Path] = (),
        read_only: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
    ) -> Confinement:
        """What a command working in `workdir` may touch: the workdir and the scratch
        directory writable (plus `writable`), the toolchains, checkout, git directory and
        dependency folders read-only (plus `read_only`), the run's hidden places (plus
        `hidden`) kept."""
        shown = [*self.toolchains, *self.dependencies, self.tool_dir, *read_only]
        shown += [p for p in (self.checkout, self.git_dir) if p is not None]
        config = self.root / "gitconfig"
        replaced = ((config, self.git_dir / "config"),) if self.git_dir and config.is_file() else ()
        return Confinement(workdir, (workdir, self.scratch, *writable), tuple(shown),
                           (*self.hidden, *hidden), replaced, (workdir / ".git",),
                           network)  # fmt: skip

    def prefix(self, workdir: Path, *, network: bool) -> list[str]:
        """The argv that runs a command confined, working in (and writing only) `workdir`."""
        return self.wrap(self.confinement(workdir, network=network))

    def wrap(self, confinement: Confinement) -> list[str]:
        """The argv prefix of this run's backend for `confinement` ([] when off)."""
        if self.kind == "bwrap" and self.bwrap is not None:
            return bwrap_argv(self.bwrap, confinement)
        if self.kind == "landlock":
            return landlock_argv(confinement, unix_stream=self.unix_stream)
        return []

    def close(self) -> None:
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
    dependencies: Sequence[Path] = (),
    private: Sequence[Path] = (),
) -> Sandbox:
    """Set up confinement for one run and prove it works, or fail closed. `dependencies`: the
    repository's dependency folders commands may read (beside the checkout); `private`: the
    run's own files (its output directory), hidden like HOME."""
    # The action's `sandbox` input arrives as INPUT_SANDBOX; the variable wins when both are set.
    mode = (environ.get(SANDBOX_ENV) or environ.get("INPUT_SANDBOX") or "").strip().lower()
    if mode not in OFF | AUTO | {"bwrap", "landlock"}:
        raise InputError(f"{SANDBOX_ENV} / sandbox input: unknown value {mode!r} "
                          "(auto, bwrap, landlock or off)")  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="codegen-sandbox-"))
    for sub in (*(f"rw/{d}" for d in SCRATCH_DIRS), "tool"):
        (root / sub).mkdir(parents=True)
    (root / "tool").chmod(0o755)
    if mode in OFF:
        print(f"codegen-ci: WARNING: {SANDBOX_ENV}=off: commands run UNCONFINED, with the "
              "tool's user, files and network", file=sys.stderr)  # fmt: skip
        return Sandbox("off", root, git_dir, (), checkout)
    hidden = outermost([*hidden_places(environ), *private])
    # a toolchain never shows a hidden place whole (a PATH entry that is HOME or above it)
    toolchains = tuple(t for t in toolchain_places(environ)
                       if not any(t == h or t in h.parents for h in hidden))  # fmt: skip
    setup = Setup(environ, root, git_dir, checkout, hidden, toolchains,
                  tuple(dependencies))  # fmt: skip
    base = Sandbox("off", root, git_dir, setup.hidden, checkout, setup.toolchains,
                   tuple(dependencies))  # fmt: skip
    try:
        sanitise_git_config(setup)
        return _start(mode, setup, base)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _start(mode: str, setup: Setup, base: Sandbox) -> Sandbox:
    problems = []
    if mode != "landlock":
        try:
            return replace(base, kind="bwrap", bwrap=start_bwrap(setup))
        except SandboxUnavailable as exc:
            if mode == "bwrap":
                raise fail_closed([exc.message]) from None
            problems.append(exc.message)
    unix_stream = reachable_engine_socket() is None
    try:
        abi = start_landlock(setup, unix_stream=unix_stream)
    except SandboxUnavailable as exc:
        raise fail_closed([*problems, exc.message]) from None
    if problems:
        print(f"codegen-ci: {problems[0]}; commands are confined with Landlock (ABI {abi}) "
              "instead (docs/sandbox.md)", file=sys.stderr)  # fmt: skip
    return replace(base, kind="landlock", landlock_abi=abi, unix_stream=unix_stream)
