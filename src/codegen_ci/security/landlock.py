"""Landlock backend: the argv that runs one command through the launcher
(security/landlock_exec.py, which says what it enforces), built from a `Confinement`.

Landlock allows; it cannot hide something beneath a place it allows. So the places a command
may read are an allowlist: the system's directories (`SYSTEM`), the toolchains, the checkout,
the git directory and dependency folders (the confinement's `read_only`), and its writable
places; a hidden place that lies inside one of them (a runner under /opt, a credentialled git
config in the git directory) splits that place into its other entries."""

from __future__ import annotations

import ctypes
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from codegen_ci.security import landlock_exec
from codegen_ci.security.confinement import Confinement, beneath

LAUNCHER = Path(landlock_exec.__file__)
SYSTEM = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/snap",
    "/run",
    "/proc",
    "/sys",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def kernel_abi() -> int:
    """The running kernel's Landlock ABI (0: none)."""
    if sys.platform != "linux":
        return 0
    return landlock_exec.abi_version(ctypes.CDLL(None, use_errno=True))


def landlock_argv(confinement: Confinement, *, unix_sockets: bool = True) -> list[str]:
    """The launcher's argv prefix for this confinement. The launcher's guard checks the
    address of every connect() and of every datagram sent with one (`sendto`, `sendmsg`,
    `sendmmsg`): a named Unix socket only beneath the writable places, so `/dev/log`,
    journald, an engine's or an agent's socket are refused. `unix_sockets`: False where an
    abstract socket listens outside on a kernel before Landlock ABI 6 (which cannot scope
    them): then no Unix socket at all; `socketpair()` still works."""
    c = confinement
    hidden = tuple(c.hidden) + tuple(target for _, target in c.replaced)
    readable = [Path(p) for p in SYSTEM] + list(c.read_only)
    policy = {
        "read": [str(p) for p in allowed(readable, hidden)],
        "write": [str(p) for p in c.writable],
        "list": ["/dev"],
        "devices": list(DEVICES),
        "network": c.network,
        "unix_sockets": unix_sockets,
    }
    return [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(policy), "--"]


def allowed(places: Iterable[Path], hidden: Sequence[Path]) -> list[Path]:
    """`places`, resolved, each without the hidden places strictly inside it. A place inside a
    hidden one stays (it was named to be shown: a toolchain in HOME)."""
    out: list[Path] = []
    for place in places:
        try:
            real = place.resolve()
        except (OSError, RuntimeError):
            continue
        if real.exists():
            out += _without(real, [h for h in hidden if beneath(h, real)])
    return sorted(set(out))


def _without(place: Path, inside: list[Path]) -> list[Path]:
    if not inside:
        return [place]
    try:
        children = sorted(place.iterdir())
    except OSError:
        return []
    out: list[Path] = []
    for child in children:
        if child in inside or child.is_symlink():  # a link's target is granted by its own rule
            continue
        out += _without(child, [h for h in inside if beneath(h, child)])
    return out
