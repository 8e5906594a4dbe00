"""The Landlock launcher: confines itself, then becomes one command. Where bubblewrap cannot
start, every confined command starts through it, run by the tool's own interpreter:

    python -I -S landlock_exec.py POLICY_JSON -- ARGV...

Executed as a script (isolated, no site): standard library only, no import of codegen_ci, so
nothing the confined side could have shaped is imported. Before it runs ARGV it
1. starts a new session (no controlling terminal: no TIOCSTI into the user's shell) and sets
   `no_new_privs` (setuid programs and file capabilities grant nothing);
2. empties the capability bounding set and the ambient set when it may (root in a container):
   the command, even as uid 0, execs with no capability;
3. restricts itself with Landlock (the kernel's ABI, 1 and up): reading and executing only
   beneath the policy's `read` paths, writing (creating, removing, renaming, truncating) only
   beneath its `write` paths, never making device nodes, only listing `list` directories, and
   the `devices` files read and written; with ABI 4 and up no TCP bind or connect unless
   `network`; with ABI 6 and up no signal to, and no abstract Unix socket of, any process
   outside the sandbox. Landlock also refuses ptrace (so `/proc/<pid>/environ` and `mem`) of
   every process outside;
4. loads a seccomp filter (a BPF program assembled here, checking the architecture): without
   `network`, socket() fails with EACCES for every family but Unix and netlink, and for TCP too
   where Landlock has no network rules (ABI < 4); with them, inet sockets other than plain TCP
   (UDP, raw, SCTP, MPTCP) are refused, so Landlock's TCP rules decide; io_uring (which opens
   sockets without socket()) is missing; a system call through another architecture's table
   (i386, x32) fails. With `unix_stream: false` (a container engine's socket is reachable on
   this machine: Landlock cannot stop a connect() to a named socket) stream Unix sockets are
   refused as well (socketpair() still works);
5. forks (security/metadata_guard.py; steps 1 to 3 are shared, step 4 is the child's): the
   child nests a Landlock domain of its own, loads the filter of step 4 and, on top, one of
   the guard's that sends the metadata calls (chmod, chown, utime, xattrs, inode-flag ioctls,
   truncate) and connect() to the parent, and execs ARGV; the parent, with no capability,
   answers those calls, performing them beneath the `write` paths and refusing them elsewhere
   (Landlock does not cover them), and exits with ARGV's status.
With `landlock: false` (inside bubblewrap, whose mounts do the rest) steps 3 and the nested
domain are skipped: only the filter and its supervisor. Any step that fails ends it with exit
code 126 and a message; ARGV never runs unconfined.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import stat
import struct
import sys
from importlib.machinery import SourceFileLoader
from types import ModuleType

# System call numbers: the same on x86_64 and aarch64 (the generic table) for these three.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
ARCHES = {  # machine -> (AUDIT_ARCH_*, socket, x32 bit or 0)
    "x86_64": (0xC000003E, 41, 0x40000000),
    "aarch64": (0xC00000B7, 198, 0),
}
IO_URING = (425, 426, 427)  # io_uring_setup, _enter, _register (both tables)
LANDLOCK_CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 38, 22, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 4, 2
O_PATH = 0o10000000

# Filesystem access rights by the ABI that added them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {
    1: (1 << 13) - 1,
    2: (1 << 14) - 1,
    3: (1 << 15) - 1,
    4: (1 << 15) - 1,
    5: (1 << 16) - 1,
}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a file rule may hold
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = ((1 << 16) - 1) & ~(MAKE_CHAR | MAKE_BLOCK)  # everything but making device nodes
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV

# seccomp BPF
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K, BPF_AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 5, 0xF
IPPROTO_TCP = 6


class ConfineError(Exception):
    """A confinement step failed: the command must not run."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise ConfineError(f"{what}: {os.strerror(err)} (errno {err})")
    return result


def abi_version(libc: ctypes.CDLL) -> int:
    """The kernel's Landlock ABI; 0 when it has none (or it is disabled at boot)."""
    version = libc.syscall(
        SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


def no_new_privs(libc: ctypes.CDLL) -> None:
    with_session()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def with_session() -> None:
    with contextlib.suppress(OSError):  # already a leader: it has no other session's terminal
        os.setsid()


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """Empty the bounding and ambient sets: after exec, even uid 0 holds no capability. Only a
    process that holds CAP_SETPCAP may (and, holding any, must) do this."""
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if not _has_capabilities():
        return
    last = int(_read("/proc/sys/kernel/cap_last_cap") or "40")
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(PR_CAPBSET_DROP, {cap})")


def _has_capabilities() -> bool:
    for line in (_read("/proc/self/status") or "").splitlines():
        if line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16):
            return True
    return False


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return None


