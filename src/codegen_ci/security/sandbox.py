"""Confinement for every command that runs repository code: the model's `run_command`, the
validation `setup`, `lint` and `test` commands, and the re-runs on the base commit.

Two backends, one guarantee (SECURITY.md, docs/sandbox.md), both built from one
`Confinement` (security/confinement.py: explicit lists of writable, read-only and hidden
places, and the network):
- **bwrap** (security/bwrap.py): own PID, IPC, UTS and network namespaces (network only if
  `validation.network` names the command's kind), no capability, `no_new_privs`, the
  machine's files read-only but for the workdir and the run's scratch directory (HOME,
  TMPDIR); HOME, `/tmp`, `/var/tmp` and the other hidden places empty, with the toolchains in
  them shown read-only, the named sockets outside covered; the repository's git config shown
  without credentials, the worktree's `.git` file read-only; the seccomp filter of
  security/landlock_exec.py, loaded by that launcher started inside bubblewrap after its
  mounts (`start_bwrap_inside`), with the metadata and connect() guard and a Landlock layer
  for write rights (no write into a named pipe of a read-only place; no connect() to a
  named socket outside the writable places, whenever it appeared).
- **landlock** (security/landlock.py, and its launcher security/landlock_exec.py): where
  bubblewrap cannot start (no package, Ubuntu's AppArmor rule, a Docker container), the
  kernel's Landlock and a seccomp filter applied by a launcher before exec: reads beneath an
  allowlist (system directories, toolchains, the checkout, git directory and dependency
  folders), writes beneath the workdir and the scratch directory only, no network (no inet
  socket at all), no ptrace of and (ABI 6) no signal to anything outside, `no_new_privs`, no
  capability; the metadata calls Landlock does not cover (chmod, chown, utime, xattrs) and
  connect() and a datagram's send to an address answered by the launcher's guard
  (security/metadata_guard.py): a named Unix socket beneath the writable places only.

What every backend keeps from confined commands (hidden): the user's whole HOME (an
allowlist: no credential file is readable whatever its name), the Actions runner's own
directory (its registration and credentials) and work directory (`_temp`, `_actions`,
`_diag`), RUNNER_TEMP, the GitHub file-command directories, container-engine sockets and the
machine's secrets (`/run/secrets`, `/etc/ssl/private`, `/root`, ...: security/secret_places.py).
Shown again, read-only, from inside those: the toolchains commands need (`toolchain_places`:
the table in security/toolchains.py, `~/.local/bin` when it is on PATH, the runner's tool
cache, a virtualenv or a `bin` directory on PATH, the tool's own interpreter), linked from the
scratch HOME and named in RUSTUP_HOME, CARGO_HOME, GOMODCACHE...; Go's build cache copied warm
into each phase, and jest's cache in TMPDIR as the pre-flight left it (security/warm_caches.py).

`CODEGEN_SANDBOX` (or the action's `sandbox` input) picks a backend: `auto` (default: bwrap
where it starts, else landlock), `bwrap`, `landlock`, or `off` (unconfined, never the
default). Each is set up, and proven by one command started the way every command will be,
before the run uses it. When none can be set up, `open_sandbox` fails closed with
`SandboxUnavailable` (exit 3), saying what to install or enable.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import py_compile
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from codegen_ci.errors import InfraError, InputError
from codegen_ci.security import guarded_read
from codegen_ci.security.bwrap import (
    Inside,
    bwrap_argv,
    devices_are_ours,
    has_credentials,
    vanished_place,
    without_credentials,
)
from codegen_ci.security.confinement import Confinement, beneath, within
from codegen_ci.security.landlock import LAUNCHER, kernel_abi, landlock_argv
from codegen_ci.security.secret_places import secret_places
from codegen_ci.security.toolchains import (
    HOME_TOOLCHAINS,
    TOOLCHAIN_PARTS,
    TOOLCHAIN_VARS,
    furnish_home,
    toolchain_env,
)
from codegen_ci.security.warm_caches import (
    drop_tmp_caches,
    keep_tmp_caches,
    save_caches,
    scratch_env,
    seed_scratch,
    seed_tmp_caches,
    user_caches,
)

SANDBOX_ENV = "CODEGEN_SANDBOX"
OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})
AUTO = frozenset({"", "auto", "on", "true", "1", "yes"})
CACHE_VARS = ("GOCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache")
HOME_FILES = ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME")  # dropped when hidden: HOME's are used
# git's system config (`GIT_CONFIG_SYSTEM`, else /etc/gitconfig): when it holds credentials it is
# hidden, and commands' git reads a copy without them from the tool's folder (`GIT_CONFIG_SYSTEM`).
SYSTEM_GITCONFIG = "/etc/gitconfig"
SYSTEM_GITCONFIG_COPY = "system-gitconfig"
SCRATCH_DIRS = ("home", "tmp", "runner-temp")
# Per-user package folders outside HOME that interpreters load code from at start-up: off for
# every command (HOME itself is fresh per phase; see `new_phase`).
NO_USER_SITE = {"PYTHONNOUSERSITE": "1"}
Kind = Literal["bwrap", "landlock", "off"]
BWRAP_ENV = "CODEGEN_BWRAP"  # an explicit bwrap binary; default: `bwrap` on PATH at start-up

# What every backend hides, and what it shows again from inside (see the module docstring).
FILE_COMMAND_VARS = (
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_STATE",
)
SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus",
    "/run/user",
    "/var/run/dbus",
)
ENGINE_SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
RUNNER_PROGRAMS = ("Runner.Worker", "Runner.Listener")
PROC_NET_UNIX = "/proc/net/unix"  # every Unix socket bound in this network namespace


class SandboxUnavailable(InfraError):
    """Confinement could not be set up, and nobody switched it off (exit 3)."""


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
    sockets: tuple[Path, ...] = ()  # named sockets outside (`outside_sockets`)
    unix_sockets: bool = True  # landlock: False where an abstract socket outside is reachable
    abstract_sockets: bool = False  # an abstract socket listens in the host's namespace
    bwrap_inside: Inside | None = None  # bwrap: the launcher inside (`start_bwrap_inside`)
    gaps: tuple[str, ...] = ()  # what this run's confinement leaves open (`GAPS`)
    home: Path | None = None  # the user's HOME: its toolchains are linked from the scratch's
    caches: tuple[tuple[str, Path], ...] = ()  # the user's caches each phase starts from
    # The caches kept for the repository (workspace/slots.py): the pre-flight's start, and
    # where what it wrote is kept for the next run (`keep_caches`). None: none kept.
    repo_caches: Path | None = None
    keeps_repo_caches: bool = True  # False: seeded from them, never written (an untrusted base)
    _phases: itertools.count[int] = field(default_factory=itertools.count, compare=False)

    @property
    def enabled(self) -> bool:
        return self.kind != "off"

    @property
    def loopback(self) -> Literal["own", "none"] | None:
        """What a command without the network has of 127.0.0.1: bubblewrap a loopback of its
        own (a test's own server works, isolated); Landlock none (it cannot isolate the
        host's, so no inet socket at all); None when off (the host's, and the network)."""
        if self.kind == "off":
            return None
        return "own" if self.kind == "bwrap" else "none"

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
            print(
                "codegen-ci: WARNING: could not copy what setup installed into this phase's "
                "fresh HOME; it starts empty",
                file=sys.stderr,
            )
        old.mkdir(exist_ok=True)
        for sub in SCRATCH_DIRS:
            (old / sub).mkdir(exist_ok=True)
        self.furnish()
        if self.enabled:  # the run's kept caches, or (the pre-flight) the repository's
            kept = self.root / "kept-caches"
            seed_tmp_caches(kept if kept.is_dir() else self.repo_caches, old)

    def furnish(self) -> None:
        """The scratch HOME's links to the toolchains, the user's caches copied in
        (security/toolchains.py, security/warm_caches.py)."""
        if self.enabled and self.home is not None:
            furnish_home(self.scratch / "home", self.home, self.toolchains)
            seed_scratch(self.scratch, self.caches)

    def keep_setup_state(self) -> None:
        """Keep what `setup` left in the scratch (on the untouched code, before any model
        command ran) as the start of every later phase."""
        seed = self.root / "seed"
        if not seed.exists() and not _copy(self.scratch, seed, "--no-preserve=ownership"):
            shutil.rmtree(seed, ignore_errors=True)  # later phases start empty instead
        drop_tmp_caches(seed)  # the repository's, seeded: each phase gets the kept ones

    def keep_caches(self) -> None:
        """Keep the caches the pre-flight's commands wrote in TMPDIR (jest's), on the untouched
        code, as the start of every later phase's, and of the repository's next run
        (`repo_caches`) (security/warm_caches.py)."""
        if self.enabled:
            kept = keep_tmp_caches(self.scratch, self.root / "kept-caches")
            if kept and self.repo_caches is not None and self.keeps_repo_caches:
                save_caches(self.root / "kept-caches", self.repo_caches)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        out = {**dict(env), **NO_USER_SITE}
        if self.enabled:
            out.update(HOME=str(self.scratch / "home"), TMPDIR=str(self.scratch / "tmp"))
            if "RUNNER_TEMP" in out:  # the real one is hidden; reports written there still count
                out["RUNNER_TEMP"] = str(self.scratch / "runner-temp")
            for name in CACHE_VARS:  # a build cache elsewhere is read-only: one per run instead
                if name in out:
                    out[name] = str(self.scratch / "cache" / name.lower())
            if self.home is not None:
                home = self.scratch / "home"
                out.update(toolchain_env(env, self.home, home, self.toolchains))
                out.update(scratch_env(self.scratch))
            system_config = self.tool_dir / SYSTEM_GITCONFIG_COPY
            if system_config.is_file():  # the system's held credentials: git reads the copy
                out["GIT_CONFIG_SYSTEM"] = str(system_config)
            for name in HOME_FILES:  # the user's git config (tokens in insteadOf) stays hidden
                if name in out and self._hides(Path(out[name])):
                    del out[name]
        return out

    def _hides(self, path: Path) -> bool:
        real = path.resolve()
        return any(within(real, h) for h in self.hidden)

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
        return Confinement(
            workdir,
            writable=(workdir, self.scratch, *writable),
            read_only=tuple(shown),
            hidden=(*self.hidden, *hidden),
            replaced=replaced,
            frozen=(workdir / ".git",),
            sockets=self.sockets,
            network=network,
        )

    def prefix(self, workdir: Path, *, network: bool) -> list[str]:
        """The argv that runs a command confined, working in (and writing only) `workdir`."""
        return self.wrap(self.confinement(workdir, network=network))

    def wrap(self, confinement: Confinement) -> list[str]:
        """The argv prefix of this run's backend for `confinement` ([] when off)."""
        if self.kind == "bwrap" and self.bwrap is not None:
            # with the network, a command shares the host's abstract Unix sockets
            shared = confinement.network and self.abstract_sockets
            return bwrap_argv(
                self.bwrap, confinement, unix_sockets=not shared, inside=self.bwrap_inside
            )
        if self.kind == "landlock":
            return landlock_argv(confinement, unix_sockets=self.unix_sockets)
        return []

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _copy(source: Path, target: Path, *options: str) -> bool:
    """`cp -a`: symlinks copied as symlinks (nothing followed), modes (and owners) kept."""
    try:
        proc = subprocess.run(
            ["cp", "-a", "--reflink=auto", *options, "--", str(source), str(target)],
            capture_output=True,
            check=False,
            timeout=600,
        )
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
    parent: Path | None = None,
    caches: Path | None = None,
    keep_caches: bool = True,
) -> Sandbox:
    """Set up confinement for one run and prove it works, or fail closed. `dependencies`: the
    repository's dependency folders commands may read (beside the checkout); `private`: the
    run's own files (its output directory, and what must stay apart from it: a candidate's
    siblings), hidden like HOME; `parent`: where its private root is made (a candidate's own
    folder, hidden from its siblings; default: the temporary directory); `caches`: the
    caches kept for the repository (`Sandbox.repo_caches`), written unless `keep_caches` is
    False."""
    # The action's `sandbox` input arrives as INPUT_SANDBOX; the variable wins when both are set.
    mode = (environ.get(SANDBOX_ENV) or environ.get("INPUT_SANDBOX") or "").strip().lower()
    if mode not in OFF | AUTO | {"bwrap", "landlock"}:
        raise InputError(
            f"{SANDBOX_ENV} / sandbox input: unknown value {mode!r} (auto, bwrap, landlock or off)"
        )
    root = Path(tempfile.mkdtemp(prefix="codegen-sandbox-", dir=parent))
    for sub in (*(f"rw/{d}" for d in SCRATCH_DIRS), "tool"):
        (root / sub).mkdir(parents=True)
    (root / "tool").chmod(0o755)
    if mode in OFF:
        print(
            f"codegen-ci: WARNING: {SANDBOX_ENV}=off: commands run UNCONFINED, with the "
            "tool's user, files and network",
            file=sys.stderr,
        )
        return Sandbox("off", root, git_dir, (), checkout)
    system_config = system_git_config(environ)
    hidden = outermost([*hidden_places(environ), *private, *system_config])
    # a toolchain never shows a hidden place whole (a PATH entry that is HOME or above it)
    toolchains = tuple(
        t for t in toolchain_places(environ) if not any(within(h, t) for h in hidden)
    )
    found = outside_sockets(environ)
    setup = Setup(
        environ, root, git_dir, checkout, hidden, toolchains, tuple(dependencies), found.named
    )
    base = Sandbox(
        "off",
        root,
        git_dir,
        setup.hidden,
        checkout,
        setup.toolchains,
        tuple(dependencies),
        sockets=found.named,
        abstract_sockets=bool(found.abstract),
    )
    base = replace(
        base,
        home=_home(environ),
        caches=user_caches(environ),
        repo_caches=caches,
        keeps_repo_caches=keep_caches,
    )
    try:
        sanitise_git_config(setup)
        sandbox = _start(mode, setup, base)
        sandbox.furnish()
        return sandbox
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _home(environ: Mapping[str, str]) -> Path | None:
    try:
        return Path(environ.get("HOME") or str(Path.home())).resolve()
    except (OSError, RuntimeError):
        return None


