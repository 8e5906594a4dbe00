"""The user-mode jail: runs one command as the sandbox user, with no privilege and, unless
allowed, no network. Where bubblewrap cannot create namespaces (GitHub's `docker run` for a
Docker action), the root tool starts every confined command through this script:

    python -I -S user_jail.py UID GID net|nonet -- ARGV...

Executed as a script by the tool's own interpreter (isolated, no site): standard library only.
Before it runs ARGV it
1. clears the supplementary groups and sets the real, effective and saved gid and uid: a
   process whose uids are all non-zero has no capability left (capabilities(7)), so it
   cannot read another uid's /proc/<pid>/environ or memory, signal it, or write its files;
2. sets `no_new_privs`: setuid programs (sudo, su) and file capabilities grant nothing;
3. with `nonet`, loads a seccomp filter (libseccomp): socket() fails with EACCES for every
   address family but AF_UNIX and AF_NETLINK, io_uring (which opens sockets without socket())
   is unavailable, and a call through another architecture's system-call table (i386's
   socketcall, x32) kills the process.
Any step that fails ends it with exit code 126 and a message; ARGV never runs unconfined.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import warnings  # noqa: F401 - os.execvp imports it; after the drop the stdlib may be out of reach

PR_SET_NO_NEW_PRIVS = 38
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000
SCMP_CMP_EQ, SCMP_CMP_GE = 4, 5
AF_UNIX, AF_NETLINK = 1, 16
NO_IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")


class ArgCmp(ctypes.Structure):
    """libseccomp's `struct scmp_arg_cmp`."""

    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]  # fmt: skip


def _libseccomp() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        from ctypes.util import find_library  # only here: it imports subprocess

        found = find_library("seccomp")
        if not found:
            raise OSError("libseccomp is not installed (Debian/Ubuntu: libseccomp2)") from None
        return ctypes.CDLL(found, use_errno=True)


def deny_network() -> None:
    """Load the seccomp filter described in the module docstring."""
    lib = _libseccomp()
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]  # fmt: skip
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        refuse = SCMP_ACT_ERRNO | errno.EACCES
        sock = lib.seccomp_syscall_resolve_name(b"socket")
        # Families 2..15 one by one, and everything from 17 up (a value with high bits set
        # lands there too): what is left is AF_UNSPEC, AF_UNIX and AF_NETLINK.
        rules = [(refuse, sock, ArgCmp(0, SCMP_CMP_EQ, family, 0))
                 for family in range(AF_UNIX + 1, AF_NETLINK)]  # fmt: skip
        rules.append((refuse, sock, ArgCmp(0, SCMP_CMP_GE, AF_NETLINK + 1, 0)))
        for action, number, cmp in rules:
            if lib.seccomp_rule_add_array(ctx, action, number, 1, ctypes.byref(cmp)) < 0:
                raise OSError("seccomp_rule_add failed for socket()")
        for name in NO_IO_URING:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number >= 0 and lib.seccomp_rule_add_array(
                ctx, SCMP_ACT_ERRNO | errno.ENOSYS, number, 0, None
            ) < 0:  # fmt: skip
                raise OSError(f"seccomp_rule_add failed for {name}")
        if lib.seccomp_load(ctx) < 0:
            raise OSError("seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)


def drop_to(uid: int, gid: int) -> None:
    if uid == 0 or gid == 0:
        raise OSError("the sandbox user must not be root")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if os.getuid() != uid or os.geteuid() != uid or os.getegid() != gid:
        raise OSError("the uid did not change")


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] not in ("net", "nonet") or argv[4] != "--":
        print("usage: user_jail.py UID GID net|nonet -- ARGV...", file=sys.stderr)
        return 126
    try:
        drop_to(int(argv[1]), int(argv[2]))
        if argv[3] == "nonet":
            deny_network()
    except (OSError, ValueError) as exc:
        print(f"codegen-ci: cannot confine the command: {exc}", file=sys.stderr)
        return 126
    command = argv[5:]
    try:
        os.execvp(command[0], command)  # noqa: S606 - ARGV is the confined command itself
    except OSError as exc:
        print(f"codegen-ci: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