def landlock(libc: ctypes.CDLL, policy: dict[str, object], abi: int) -> None:
    """Steps 3 of the module docstring."""
    handled_fs = FS_BY_ABI[min(abi, 5)]
    attr = struct.pack("=Q", handled_fs)
    if abi >= 4:  # no rule for any port: handled means refused; with the network, not handled
        attr += struct.pack("=Q", 0 if policy.get("network") else NET_BIND_TCP | NET_CONNECT_TCP)
    if abi >= 6:
        attr += struct.pack("=Q", SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        libc.syscall(
            SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        ),
        "landlock_create_ruleset",
    )
    try:
        for key, rights in (
            ("read", READ),
            ("list", READ_DIR),
            ("write", READ | WRITE),
            ("devices", DEVICE),
        ):
            for path in _paths(policy, key):
                _add_path(libc, ruleset, path, rights & handled_fs)
        _check(
            libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)


def _paths(policy: dict[str, object], key: str) -> list[str]:
    value = policy.get(key, [])
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ConfineError(f"policy: {key} must be a list of paths")
    return value


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:  # the tool resolved every path: a link here was swapped in since, and grants nothing
        fd = os.open(path, O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return  # a place that does not exist grants nothing
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            return
        if not stat.S_ISDIR(mode):
            rights &= FILE_RIGHTS
        if not rights:
            return
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        _check(
            libc.syscall(
                SYS_LANDLOCK_ADD_RULE,
                ruleset,
                ctypes.c_uint32(RULE_PATH_BENEATH),
                attr,
                ctypes.c_uint32(0),
            ),
            f"landlock_add_rule({path})",
        )
    finally:
        os.close(fd)


def seccomp_program(*, network: bool, abi: int, unix_stream: bool) -> list[tuple[int, ...]]:
    """Step 4 of the module docstring, as BPF instructions (code, jt, jf, k)."""
    arch, sys_socket, x32 = ARCHES[os.uname().machine]
    allow = (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)
    refuse = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EACCES)
    prog: list[tuple[int, ...]] = [
        (BPF_LD_W_ABS, 0, 0, 4),  # arch
        (BPF_JEQ_K, 1, 0, arch),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
        (BPF_LD_W_ABS, 0, 0, 0),  # nr
    ]
    if x32:
        prog += [(BPF_JGE_K, 0, 1, x32), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    for number in IO_URING:
        prog += [(BPF_JEQ_K, 0, 1, number), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    prog += [(BPF_JEQ_K, 1, 0, sys_socket), allow]
    # socket(family, type, protocol): the low 32 bits of each argument (little-endian)
    prog += [(BPF_LD_W_ABS, 0, 0, 16)]
    unix = (
        [allow]
        if unix_stream
        else [
            (BPF_LD_W_ABS, 0, 0, 24),
            (BPF_AND_K, 0, 0, SOCK_TYPE_MASK),
            (BPF_JEQ_K, 2, 0, SOCK_STREAM),
            (BPF_JEQ_K, 1, 0, SOCK_SEQPACKET),
            allow,
            refuse,
        ]
    )
    prog += [(BPF_JEQ_K, 0, len(unix), AF_UNIX), *unix]
    prog += [(BPF_JEQ_K, 0, 1, AF_NETLINK), allow]
    tcp_only = [
        (BPF_LD_W_ABS, 0, 0, 24),
        (BPF_AND_K, 0, 0, SOCK_TYPE_MASK),
        (BPF_JEQ_K, 0, 4, SOCK_STREAM),
        (BPF_LD_W_ABS, 0, 0, 32),
        (BPF_JEQ_K, 1, 0, 0),
        (BPF_JEQ_K, 0, 1, IPPROTO_TCP),
        allow,
        refuse,
    ]
    if network:
        prog += [allow]  # every family: the command has the network
    elif abi >= 4:  # plain TCP is Landlock's to refuse; everything else inet is ours
        prog += [(BPF_JEQ_K, 1, 0, AF_INET), (BPF_JEQ_K, 0, len(tcp_only), AF_INET6), *tcp_only]
        prog += [refuse]
    else:
        prog += [refuse]
    return prog


def load_seccomp(libc: ctypes.CDLL, program: list[tuple[int, ...]]) -> None:
    if len(program) > 4096:
        raise ConfineError("seccomp program too long")
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in program)
    filters = ctypes.create_string_buffer(raw, len(raw))
    fprog = ctypes.create_string_buffer(
        struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters)), 16
    )
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")


