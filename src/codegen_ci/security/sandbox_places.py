"""What every sandbox mode keeps from confined commands (places that hold secrets or steer
later workflow steps: the runner's temp and file-command directories, its own credentials,
container-engine sockets, credential files in HOME), and what to tell the user when no mode
can be set up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.errors import InfraError

FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")  # fmt: skip
SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman",
           "/run/dbus", "/run/user", "/var/run/dbus")  # fmt: skip
HOME_SECRETS = (".ssh", ".docker", ".aws", ".azure", ".kube", ".config/gh", ".gnupg",
                ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".config/gcloud",
                ".cargo/credentials", ".cargo/credentials.toml")  # fmt: skip
# The Actions runner's own files: what it authenticates to GitHub with (a self-hosted
# runner's registration, hosted runners' too) and its environment file.
RUNNER_SECRETS = (".credentials", ".credentials_rsaparams", ".runner", ".env", ".path")
RUNNER_PROGRAMS = ("Runner.Worker", "Runner.Listener")


class SandboxUnavailable(InfraError):
    """Confinement could not be set up, and nobody switched it off (exit 3)."""


def hidden_places(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """RUNNER_TEMP, the GitHub file-command directories, container-engine sockets and
    credential files in HOME: resolved, outermost first, none inside another."""
    places = [Path(p) for p in SOCKETS]
    if environ.get("RUNNER_TEMP"):
        places.append(Path(environ["RUNNER_TEMP"]))
    places += [Path(environ[v]).parent for v in FILE_COMMAND_VARS if environ.get(v)]
    home = Path(environ.get("HOME") or Path.home())
    places += [home / name for name in HOME_SECRETS]
    runner = runner_root()
    if runner is not None:
        places += [runner / name for name in RUNNER_SECRETS]
    # bwrap mounts over real paths only: /var/run/dbus is /run/dbus behind a symlink. Parents
    # come first; what lies inside another hidden (read-only) place is hidden with it.
    resolved = sorted({p.resolve() for p in places} - {Path("/")}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(k in path.parents for k in kept):
            kept.append(path)
    return tuple(kept)


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
        f"{reason}. codegen-ci runs repository and model commands only inside a sandbox. "
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); on Ubuntu 24.04 also "
        "allow unprivileged user namespaces (sudo sysctl -w "
        "kernel.apparmor_restrict_unprivileged_userns=0). In a container where bubblewrap "
        "cannot start, codegen-ci running as root confines commands as an unprivileged user "
        "instead (CODEGEN_SANDBOX_USER, default codegen-sandbox, which the action's image "
        "has). To run UNCONFINED anyway, set CODEGEN_SANDBOX=off (see SECURITY.md)."
    )
