"""What every sandbox backend keeps from confined commands, and what it still shows of the
places it keeps.

Kept (hidden): the user's whole HOME (an allowlist: no credential file is readable whatever
its name), the Actions runner's own directory (its registration and credentials) and work
directory (`_temp`, `_actions`, `_diag`), RUNNER_TEMP, the GitHub file-command directories and
container-engine sockets. Shown again, read-only, from inside those: the toolchains commands
need (`toolchain_places`: pyenv, nvm, volta, fnm, rustup and cargo's `bin`, Go's module cache,
sdkman, asdf, `~/.local/bin` when it is on PATH, the runner's tool cache, a virtualenv or a
`bin` directory on PATH, the tool's own interpreter). Also here: what to tell the user when no
backend can be set up."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from codegen_ci.errors import InfraError

FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")  # fmt: skip
SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman",
           "/run/dbus", "/run/user", "/var/run/dbus")  # fmt: skip
ENGINE_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                  "/run/podman/podman.sock")  # fmt: skip
RUNNER_PROGRAMS = ("Runner.Worker", "Runner.Listener")
# Toolchains kept in HOME (none holds credentials): shown whole, when they exist.
HOME_TOOLCHAINS = (".pyenv", ".nvm", ".volta", ".fnm", ".local/share/fnm", ".rustup",
                   ".cargo/bin", ".cargo/registry", ".cargo/git", "go/pkg/mod", "go/bin",
                   ".sdkman/candidates", ".asdf", ".local/share/mise/installs",
                   ".local/share/uv/python", ".rbenv", ".nodenv", ".goenv", ".jenv/versions",
                   ".bun/bin", ".deno/bin", ".dotnet", ".ghcup/bin", ".elan/toolchains",
                   ".juliaup", ".m2/repository", ".gradle/wrapper/dists",
                   ".gradle/caches/modules-2")  # fmt: skip
# Variables naming a toolchain (shown whole) or a tree whose named parts are toolchains.
TOOLCHAIN_VARS = ("PYENV_ROOT", "NVM_DIR", "VOLTA_HOME", "FNM_DIR", "RUSTUP_HOME", "GOROOT",
                  "GOMODCACHE", "SDKMAN_CANDIDATES_DIR", "ASDF_DATA_DIR", "JAVA_HOME",
                  "VIRTUAL_ENV", "CONDA_PREFIX", "RUNNER_TOOL_CACHE",
                  "AGENT_TOOLSDIRECTORY")  # fmt: skip
TOOLCHAIN_PARTS = {"GOPATH": ("pkg/mod", "bin"), "CARGO_HOME": ("bin", "registry", "git")}


class SandboxUnavailable(InfraError):
    """Confinement could not be set up, and nobody switched it off (exit 3)."""


def hidden_places(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """HOME, the runner's directories, RUNNER_TEMP, the GitHub file-command directories and
    container-engine sockets: resolved, outermost first, none inside another."""
    places = [Path(p) for p in SOCKETS]
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
        if not any(k in path.parents for k in kept):
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
    or a prefix with its own `lib`); `~/.local/bin` brings the user site of each Python."""
    found = [entry]
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


def reachable_engine_socket() -> Path | None:
    """A container engine's socket this process could connect to (Landlock cannot stop a
    connect() to a named socket: the backend then refuses stream Unix sockets)."""
    for name in ENGINE_SOCKETS:
        path = Path(name)
        try:
            if path.exists() and os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    return None


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
        ppid = next((line.split()[1] for line in status.splitlines()
                     if line.startswith("PPid:")), "0")  # fmt: skip
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