def confine(policy: dict[str, object], guard: ModuleType) -> int:
    """Steps 1 to 3, for the supervisor and the command alike; the kernel's Landlock ABI."""
    if os.uname().machine not in ARCHES:
        raise ConfineError(f"unsupported architecture {os.uname().machine}")
    libc = _libc()
    abi = abi_version(libc)
    if abi < 1 and policy.get("landlock", True):
        raise ConfineError("the kernel has no Landlock (Linux 5.13+, lsm=landlock)")
    no_new_privs(libc)
    drop_capabilities(libc)
    if policy.get("landlock", True):
        landlock(libc, policy, abi)
    try:
        guard.drop_all_capabilities(libc, os.uname().machine)
    except OSError as exc:
        raise ConfineError(str(exc)) from None
    return abi


def confine_command(policy: dict[str, object], abi: int, guard: ModuleType) -> int | None:
    """In the command's process, after the fork: a Landlock domain of its own inside the
    supervisor's (so it can neither ptrace nor signal it), step 4, and a second filter that
    sends the metadata calls to the supervisor (a call the first refuses stays refused: the
    kernel takes the stricter answer); that filter's listener, or None (an outer launcher's
    supervisor already answers these calls, for its wider places)."""
    libc = _libc()
    if policy.get("landlock", True):
        nest(libc, abi)
    network, unix_stream = bool(policy.get("network")), bool(policy.get("unix_stream", True))
    load_seccomp(libc, seccomp_program(network=network, abi=abi, unix_stream=unix_stream))
    try:
        # under Landlock, connect() too: Landlock does not stop one to a named Unix socket
        connect = bool(policy.get("landlock", True))
        listener: int | None = guard.load_with_listener(libc, os.uname().machine, connect=connect)
    except OSError as exc:
        raise ConfineError(str(exc)) from None
    return listener


def nest(libc: ctypes.CDLL, abi: int) -> None:
    """A second Landlock layer that takes nothing more away (device nodes are refused
    already; with ABI 6, signals and abstract sockets outside too): the command's domain is
    then a child of the supervisor's, which it can neither ptrace nor (ABI 6) signal."""
    attr = struct.pack("=Q", MAKE_BLOCK)
    if abi >= 4:
        attr += struct.pack("=Q", 0)
    if abi >= 6:
        attr += struct.pack("=Q", SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        libc.syscall(
            SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        ),
        "landlock_create_ruleset (nested)",
    )
    try:
        _check(
            libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)),
            "landlock_restrict_self (nested)",
        )
    finally:
        os.close(ruleset)


def load_guard() -> ModuleType:
    """security/metadata_guard.py, loaded from beside this file (run as a script with -I, this
    launcher has no import path; it imports nothing a confined command could have shaped)."""
    here = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120 - no pathlib here
    path = os.path.join(here, "metadata_guard.py")  # noqa: PTH118
    loader = SourceFileLoader("codegen_ci_metadata_guard", path)  # its cached bytecode too
    module = ModuleType(loader.name)
    module.__file__, module.__loader__ = path, loader
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: landlock_exec.py POLICY_JSON -- ARGV...", file=sys.stderr)
        return 126
    try:
        policy = json.loads(argv[1])
        if not isinstance(policy, dict):
            raise ConfineError("policy: not an object")
        writable = _paths(policy, "write")
        guard = load_guard()
        abi = confine(policy, guard)
    except (ConfineError, ValueError, OSError) as exc:
        print(f"codegen-ci: cannot confine the command (landlock): {exc}", file=sys.stderr)
        return 126
    return int(
        guard.supervise(
            lambda: confine_command(policy, abi, guard), argv[3:], writable, os.uname().machine
        )
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
