"""User mode: confinement by a dedicated unprivileged user, where bubblewrap cannot create
namespaces (GitHub runs a Docker action's container with Docker's default seccomp profile, so
no `unshare`, not even for root). The tool stays root; each command runs under
`user_jail.py` as the sandbox user (no groups, no capabilities, `no_new_privs`, no network
unless allowed: see there).

What the sandbox user can write is what it owns: the worktree and the scratch directory are
handed to it (chowned) before each command, so files the tool wrote meanwhile stay editable.
What it could otherwise read of the places bubblewrap hides (RUNNER_TEMP, the GitHub file-command
directories, credential files in HOME, and the repository's git config while it holds a
token) loses its "other" permission bits for the run and gets them back at the end; a directory
the worktree lies in keeps its search bit only (entered, never listed). Files keep their
owners: the runner's user reads and writes them as before, even if the run were killed
before it could restore the bits. The run refuses to start when the sandbox user owns any of
them, or the repository's git directory, since ownership would undo all this.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

JAIL = Path(__file__).with_name("user_jail.py")
USER_ENV = "CODEGEN_SANDBOX_USER"  # a user name, a uid, or uid:gid; default below
DEFAULT_USER = "codegen-sandbox"  # created by the Dockerfile
OTHER = stat.S_IRWXO
GROUP = stat.S_IRWXG


class UserModeError(Exception):
    """User mode cannot be set up here; the message says why."""


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int
    name: str

    def jail(self, *, network: bool) -> list[str]:
        """The argv prefix that runs a command as this user (user_jail.py)."""
        return [sys.executable, "-I", "-S", str(JAIL), str(self.uid), str(self.gid),
                "net" if network else "nonet", "--"]  # fmt: skip


def resolve_user(wanted: str | None) -> SandboxUser:
    """`CODEGEN_SANDBOX_USER`: a name from the user database, a uid, or `uid:gid`."""
    text = (wanted or DEFAULT_USER).strip()
    uid_text, _, gid_text = text.partition(":")
    try:
        if uid_text.isdigit():
            uid = int(uid_text)
            gid = int(gid_text) if gid_text else _primary_gid(uid)
            name = text
        else:
            entry = pwd.getpwnam(uid_text)
            uid, gid, name = entry.pw_uid, int(gid_text) if gid_text else entry.pw_gid, uid_text
    except (KeyError, ValueError):
        raise UserModeError(
            f"the sandbox user {text!r} does not exist (create it, e.g. `useradd --system "
            f"--user-group --no-create-home {DEFAULT_USER}`, or name one in {USER_ENV})"
        ) from None
    if uid == 0 or gid == 0:
        raise UserModeError(f"the sandbox user {text!r} is root or in root's group")
    return SandboxUser(uid, gid, name)


def _primary_gid(uid: int) -> int:
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return uid  # an unnamed uid: a group of the same number


@dataclass
class PermissionHold:
    """Permission bits taken away for the run, and given back by `restore`."""

    user: SandboxUser
    taken: list[tuple[Path, int]] = field(default_factory=list)

    def hide(self, path: Path, *, keep_search: bool = False) -> None:
        try:
            info = path.lstat()
        except OSError:
            return
        if stat.S_ISLNK(info.st_mode):
            return  # the paths given are resolved; a link here is not ours to follow
        if info.st_uid == self.user.uid:
            raise UserModeError(f"the sandbox user ({self.user.name}) owns {path}")
        mask = OTHER | (GROUP if info.st_gid == self.user.gid else 0)
        if keep_search and stat.S_ISDIR(info.st_mode):
            mask &= ~(stat.S_IXOTH | (stat.S_IXGRP if mask & GROUP else 0))
        mode = stat.S_IMODE(info.st_mode)
        if mode & mask:
            path.chmod(mode & ~mask)
            self.taken.append((path, mode))

    def restore(self) -> None:
        while self.taken:
            path, mode = self.taken.pop()
            with contextlib.suppress(OSError):
                path.chmod(mode)


def check_not_owned(user: SandboxUser, paths: Iterable[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            if path.lstat().st_uid == user.uid:
                raise UserModeError(f"the sandbox user ({user.name}) owns {path}")


def hand_over(user: SandboxUser, top: Path, *, keep: Sequence[Path] = ()) -> None:
    """Make everything under `top` the sandbox user's (links themselves, never their targets),
    except the paths in `keep` (the worktree's `.git` file stays the tool's)."""
    kept = set(keep)
    for folder, dirs, files in os.walk(top):
        base = Path(folder)
        for name in (".", *dirs, *files):
            path = base / name if name != "." else base
            if path in kept:
                continue
            with contextlib.suppress(OSError):
                info = path.lstat()
                if info.st_uid != user.uid or info.st_gid != user.gid:
                    os.lchown(path, user.uid, user.gid)


def git_config(home: Path, original: str | None) -> str:
    """The global git config of commands in user mode: `safe.directory` (the repository
    belongs to another uid), and the one the environment named if the user may read it."""
    text = "[safe]\n\tdirectory = *\n"
    if original and _others_can_read(Path(original)):
        text = f"[include]\n\tpath = {original}\n{text}"
    path = home / ".gitconfig"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _others_can_read(path: Path) -> bool:
    try:
        if not path.stat().st_mode & stat.S_IROTH:
            return False
        return all(folder.stat().st_mode & stat.S_IXOTH for folder in path.parents)
    except OSError:
        return False


def make_reachable(folder: Path) -> None:
    """Let the sandbox user enter (not list) a directory of the tool's own."""
    mode = stat.S_IMODE(folder.stat().st_mode)
    folder.chmod(mode | stat.S_IXOTH)


def prepare(wanted: str | None, root: Path, *, places: Sequence[Path], not_owned: Sequence[Path],
            workdirs: Sequence[Path]) -> tuple[SandboxUser, PermissionHold]:  # fmt: skip
    """Everything user mode needs before the first command, proven by one: the user, its
    scratch directory (`root/rw`), and `places` kept from it (bits given back on failure)."""
    user = resolve_user(wanted)
    check_not_owned(user, not_owned)
    hold = PermissionHold(user)
    try:
        for place in places:
            hold.hide(place, keep_search=any(place in w.parents for w in workdirs))
        make_reachable(root)
        hand_over(user, root / "rw")
        problem = probe(user, root / "rw")
        if problem is not None:
            raise UserModeError(f"the sandbox user cannot run commands: {problem}")
    except BaseException:
        hold.restore()
        raise
    return user, hold


def probe(user: SandboxUser, cwd: Path) -> str | None:
    """Start one confined command; None when it ran as the user, else what went wrong."""
    script = f'[ "$(id -u)" = {user.uid} ] || {{ echo "still uid $(id -u)" >&2; exit 1; }}'
    try:
        proc = subprocess.run([*user.jail(network=False), "/bin/sh", "-c", script], cwd=cwd,
                              capture_output=True, timeout=60, check=False,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode("utf-8", errors="replace").strip()[-500:] or f"exit {proc.returncode}"
