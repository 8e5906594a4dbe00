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
4. loads the seccomp filter (`seccomp_program`, a BPF program assembled here: the same for
   both backends): no keyring, no io_uring, no System V IPC or POSIX message queue, no
   other architecture's system calls; without `network` no inet socket at all (Landlock
   checks only TCP bind() and connect(): TCP Fast Open's sendto() and listen()'s autobind
   pass it, and it has no loopback of its own to leave them), no socket family but Unix,
   inet and netlink (NETLINK_ROUTE) ever; with `unix_sockets: false` no Unix socket at all,
   with `unix_datagram: false` no datagram one (socketpair() still works; no policy of the
   tool's sets it since the guard of step 5 checks a datagram's address too);
5. forks (security/metadata_guard.py; steps 1 to 3 are shared, step 4 is the child's): the
   child nests a Landlock domain of its own, loads the filter of step 4 and, on top, one of
   the guard's that sends the metadata calls (chmod, chown, utime, xattrs, inode-flag ioctls,
   truncate), connect() and the sends that carry an address to the parent, and execs ARGV;
   the parent, with no capability, answers those calls, performing them beneath the `write`
   paths and refusing them elsewhere (Landlock does not cover them; a named Unix socket is
   connected, or sent a datagram, only beneath them), and
   exits with ARGV's status.
With `"backend": "bwrap"` in the policy it confines nothing itself: ARGV is bubblewrap's, and
it runs it with the filter of step 4 on a descriptor (`bwrap --seccomp FD`), built for a
command with a network and IPC namespace of its own (`with_bwrap_filter`): only where the
launcher cannot run inside bubblewrap (security/sandbox.py, `start_bwrap_inside`).
With `"inside": "bwrap"` it runs inside bubblewrap, after its mounts (a Landlock domain may
not mount, so never around bwrap), and bubblewrap's mounts do the hiding: step 3 handles
write rights only (`landlock: "writes"`: writing, creating, removing, renaming and
truncating beneath the `write` paths, writing the `devices` files and what lies beneath the
`devices` directories; reading stays the mounts' to decide), so a command cannot write into a
named pipe (FIFO) of a read-only place, which a read-only mount allows; `landlock: false`
(a kernel without Landlock) skips it. Step 4 is the same filter as bwrap's (a network and IPC
namespace of its own), and step 5's guard answers connect() too, so a named Unix socket
outside the writable places is refused whenever it appeared.
Any step that fails ends it with exit code 126 and a message; ARGV never runs unconfined.
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
ARCHES = {  # machine -> (AUDIT_ARCH_*, x32 bit or 0)
    "x86_64": (0xC000003E, 0x40000000),
    "aarch64": (0xC00000B7, 0),
}
# The system calls the seccomp filter names, by machine (aarch64: the generic table). A rule
# added to the filter (`seccomp_program`'s `notify`, say) names its calls here.
SYSCALLS = {
    "x86_64": {
        "socket": 41,
        "socketpair": 53,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "shmget": 29,
        "shmat": 30,
        "shmctl": 31,
        "shmdt": 67,
        "semget": 64,
        "semop": 65,
        "semctl": 66,
        "semtimedop": 220,
        "msgget": 68,
        "msgsnd": 69,
        "msgrcv": 70,
        "msgctl": 71,
        "mq_open": 240,
        "mq_unlink": 241,
        "mq_timedsend": 242,
        "mq_timedreceive": 243,
        "mq_notify": 244,
        "mq_getsetattr": 245,
    },
    "aarch64": {
        "socket": 198,
        "socketpair": 199,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "shmget": 194,
        "shmctl": 195,
        "shmat": 196,
        "shmdt": 197,
        "semget": 190,
        "semctl": 191,
        "semtimedop": 192,
        "semop": 193,
        "msgget": 186,
        "msgctl": 187,
        "msgrcv": 188,
        "msgsnd": 189,
        "mq_open": 180,
        "mq_unlink": 181,
        "mq_timedsend": 182,
        "mq_timedreceive": 183,
        "mq_notify": 184,
        "mq_getsetattr": 185,
    },
}
# Missing (ENOSYS, as on a kernel built without them) for every confined command: the kernel's
# keyrings (one command's key readable by a later one: the session and user keyrings outlive
# it) and io_uring (it opens sockets and files without the system calls the filter sees).
KEYRING = ("add_key", "request_key", "keyctl")
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
# System V IPC and POSIX message queues: kernel objects of the IPC namespace. bubblewrap gives
# each command its own; under Landlock they would be the user's, so they are missing there.
IPC = (
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
)
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
# What a layer for write rights only handles (inside bubblewrap: its mounts decide reading).
WRITES = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
WRITES |= MAKE_FIFO | MAKE_BLOCK | MAKE_SYM | REFER | TRUNCATE