def _start(mode: str, setup: Setup, base: Sandbox) -> Sandbox:
    problems = []
    if mode != "landlock":
        try:
            bwrap = start_bwrap(setup)
            inside, gaps = start_bwrap_inside(setup, bwrap)
            if gaps:
                print(gaps_notice(gaps), file=sys.stderr)
            abi = kernel_abi() if inside is not None and inside.writes else None
            return replace(
                base, kind="bwrap", bwrap=bwrap, bwrap_inside=inside, landlock_abi=abi, gaps=gaps
            )
        except SandboxUnavailable as exc:
            if mode == "bwrap":
                raise fail_closed([exc.message]) from None
            problems.append(exc.message)
    # the metadata guard refuses a connect() to a named socket outside; before ABI 6 nothing
    # refuses one to an abstract socket
    abstract = base.abstract_sockets and kernel_abi() < 6
    try:
        abi = start_landlock(setup, unix_sockets=not abstract)
    except SandboxUnavailable as exc:
        raise fail_closed([*problems, exc.message]) from None
    if problems:
        print(
            f"codegen-ci: {problems[0]}; commands are confined with Landlock (ABI {abi}) "
            "instead (docs/sandbox.md)",
            file=sys.stderr,
        )
    print(landlock_notice(abstract=abstract), file=sys.stderr)
    return replace(base, kind="landlock", landlock_abi=abi, unix_sockets=not abstract)


