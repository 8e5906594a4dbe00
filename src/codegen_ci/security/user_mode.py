"""User mode: confinement by a dedicated unprivileged user, where bubblewrap cannot create
namespaces (GitHub runs a Docker action's container with Docker's default seccomp profile, so
no `unshare`, not even for root). The tool stays root; each command runs under
`user_jail.py` as the sandbox user (no groups, no capabilities, `no_new_privs`, no network
unless allowed: see there), and touches only what security/user_access.py lets it. The run
refuses to start when the sandbox user owns the repository or its git directory, or any place
it should not read: ownership would undo all of that.
"""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Sequence
from pathlib import Path

from codegen_ci.security.user_access import (
    PermissionHold,
    SandboxUser,
    UserModeError,
    check_not_owned,
    hand_over,
    make_reachable,
)

USER_ENV = "CODEGEN_SANDBOX_USER"  # a user name, a uid, or uid:gid; default below
DEFAULT_USER = "codegen-sandbox"  # created by the Dockerfile


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
        for folder in {w.parent for w in workdirs}:  # the run's private folder (0700): entered
            make_reachable(folder)  # by the sandbox user to reach its worktree, never listed
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