# seccomp BPF
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K, BPF_AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_USER_NOTIF = 0x7FFF0000, 0x00050000, 0x7FC00000
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
NETLINK_ROUTE = 0
SOCK_DGRAM, SOCK_TYPE_MASK = 2, 0xF  # the type without SOCK_NONBLOCK, SOCK_CLOEXEC
# seccomp_data: nr at 0, arch at 4, then the arguments, 8 bytes each, from 16; the low 32 bits
# of an argument come first (little-endian, both machines).
NR, ARCH = 0, 4
ARG = (16, 24, 32, 40, 48, 56)


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


def landlock_writes(libc: ctypes.CDLL, policy: dict[str, object], abi: int) -> None:
    """Step 3 inside bubblewrap: a layer that handles write rights only, granting them beneath
    the `write` paths (all but making device nodes) and, for the `devices` paths, writing and
    truncating (what lies beneath a directory among them: `/dev/pts`, `/proc`). With ABI 6
    and up it scopes abstract Unix sockets too: the guard, which connects and sends for the
    command, then reaches no more of them than the command's own nested domain (with the
    network, bubblewrap shares the host's network namespace and its abstract names)."""
    handled = FS_BY_ABI[min(abi, 5)] & WRITES
    attr = struct.pack("=Q", handled)
    if abi >= 6:
        attr += struct.pack("=QQ", 0, SCOPE_ABSTRACT_UNIX_SOCKET)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        libc.syscall(
            SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        ),
        "landlock_create_ruleset (writes)",
    )
    try:
        for key, rights in (("write", WRITE), ("devices", DEVICE)):
            for path in _paths(policy, key):
                _add_path(libc, ruleset, path, rights & handled)
        _check(
            libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)),
            "landlock_restrict_self (writes)",
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