def landlock_notice(*, abstract: bool) -> str:
    """What Landlock cannot give commands, said once per run (docs/sandbox.md)."""
    text = (
        "codegen-ci: note: Landlock gives commands no loopback of their own: without the "
        "network they open no inet socket, so a test that starts a server on 127.0.0.1 fails "
        "(bubblewrap runs it in a network namespace of its own)"
    )
    if abstract:
        text += (
            "; an abstract Unix socket listens outside the sandbox and this kernel's Landlock "
            "(ABI < 6) cannot refuse a connect() to it: commands open no Unix socket "
            "(socketpair() works)"
        )
    return text


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
    sockets: tuple[Path, ...] = ()

    def probe(self) -> Confinement:
        """A confinement like a command's, working in the scratch directory."""
        read_only = [*self.toolchains, *self.dependencies]
        read_only += [p for p in (self.checkout, self.git_dir) if p is not None]
        config = self.root / "gitconfig"
        replaced = ((config, self.git_dir / "config"),) if self.git_dir and config.is_file() else ()
        return Confinement(
            self.root / "rw" / "tmp",
            writable=(self.root / "rw",),
            read_only=tuple(read_only),
            hidden=self.hidden,
            replaced=replaced,
            sockets=self.sockets,
        )


def sanitise_git_config(setup: Setup) -> None:
    """The repository's config without credentials, for commands to see in its place; none
    when it holds none (then commands read the real one). Likewise git's system config
    (`system_git_config`), shown as a copy in the tool's folder."""
    config = setup.git_dir / "config" if setup.git_dir else None
    if config is not None and has_credentials(config):
        text = config.read_text(encoding="utf-8", errors="replace")
        (setup.root / "gitconfig").write_text(without_credentials(text), encoding="utf-8")
    for system in system_git_config(setup.environ):  # in its place: `Sandbox.environment`
        text = system.read_text(encoding="utf-8", errors="replace")
        copy = setup.root / "tool" / SYSTEM_GITCONFIG_COPY
        copy.write_text(without_credentials(text), encoding="utf-8")
        copy.chmod(0o644)


