"""Bubblewrap backend: the argv that runs one command under `bwrap` (security/sandbox.py says
what it confines), and the repository's git config as a confined command may see it."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.security import landlock_exec
from codegen_ci.security.confinement import Confinement, beneath, within

# The launcher: inside bubblewrap (`Inside`, a copy of it) or, where it cannot start there,
# around it, handing bwrap the seccomp filter both backends share (`--seccomp FD`).
LAUNCHER = Path(landlock_exec.__file__)
# Shown empty and read-only, whatever the confinement: the machine's shared temporary
# directories hold other users' and the user's own sockets (`/tmp/ssh-*/agent.*`, X11, tmux)
# and files. What a command needs there (a checkout, the run's scratch) is bound again.
EMPTIED = (Path("/tmp"), Path("/var/tmp"))  # noqa: S108 - hidden, inside the sandbox

_CREDENTIALS = re.compile(r"^\s*extraheader\s*=.*$", re.IGNORECASE | re.MULTILINE)
_USERINFO = re.compile(r"(://)[^/@\s]+@")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")  # what `--dev` shows of /dev
# Written, never made or removed, inside bubblewrap: the device nodes `--dev` shows, and what
# lies beneath its own `/dev/pts` and `/proc` (a PID namespace's: the command's processes).
WRITTEN = (*(f"/dev/{name}" for name in DEVICES), "/dev/ptmx", "/dev/pts", "/proc")
SHM = "/dev/shm"  # noqa: S108 - bubblewrap's own tmpfs, writable inside


@dataclass(frozen=True)
class Inside:
    """The launcher started inside every bubblewrap command, after its mounts
    (security/landlock_exec.py, `"inside": "bwrap"`; a copy in the tool's read-only folder):
    the seccomp filter, the metadata and connect() guard, and, when `writes`, a Landlock
    layer for write rights (the kernel has Landlock)."""

    launcher: Path
    writes: bool


def bwrap_argv(
    bwrap: str,
    confinement: Confinement,
    *,
    unix_sockets: bool = True,
    inside: Inside | None = None,
) -> list[str]:
    """The machine read-only; each hidden place an empty read-only tmpfs (or /dev/null for a
    file, a named socket included), with the read-only places shown again inside; the
    writable places bound read-write; replaced and frozen files read-only on top; own
    namespaces (network only if allowed), no capability, a new session; the seccomp filter
    of security/landlock_exec.py (`seccomp_program`), loaded by the launcher `inside` the
    sandbox, or, without one, handed to bwrap by that launcher started around it.
    `unix_sockets`: False where a command with the network (the host's network namespace,
    so its abstract sockets) could reach an abstract socket outside."""
    c = confinement
    launcher: list[str] = []
    if inside is None:
        policy = {"backend": "bwrap", "network": c.network, "unix_sockets": unix_sockets}
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(policy), "--"]
    argv = [*launcher, bwrap, "--unshare-all", *(["--share-net"] if c.network else [])]
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--tmpfs", "/dev/shm"]  # noqa: S108 - inside the sandbox
    read_only: list[str] = []  # empty and read-only: no message can be left there
    emptied = [p for p in EMPTIED if p.is_dir() and not p.is_symlink()]
    covering = (*emptied, *c.hidden)
    # A read-only place never shows a whole emptied place again (a PATH entry that is /tmp).
    shown = [p for p in c.read_only if not any(within(e, p) for e in emptied)]
    # A hidden place inside a place shown again (the run's output directory in the git
    # directory) is hidden after that place is mounted.
    inner = [h for h in c.hidden if any(beneath(h, p) for p in shown)]
    argv += _hide([*emptied, *(h for h in c.hidden if h not in inner)], read_only)
    for path in shown:  # only what a hidden place covers: the rest is the read-only /
        if path.exists() and any(within(path, h) for h in covering):
            argv += ["--ro-bind", str(path), str(path)]
    argv += _hide(inner, read_only)
    for source, target in c.replaced:
        if source.exists() and target.exists():
            argv += ["--ro-bind", str(source), str(target)]
    for path in c.writable:
        argv += ["--bind", str(path), str(path)]
    for path in c.sockets:  # a named socket outside, still there for the command to see
        if _visible(path, covering, shown, c.writable) and path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    for path in c.frozen:
        if path.is_file():
            argv += ["--ro-bind", str(path), str(path)]
    argv += [*read_only, "--chdir", str(c.workdir), "--"]
    return argv if inside is None else [*argv, *inside_argv(inside, c, unix_sockets=unix_sockets)]


def inside_argv(inside: Inside, confinement: Confinement, *, unix_sockets: bool) -> list[str]:
    """The launcher's argv prefix inside bubblewrap (`Inside`): writes, metadata changes and
    named sockets beneath the writable places and bubblewrap's own `/dev/shm`."""
    c = confinement
    policy = {
        "inside": "bwrap",
        "landlock": "writes" if inside.writes else False,
        "network": c.network,
        "unix_sockets": unix_sockets,
        "write": [*(str(p) for p in c.writable), SHM],
        "devices": list(WRITTEN),
    }
    return [sys.executable, "-I", "-S", str(inside.launcher), json.dumps(policy), "--"]


def _visible(
    path: Path, covering: Sequence[Path], shown: Sequence[Path], writable: Sequence[Path]
) -> bool:
    """Whether `path` is still the host's inside the sandbox: not in a writable place (the
    command's own), and in a place shown again or in none that is hidden or emptied."""
    if any(within(path, w) for w in writable):
        return False
    if any(within(path, p) for p in shown):
        return True
    return not any(within(path, h) for h in covering)


def _hide(places: list[Path], read_only: list[str]) -> list[str]:
    argv = []
    for path in places:
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
            read_only += ["--remount-ro", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def without_credentials(text: str) -> str:
    """A git config without tokens (actions/checkout leaves an auth header there; a remote's
    URL may carry `user:token@`)."""
    return _USERINFO.sub(r"\1", _CREDENTIALS.sub("", text))


def has_credentials(config: Path) -> bool:
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return without_credentials(text) != text


def devices_are_ours() -> bool:
    """Whether this user owns a device node `--dev` shows (binds writable, and read-only would
    mean `nodev`): then a command could change its mode, owner or times (root, a container)."""
    for name in DEVICES:
        try:
            if (Path("/dev") / name).stat().st_uid == os.geteuid():
                return True
        except OSError:
            continue
    return False


# bubblewrap's own words when a mount point it was given is gone: a place listed when the
# argv was made (a socket its program closed, a folder removed) no longer exists, and in the
# read-only root bwrap cannot make it.
# Or, gone between bwrap's mount and its read-only remount: "Can't remount readonly on
# /newroot/run/secrets: Unable to find "/newroot/run/secrets" in mount table".
_VANISHED = re.compile(
    r"bwrap: Can't (?:mkdir |create file at |(?:remount readonly|mount tmpfs) on /newroot)"
    r"(/[^\n]*?): [^\n]*"
)
# bwrap's options that take a destination as their last argument, and how many arguments.
_MOUNTS = {"--tmpfs": 1, "--remount-ro": 1, "--ro-bind": 2, "--bind": 2, "--dev-bind": 2}


def vanished_place(output: str) -> Path | None:
    """The mount point bwrap could not make, when `output` is bwrap's failure to make it (None
    for any other failure). The place was gone when bwrap looked: it has gone since the argv
    was made (a socket its program closed, a folder removed), and it may be back by now (a
    folder removed and made again). A command could print these words itself, so they count
    only as bwrap prints them, before the command starts: the first line, and for a place that
    exists now the whole output."""
    match = _VANISHED.match(output)
    if match is None:
        return None
    place = Path(match.group(1))
    if os.path.lexists(place) and output[match.end() :].strip():
        return None
    return place


def argv_again(argv: Sequence[str], output: str) -> list[str] | None:
    """The argv to run again after bwrap failed on a mount point (`vanished_place`; None for
    a failure of any other kind): without the mounts at that place when it is still gone, the
    same argv when it is back (it must be hidden or shown as before)."""
    place = vanished_place(output)
    if place is None:
        return None
    return list(argv) if os.path.lexists(place) else without_place(argv, place)


def without_place(argv: Sequence[str], place: Path) -> list[str]:
    """`argv` (a `bwrap_argv`) without the mounts at or beneath `place`: what would have been
    hidden or shown there is gone, and a mount of it can only fail."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        count = _MOUNTS.get(arg)  # the launchers' arguments around bwrap's are never these
        if count is not None and i + count < len(argv):
            target = Path(argv[i + count])
            if within(target, place):
                i += count + 1
                continue
        out.append(arg)
        i += 1
    return out