def seccomp_program(
    *,
    network: bool,
    own_network: bool = False,
    own_ipc: bool = False,
    unix_sockets: bool = True,
    unix_datagram: bool = True,
    notify: tuple[str, ...] = (),
) -> list[tuple[int, ...]]:
    """The seccomp filter every confined command runs under, on both backends, as BPF
    instructions (code, jt, jf, k). In order:
    - a system call through another architecture's table (i386, x32) fails (ENOSYS): the
      rules below name this machine's numbers only;
    - missing (ENOSYS): the keyrings and io_uring, and System V IPC and POSIX message queues
      unless `own_ipc` (bubblewrap's IPC namespace);
    - `notify`: these system calls (names in `SYSCALLS`) go to a supervisor
      (SECCOMP_RET_USER_NOTIF; the filter must then be loaded with a listener);
    - socket(): Unix sockets unless `unix_sockets` is False (Landlock before ABI 6 where an
      abstract socket listens outside), and datagram ones unless `unix_datagram` is False
      too (a policy without a guard for datagrams' addresses; the tool's own never set it:
      the metadata guard checks them);
      netlink for NETLINK_ROUTE only (interfaces and addresses, as getaddrinfo reads them);
      inet (every type: TCP, UDP, raw, SCTP, MPTCP; TCP Fast Open and listen()'s autobind
      included) only with the `network` or in a network namespace of the command's own
      (`own_network`, bubblewrap: its own loopback); every other family (packet, vsock,
      Bluetooth, CAN, TIPC, RDS, XDP, ALG, ...) never: EACCES;
    - socketpair(): Unix only."""
    machine = os.uname().machine
    arch, x32 = ARCHES[machine]
    numbers = SYSCALLS[machine]
    allow = (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)
    refuse = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EACCES)
    missing = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)
    prog: list[tuple[int, ...]] = [
        (BPF_LD_W_ABS, 0, 0, ARCH),
        (BPF_JEQ_K, 1, 0, arch),
        missing,
        (BPF_LD_W_ABS, 0, 0, NR),
    ]
    if x32:
        prog += [(BPF_JGE_K, 0, 1, x32), missing]
    for name in (*KEYRING, *IO_URING, *(() if own_ipc else IPC)):
        prog += [(BPF_JEQ_K, 0, 1, numbers[name]), missing]
    for name in notify:
        prog += [(BPF_JEQ_K, 0, 1, numbers[name]), (BPF_RET_K, 0, 0, SECCOMP_RET_USER_NOTIF)]
    inet: list[tuple[int, ...]] = [allow] if network or own_network else [refuse]
    netlink: list[tuple[int, ...]] = [
        (BPF_LD_W_ABS, 0, 0, ARG[2]),
        (BPF_JEQ_K, 0, 1, NETLINK_ROUTE),
        allow,
        refuse,
    ]
    families = [
        (AF_UNIX, _unix(unix_sockets=unix_sockets, unix_datagram=unix_datagram)),
        (AF_NETLINK, netlink),
        (AF_INET, inet),
        (AF_INET6, inet),
    ]
    sockets: list[tuple[int, ...]] = [(BPF_LD_W_ABS, 0, 0, ARG[0])]
    for family, block in families:
        sockets += [(BPF_JEQ_K, 0, len(block), family), *block]
    sockets.append(refuse)
    pairs = [(BPF_LD_W_ABS, 0, 0, ARG[0]), (BPF_JEQ_K, 0, 1, AF_UNIX), allow, refuse]
    prog += [(BPF_JEQ_K, 0, len(sockets), numbers["socket"]), *sockets]
    prog += [(BPF_JEQ_K, 0, len(pairs), numbers["socketpair"]), *pairs]
    return [*prog, allow]


def _unix(*, unix_sockets: bool, unix_datagram: bool) -> list[tuple[int, ...]]:
    allow = (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)
    refuse = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EACCES)
    if not unix_sockets:
        return [refuse]
    if unix_datagram:
        return [allow]
    return [
        (BPF_LD_W_ABS, 0, 0, ARG[1]),
        (BPF_AND_K, 0, 0, SOCK_TYPE_MASK),
        (BPF_JEQ_K, 0, 1, SOCK_DGRAM),
        refuse,
        allow,
    ]


def policy_program(policy: dict[str, object]) -> list[tuple[int, ...]]:
    """The filter for a policy: `network`, `unix_sockets` and `unix_datagram` (default
    true; `unix_datagram` false refuses datagram Unix sockets only), `notify` (system
    call names), and `backend`: "bwrap" gives the command a network and IPC namespace of its
    own (`own_network`, `own_ipc`), anything else (Landlock) none."""
    notify = policy.get("notify", [])
    if not isinstance(notify, list) or not all(isinstance(n, str) for n in notify):
        raise ConfineError("policy: notify must be a list of system call names")
    unknown = set(notify) - set(SYSCALLS.get(os.uname().machine, {}))
    if unknown:
        raise ConfineError(f"policy: notify names unknown system calls {sorted(unknown)}")
    bwrap = policy.get("backend") == "bwrap" or _inside_bwrap(policy)
    return seccomp_program(
        network=bool(policy.get("network")),
        own_network=bwrap,
        own_ipc=bwrap,
        unix_sockets=bool(policy.get("unix_sockets", True)),
        unix_datagram=bool(policy.get("unix_datagram", True)),
        notify=tuple(notify),
    )


def _inside_bwrap(policy: dict[str, object]) -> bool:
    return policy.get("inside") == "bwrap"


def compiled(program: list[tuple[int, ...]]) -> bytes:
    """The program as the kernel (and `bwrap --seccomp`) takes it: an array of BPF instructions."""
    if len(program) > 4096:
        raise ConfineError("seccomp program too long")
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


def load_seccomp(libc: ctypes.CDLL, program: list[tuple[int, ...]]) -> None:
    raw = compiled(program)
    filters = ctypes.create_string_buffer(raw, len(raw))
    fprog = ctypes.create_string_buffer(
        struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters)), 16
    )
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")


