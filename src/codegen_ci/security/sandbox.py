"""Confinement for every command that runs repository code: the model's `run_command`, the
validation `setup`, `lint` and `test` commands, and the re-runs on the base commit.

Each command runs under bubblewrap (`bwrap`) in its own PID, IPC, UTS and network namespaces
(no network unless the spec's `validation.network` names its kind), with every capability
dropped and `no_new_privs` set (no sudo, no setuid), and a filesystem that is the machine's,
read-only, except for the directory the command works in and the run's scratch directory
(HOME and TMPDIR point there; /tmp is read-only like the rest, since interpreters and
virtualenvs may live there). A fresh `/proc` shows only the sandbox's own processes, so
the tool's and the runner's environments and memory are out of reach. Places that hold
secrets or steer later workflow steps are hidden: RUNNER_TEMP and the directories of
GITHUB_ENV / GITHUB_PATH / GITHUB_OUTPUT / GITHUB_STEP_SUMMARY, container-engine sockets and
credential files in HOME; the repository's git config is shown without credentials, and the
worktree's `.git` file is read-only.

When bwrap is missing or cannot create its namespaces, `open_sandbox` fails closed with
`SandboxUnavailable` (exit 3) unless `CODEGEN_SANDBOX=off` switches confinement off.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.errors import InfraError

SANDBOX_ENV = "CODEGEN_SANDBOX"  # "off" runs commands unconfined (never the default)
BWRAP_ENV = "CODEGEN_BWRAP"  # an explicit bwrap binary; default: `bwrap` on PATH at start-up
OFF = frozenset({"off", "false", "0", "no", "none", "disabled"})
CACHE_VARS = ("GOCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache")
FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")  # fmt: skip
SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman",
           "/run/dbus", "/run/user", "/var/run/dbus")  # fmt: skip
HOME_SECRETS = (".ssh", ".docker", ".aws", ".azure", ".kube", ".config/gh", ".gnupg",
                ".netrc", ".git-credentials", ".pypirc", ".npmrc")  # fmt: skip
_CREDENTIALS = re.compile(r"^\s*extraheader\s*=.*$", re.IGNORECASE | re.MULTILINE)
_USERINFO = re.compile(r"(://)[^/@\s]+@")


class SandboxUnavailable(InfraError):
    """Confinement could not be set up, and nobody switched it off."""


@dataclass(frozen=True)
class Sandbox:
    """How this run confines its commands; `bwrap is None` means switched off."""

    bwrap: str | None
    root: Path  # private: the sanitized git config; `root/rw` is the writable scratch
    git_dir: Path | None  # the repository's common git dir, shown read-only
    hidden: tuple[Path, ...]
    checkout: Path | None = None  # the user's checkout, read-only (linked dependencies live there)

    @property
    def enabled(self) -> bool:
        return self.bwrap is not None

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
        return out

    def prefix(self, workdir: Path, *, network: bool) -> list[str]:
        """The argv that runs a command confined, working in (and writing only) `workdir`."""
        if self.bwrap is None:
            return []
        argv = [self.bwrap, "--unshare-all", *(["--share-net"] if network else []),
                "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/dev/shm"]  # fmt: skip  # noqa: S108 - inside the sandbox
        read_only = []  # empty and read-only: no message can be left there for later steps
        for path in self.hidden:
            if path.is_dir():
                argv += ["--tmpfs", str(path)]
                read_only += ["--remount-ro", str(path)]
            elif path.exists():
                argv += ["--ro-bind", "/dev/null", str(path)]
        if self.checkout is not None and self.checkout.is_dir():
            argv += ["--ro-bind", str(self.checkout), str(self.checkout)]
        if self.git_dir is not None and self.git_dir.is_dir():
            argv += ["--ro-bind", str(self.git_dir), str(self.git_dir)]
            config = self._sanitized_git_config()
            if config is not None:
                argv += ["--ro-bind", str(config), str(self.git_dir / "config")]
        argv += ["--bind", str(workdir), str(workdir), "--bind", str(self.scratch),
                 str(self.scratch)]  # fmt: skip
        if (workdir / ".git").is_file():
            argv += ["--ro-bind", str(workdir / ".git"), str(workdir / ".git")]
        return [*argv, *read_only, "--chdir", str(workdir), "--"]

    def _sanitized_git_config(self) -> Path | None:
        """The repository's config without tokens (actions/checkout leaves one there)."""
        source = self.git_dir / "config" if self.git_dir else None
        if source is None or not source.is_file():
            return None
        text = source.read_text(encoding="utf-8", errors="replace")
        target = self.root / "gitconfig"
        target.write_text(_USERINFO.sub(r"\1", _CREDENTIALS.sub("", text)), encoding="utf-8")
        return target

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def open_sandbox(
    environ: Mapping[str, str], *, git_dir: Path | None, checkout: Path | None = None
) -> Sandbox:
    """Set up confinement for one run and prove it works, or fail closed."""
    root = Path(tempfile.mkdtemp(prefix="codegen-sandbox-"))
    for sub in ("rw/home", "rw/tmp", "rw/runner-temp"):
        (root / sub).mkdir(parents=True)
    # The action's `sandbox` input arrives as INPUT_SANDBOX; the variable wins when both are set.
    mode = environ.get(SANDBOX_ENV) or environ.get("INPUT_SANDBOX") or ""
    if mode.strip().lower() in OFF:
        print(f"codegen-ci: WARNING: {SANDBOX_ENV}=off: commands run UNCONFINED, with the "
              "tool's user, files and network", file=sys.stderr)  # fmt: skip
        return Sandbox(None, root, git_dir, (), checkout)
    bwrap = environ.get(BWRAP_ENV) or shutil.which("bwrap") or ""
    if not bwrap or not os.access(bwrap, os.X_OK) or Path(bwrap).is_dir():
        shutil.rmtree(root, ignore_errors=True)
        raise SandboxUnavailable(_unavailable(f"bubblewrap ({bwrap or 'bwrap'}) is not installed"))
    sandbox = Sandbox(str(Path(bwrap).absolute()), root, git_dir, _hidden(environ), checkout)
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
        sandbox.close()
        raise SandboxUnavailable(_unavailable(f"bubblewrap could not start a sandbox: {problem}"))
    return sandbox


def _hidden(environ: Mapping[str, str]) -> tuple[Path, ...]:
    places = [Path(p) for p in SOCKETS]
    if environ.get("RUNNER_TEMP"):
        places.append(Path(environ["RUNNER_TEMP"]))
    places += [Path(environ[v]).parent for v in FILE_COMMAND_VARS if environ.get(v)]
    home = Path(environ.get("HOME") or Path.home())
    places += [home / name for name in HOME_SECRETS]
    # bwrap mounts over real paths only: /var/run/dbus is /run/dbus behind a symlink. Parents
    # come first; what lies inside another hidden (read-only) place is hidden with it.
    resolved = sorted({p.resolve() for p in places} - {Path("/")}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(k in path.parents for k in kept):
            kept.append(path)
    return tuple(kept)


def _unavailable(reason: str) -> str:
    return (
        f"{reason}. codegen-ci runs repository and model commands only inside a sandbox. "
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); on Ubuntu 24.04 also "
        "allow unprivileged user namespaces (sudo sysctl -w "
        "kernel.apparmor_restrict_unprivileged_userns=0); in a container, run it with "
        "--security-opt seccomp=unconfined --security-opt apparmor=unconfined (or use the "
        f"runner-host action). To run UNCONFINED anyway, set {SANDBOX_ENV}=off "
        "(see SECURITY.md)."
    )