def system_git_config(environ: Mapping[str, str]) -> list[Path]:
    """git's system config when it holds credentials (an `insteadOf` URL with a token, an
    `extraheader`), to be hidden; else nothing."""
    config = Path(environ.get("GIT_CONFIG_SYSTEM") or SYSTEM_GITCONFIG)
    return [config] if config.is_absolute() and has_credentials(config) else []


def start_bwrap(setup: Setup) -> str:
    """The bwrap binary, proven to start a sandbox like the commands' here."""
    bwrap = setup.environ.get(BWRAP_ENV) or shutil.which("bwrap") or ""
    if not bwrap or not os.access(bwrap, os.X_OK) or Path(bwrap).is_dir():
        raise SandboxUnavailable(f"bubblewrap ({bwrap or 'bwrap'}) is not installed")
    bwrap = str(Path(bwrap).absolute())
    problem = _prove_bwrap(lambda: bwrap_argv(bwrap, setup.probe()))
    if problem is not None:
        raise SandboxUnavailable(f"bubblewrap could not start a sandbox: {problem}")
    return bwrap


def start_bwrap_inside(setup: Setup, bwrap: str) -> tuple[Inside | None, tuple[str, ...]]:
    """The launcher every bubblewrap command starts inside, after bwrap's mounts (a copy in
    the tool's read-only folder: the package may lie in a hidden place): the seccomp filter,
    the guard for metadata changes and connect() (a read-only mount stops neither a connect()
    to a named socket that appeared after the start nor, as root, a chmod of the device nodes
    `--dev` binds, which are the machine's), and where the kernel has Landlock a layer for
    write rights (a read-only mount does not stop a write into a named pipe). Proven by one
    command; with it the gaps it leaves (`GAPS`). When it cannot start, as root bubblewrap is
    unavailable (the device nodes would be the command's to change); else the run goes on
    without it (bwrap loads the filter: `bwrap --seccomp`) and says what stays open."""
    if not devices_are_ours() and _yama_scope() >= 2:  # every guarded call would fail
        return None, ("named-pipes", "new-sockets")
    folder = guarded_read.make_fresh_dir(setup.root / "tool", "inside")
    for source in (LAUNCHER, LAUNCHER.with_name("metadata_guard.py")):
        shutil.copyfile(source, folder / source.name)
    # its bytecode cached now: inside, the folder is read-only (no compiling on every command)
    py_compile.compile(str(folder / "metadata_guard.py"), doraise=True)
    (folder / "__pycache__").chmod(0o755)
    folder.chmod(0o755)
    probe = setup.probe()
    probe = replace(probe, read_only=(*probe.read_only, folder))
    problems = []
    for writes in (True, False) if kernel_abi() >= 1 else (False,):
        inside = Inside(folder / LAUNCHER.name, writes)
        argv = functools.partial(bwrap_argv, bwrap, probe, inside=inside)
        problem = _prove_bwrap(argv)
        if problem is None:
            return inside, () if writes else ("named-pipes",)
        problems.append(problem)
    if devices_are_ours():
        raise SandboxUnavailable(f"bubblewrap could not start its metadata guard: {problems[-1]}")
    print(f"codegen-ci: bubblewrap could not start its guard: {problems[-1]}", file=sys.stderr)
    return None, ("named-pipes", "new-sockets")