def with_bwrap_filter(policy: dict[str, object], command: list[str]) -> list[str]:
    """bubblewrap's argv `command` with the filter for `policy` given to it on a descriptor
    (`--seccomp FD`: bwrap reads it, closes it, and loads it right before it execs the
    confined command, after no_new_privs)."""
    if os.uname().machine not in ARCHES:
        raise ConfineError(f"unsupported architecture {os.uname().machine}")
    raw = compiled(policy_program(policy))
    fd = os.memfd_create("codegen-ci-seccomp", 0)  # inherited across exec: bwrap reads it
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return [command[0], "--seccomp", str(fd), *command[1:]]


def confine(policy: dict[str, object], guard: ModuleType) -> int:
    """Steps 1 to 3, for the supervisor and the command alike; the kernel's Landlock ABI."""
    if os.uname().machine not in ARCHES:
        raise ConfineError(f"unsupported architecture {os.uname().machine}")
    libc = _libc()
    abi = abi_version(libc)
    layer = policy.get("landlock", True)
    if layer not in (True, False, "writes"):
        raise ConfineError('policy: landlock must be true, false or "writes"')
    if abi < 1 and layer:
        raise ConfineError("the kernel has no Landlock (Linux 5.13+, lsm=landlock)")
    no_new_privs(libc)
    drop_capabilities(libc)
    if layer is True:
        landlock(libc, policy, abi)
    elif layer == "writes":
        landlock_writes(libc, policy, abi)
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
    layer, inside = policy.get("landlock", True), _inside_bwrap(policy)
    if layer:
        nest(libc, abi)
    # `landlock: false` alone: inside bubblewrap, which loaded the filter of step 4 itself
    if layer is True or inside:
        load_seccomp(libc, policy_program(policy))
    try:
        # connect() too: neither Landlock nor a read-only mount stops one to a named socket
        connect = layer is True or inside
        listener: int | None = guard.load_with_listener(libc, os.uname().machine, connect=connect)
    except OSError as exc:
        raise ConfineError(str(exc)) from None
    return listener


def nest(libc: ctypes.CDLL, abi: int) -> None:
    """A second Landlock layer that takes nothing more away (device nodes are refused
    already; with ABI 6, signals and abstract sockets outside too): the command's domain is
    then a child of the supervisor's, which it can neither ptrace nor (ABI 6) signal.
    Landlock refuses reparenting (a rename or link into another directory: EXDEV) in every
    layer that does not grant REFER, handled or not, so with ABI 2 and up this layer handles
    REFER and grants it everywhere: the first layer's rules (REFER beneath the writable
    places only) still decide; without it rustc's rename of deps/rmetaXXXX/full.rmeta into
    deps/ failed (EXDEV)."""
    handled = MAKE_BLOCK | (REFER if abi >= 2 else 0)
    attr = struct.pack("=Q", handled)
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
        if abi >= 2:
            _add_path(libc, ruleset, "/", REFER)
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
    command, backend = argv[3:], "landlock"
    try:
        policy = json.loads(argv[1])
        if not isinstance(policy, dict):
            raise ConfineError("policy: not an object")
        if policy.get("backend") == "bwrap":  # ARGV is bwrap's: it applies the filter
            backend = "bwrap"
            command = with_bwrap_filter(policy, command)
        else:
            writable = _paths(policy, "write")
            guard = load_guard()
            abi = confine(policy, guard)
    except (ConfineError, ValueError, OSError) as exc:
        print(f"codegen-ci: cannot confine the command ({backend}): {exc}", file=sys.stderr)
        return 126
    if backend == "bwrap":
        try:
            os.execvp(command[0], command)  # noqa: S606 - ARGV is bwrap confining the command
        except OSError as exc:
            print(f"codegen-ci: cannot run {command[0]}: {exc}", file=sys.stderr)
            return 127
    return int(
        guard.supervise(
            lambda: confine_command(policy, abi, guard),
            command,
            writable,
            os.uname().machine,
            # no Unix socket of its own: no abstract name either, for a socketpair()'s datagram
            # socket sent or connected through the guard (an abstract one listens outside)
            abstract=bool(policy.get("unix_sockets", True)),
        )
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