def _yama_scope(path: str = "/proc/sys/kernel/yama/ptrace_scope") -> int:
    """Yama's ptrace scope (0 without Yama): from 2 on, the guard cannot read its commands'
    memory."""
    try:
        return int(Path(path).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return 0


# What a bubblewrap run can leave open (`Sandbox.gaps`, report.json's `sandbox_gaps`).
GAPS = {
    "named-pipes": "no Landlock layer inside bubblewrap (this kernel has none, or the launcher "
    "cannot run there): a command can write into a named pipe (FIFO) outside /tmp, /var/tmp, "
    "HOME and the other hidden places, which a read-only mount does not stop",
    "new-sockets": "the guard cannot run inside bubblewrap here (a kernel before 5.6, or Yama "
    "ptrace scope 2 or more): a named Unix socket made after the run started outside the "
    "hidden places (a daemon started meanwhile) is reachable",
}


def gaps_notice(gaps: Sequence[str]) -> str:
    """What bubblewrap leaves open in this run, said once (docs/sandbox.md)."""
    said = "; ".join(GAPS[gap] for gap in gaps)
    return f"codegen-ci: note: bubblewrap: {said} (docs/sandbox.md)"


def start_landlock(setup: Setup, *, unix_sockets: bool) -> int:
    """The kernel's Landlock ABI, proven by one command confined with it."""
    abi = kernel_abi()
    if abi < 1:
        raise SandboxUnavailable(
            "this kernel has no Landlock (Linux 5.13 or later, with "
            "`landlock` in /sys/kernel/security/lsm)"
        )
    problem = _prove(landlock_argv(setup.probe(), unix_sockets=unix_sockets))
    if problem is not None:
        raise SandboxUnavailable(f"Landlock could not confine a command: {problem}")
    return abi


def _prove_bwrap(argv: Callable[[], list[str]]) -> str | None:
    """`_prove` for bubblewrap, again when a place listed at the start (a named socket, a
    hidden folder) was gone before bwrap mounted over it: bwrap then fails to make the mount
    point in the read-only root ("Can't create file at ...", "Can't mkdir ..."), which is no
    fault of the machine's; the argv made again leaves it out."""
    problem = _prove(argv())
    for _ in range(3):
        if problem is None or vanished_place(problem) is None:
            break
        problem = _prove(argv())
    return problem


def _prove(argv: list[str]) -> str | None:
    """None when `/bin/sh -c 'exit 0'` ran under `argv`, else what went wrong."""
    try:
        proc = subprocess.run(
            [*argv, "/bin/sh", "-c", "exit 0"],
            capture_output=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode("utf-8", errors="replace").strip()[-500:] or f"exit {proc.returncode}"


def fail_closed(problems: Sequence[str]) -> SandboxUnavailable:
    return SandboxUnavailable(unavailable("; ".join(problems)))


def hidden_places(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """HOME, the runner's directories, RUNNER_TEMP, the GitHub file-command directories,
    container-engine sockets and the machine's secrets (security/secret_places.py): resolved,
    outermost first, none inside another."""
    places = [Path(p) for p in SOCKETS]
    places += secret_places(environ)
    if environ.get("XDG_RUNTIME_DIR"):  # the session's sockets: D-Bus, gpg-agent, ssh-agent
        places.append(Path(environ["XDG_RUNTIME_DIR"]))
    home = environ.get("HOME") or str(Path.home())
    places.append(Path(home))
    if environ.get("RUNNER_TEMP"):
        places.append(Path(environ["RUNNER_TEMP"]))
    if environ.get("RUNNER_WORKSPACE"):  # <work>/<repo>: the work folder holds _temp, _actions
        places.append(Path(environ["RUNNER_WORKSPACE"]).parent)
    places += [Path(environ[v]).parent for v in FILE_COMMAND_VARS if environ.get(v)]
    runner = runner_root()
    if runner is not None:
        places.append(runner)
    return outermost(places)


def outermost(places: Iterable[Path]) -> tuple[Path, ...]:
    # bwrap mounts over real paths only: /var/run/dbus is /run/dbus behind a symlink. Parents
    # come first; what lies inside another hidden place is hidden with it.
    resolved = sorted({p.resolve() for p in places} - {Path("/")}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(beneath(path, k) for k in kept):
            kept.append(path)
    return tuple(kept)


def toolchain_places(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """What commands may read of the hidden places (see the module docstring): existing
    directories, resolved, never HOME itself nor `/`."""
    home = Path(environ.get("HOME") or str(Path.home()))
    found = [home / name for name in HOME_TOOLCHAINS]
    found += [Path(environ[name]) for name in TOOLCHAIN_VARS if environ.get(name)]
    for name, parts in TOOLCHAIN_PARTS.items():
        if environ.get(name):
            found += [Path(environ[name]) / part for part in parts]
    for entry in environ.get("PATH", "").split(os.pathsep):
        if entry and Path(entry).is_absolute():
            found += _path_entry(Path(entry), home)
    # the interpreter the tool runs (commands may use it), its virtualenv and base
    found += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    places = []
    for path in found:
        try:
            real = path.resolve()
            if real.is_dir() and real not in (Path("/"), home.resolve()):
                places.append(real)
        except (OSError, RuntimeError):  # a place this user cannot reach holds nothing for it
            continue
    return tuple(sorted(set(places)))


def _path_entry(entry: Path, home: Path) -> list[Path]:
    """A PATH directory, and the prefix it belongs to when that is a toolchain (a virtualenv,
    or a prefix with its own `lib`); `~/.local/bin` brings the user site of each Python, and
    a `node_modules/.bin` its `node_modules` (where its links point: pnpm, tsc)."""
    found = [entry]
    if entry.name == ".bin" and entry.parent.name == "node_modules":
        found.append(entry.parent)
    if entry.name == "bin" and entry.parent not in (Path("/"), home):
        prefix = entry.parent
        try:
            if prefix == home / ".local":
                found += sorted((home / ".local" / "lib").glob("python*"))
            elif (prefix / "pyvenv.cfg").is_file() or (prefix / "lib").is_dir():
                found.append(prefix)
        except OSError:
            pass
    return found


@dataclass(frozen=True)
class OutsideSockets:
    """Unix sockets outside the sandbox that a command could reach (`outside_sockets`)."""

    named: tuple[Path, ...] = ()  # resolved, each one this user may connect to
    abstract: tuple[str, ...] = ()  # names of abstract sockets bound in this namespace


def outside_sockets(
    environ: Mapping[str, str], proc_net_unix: str = PROC_NET_UNIX
) -> OutsideSockets:
    """The named sockets this user could connect to: every socket bound in this network
    namespace (`/proc/net/unix`: ssh-agent, gpg-agent, D-Bus, journald, a database), the
    container engines' (bind-mounted from another namespace), `SSH_AUTH_SOCK`'s, and any
    under /run; and the abstract ones bound here. Found once, when the run starts."""
    named: set[Path] = set()
    abstract: list[str] = []
    try:
        lines = Path(proc_net_unix).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    candidates = [*ENGINE_SOCKETS]
    for line in lines[1:]:
        fields = line.split(maxsplit=7)
        if len(fields) == 8:
            name = fields[7]
            if name.startswith("@"):
                abstract.append(name)
            elif name.startswith("/"):
                candidates.append(name)
    if environ.get("SSH_AUTH_SOCK"):
        candidates.append(environ["SSH_AUTH_SOCK"])
    candidates += _sockets_beneath(Path("/run"))
    for name in candidates:
        path = _reachable_socket(Path(name))
        if path is not None:
            named.add(path)
    return OutsideSockets(tuple(sorted(named)), tuple(sorted(set(abstract))))


def _reachable_socket(path: Path) -> Path | None:
    try:
        real = path.resolve()
        if stat.S_ISSOCK(real.stat().st_mode) and os.access(real, os.W_OK):
            return real
    except (OSError, RuntimeError):
        pass
    return None


def _sockets_beneath(top: Path, limit: int = 5000) -> list[str]:
    """Sockets beneath `top`, links not followed, at most `limit` entries looked at."""
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(top):
        seen += len(dirs) + len(files)
        if seen > limit:
            break
        for name in files:
            path = Path(folder, name)
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    found.append(str(path))
    return found


def runner_root() -> Path | None:
    """The Actions runner's install directory (`<root>/bin/Runner.Worker`), found among this
    process's ancestors; None outside a runner (or in a container, which cannot see it)."""
    pid = os.getppid()
    for _ in range(32):
        if pid <= 1:
            return None
        try:
            exe = Path(f"/proc/{pid}/exe").readlink()
            status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        if exe.name in RUNNER_PROGRAMS and exe.parent.name == "bin":
            return exe.parent.parent
        ppid = next(
            (line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "0"
        )
        pid = int(ppid)
    return None


def unavailable(reason: str) -> str:
    return (
        f"{reason}. codegen-ci runs repository and model commands only inside a sandbox: "
        "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; on Ubuntu 24.04 it also needs "
        "unprivileged user namespaces, see docs/sandbox.md) or Landlock (Linux 5.13 or later "
        "with Landlock enabled: `landlock` in /sys/kernel/security/lsm, else add lsm=landlock,"
        "... to the kernel command line; no package, no root). To run UNCONFINED anyway, set "
        "CODEGEN_SANDBOX=off (see SECURITY.md)."
    )
