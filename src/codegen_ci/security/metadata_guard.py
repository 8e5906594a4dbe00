"""The Landlock launcher's supervisor for metadata writes: Landlock refuses writing, creating,
removing and renaming outside the writable places, but not changing what a file is: its mode
(`chmod`), owner (`chown`), times (`utime`), extended attributes (`setxattr`) or inode flags
(`chattr`), nor, before its ABI 3, `truncate()` of a path. Without this, a confined command
could make a HOME credential world-readable or `.git/hooks` world-writable. Nor does
Landlock (or a read-only mount) refuse a connect() to a named Unix socket, or a datagram sent
to one by its path (sendto, sendmsg, sendmmsg): the supervisor answers those too.

How (run inside the launcher, security/landlock_exec.py; standard library only, loaded by
path, never through codegen_ci):
1. The launcher forks. The child loads its seccomp filter with the calls below returning
   SECCOMP_RET_USER_NOTIF (`notify_rules`, `send_rules`; flag NEW_LISTENER), hands the
   listener to the parent over a socketpair (SCM_RIGHTS, from a thread started before the
   filter: the filter sends sendmsg() here) and execs the command. Every process the command
   starts inherits the filter, so every such call in the whole tree comes here.
2. The parent (the *supervisor*: no capability, not dumpable, in a Landlock domain the
   command's nests inside, so the command can neither ptrace nor, from ABI 6, signal it; a
   child subreaper, so every process of the tree stays its descendant and readable to it
   under Yama) answers each notification: it pins the caller (`/proc/<pid>` as a directory
   fd, then SECCOMP_IOCTL_NOTIF_ID_VALID), reads the path, name, value or times from the
   caller's memory, opens the object itself (O_PATH, relative to the caller's cwd, root or
   descriptor, following symbolic links as the call would), checks it again (ID_VALID), and
   asks the kernel where that object is (`/proc/self/fd/N`). Beneath a writable place (or no
   name at all: a pipe, a socket, an unlinked file) it performs the call on that descriptor
   and returns its result; anywhere else it refuses with EPERM. It never lets the call itself
   continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read a path the command can change in
   between).
3. It ends when the command's first process does, with its status (or the same signal);
   whatever that process left behind is then swept by the command's reaper, and until then
   any such call of theirs fails (ENOSYS: the listener is gone).
"""

from __future__ import annotations

import _socket
import _thread
import contextlib
import ctypes
import errno
import fcntl
import os
import select
import signal
import struct
import sys
from collections.abc import Callable, Sequence

# System call numbers by machine; aarch64 has only the *at forms.
CALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "truncate": 76,
        "chmod": 90,
        "fchmod": 91,
        "chown": 92,
        "fchown": 93,
        "lchown": 94,
        "utime": 132,
        "utimes": 235,
        "fchownat": 260,
        "futimesat": 261,
        "fchmodat": 268,
        "utimensat": 280,
        "setxattr": 188,
        "lsetxattr": 189,
        "fsetxattr": 190,
        "removexattr": 197,
        "lremovexattr": 198,
        "fremovexattr": 199,
        "fchmodat2": 452,
        "setxattrat": 463,
        "removexattrat": 466,
    },
    "aarch64": {
        "setxattr": 5,
        "lsetxattr": 6,
        "fsetxattr": 7,
        "removexattr": 14,
        "lremovexattr": 15,
        "fremovexattr": 16,
        "truncate": 45,
        "fchmod": 52,
        "fchmodat": 53,
        "fchownat": 54,
        "fchown": 55,
        "utimensat": 88,
        "fchmodat2": 452,
        "setxattrat": 463,
        "removexattrat": 466,
    },
}
IOCTL = {"x86_64": 16, "aarch64": 29}
CONNECT = {"x86_64": 42, "aarch64": 203}
# The sends that may carry a destination address: a datagram makes no connect().
SENDS = {
    "x86_64": {"sendto": 44, "sendmsg": 46, "sendmmsg": 307},
    "aarch64": {"sendto": 206, "sendmsg": 211, "sendmmsg": 269},
}
PIDFD_OPEN, PIDFD_GETFD = 434, 438  # the same on both machines
TGKILL = {"x86_64": 234, "aarch64": 131}
MSG_DONTWAIT, MSG_NOSIGNAL = 0x40, 0x4000
AF_UNIX, SOCKADDR_MAX = 1, 128
SOL_SOCKET, SCM_RIGHTS, SCM_CREDENTIALS, SO_TYPE, SOCK_STREAM = 1, 1, 2, 3, 1
UIO_MAXIOV, SEND_MAX, CONTROL_MAX = 1024, 1 << 22, 1 << 16
MSGHDR = struct.Struct("=QI4xQQQQi4x")  # name, namelen, iov, iovlen, control, controllen, flags
MMSGHDR_SIZE, MSG_LEN_AT = 64, 56  # struct mmsghdr: a msghdr, then msg_len
CMSGHDR = struct.Struct("=Qii")  # cmsg_len, cmsg_level, cmsg_type; the data 8-aligned after
ARCHES = {"x86_64": (0xC000003E, 0x40000000), "aarch64": (0xC00000B7, 0)}  # AUDIT_ARCH, x32
SECCOMP = {"x86_64": 317, "aarch64": 277}
CAPSET = {"x86_64": 126, "aarch64": 91}
# ioctl commands that change an inode: FS_IOC_SETFLAGS (and its 32-bit form), FS_IOC_SETVERSION
# (both forms), FS_IOC_FSSETXATTR; with the size of what their argument points to.
INODE_IOCTLS = {0x40086602: 4, 0x40046602: 4, 0x40087602: 4, 0x40047602: 4, 0x401C5820: 28}

SECCOMP_RET_USER_NOTIF, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FC00000, 0x7FFF0000, 0x50000
SECCOMP_SET_MODE_FILTER = 1
FLAG_NEW_LISTENER, FLAG_WAIT_KILLABLE_RECV = 1 << 3, 1 << 5
NOTIF_RECV, NOTIF_SEND, NOTIF_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
NOTIF = struct.Struct("=QII iI Q 6Q")  # id, pid, flags; seccomp_data: nr, arch, ip, args
RESP = struct.Struct("=QqiI")  # id, val, error, flags
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH = -100, 0x100, 0x1000
O_PATH = 0o10000000
PATH_MAX, XATTR_NAME_MAX, XATTR_SIZE_MAX = 4096, 255, 65536
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def guard_program(machine: str, *, connect: bool) -> list[tuple[int, int, int, int]]:
    """The supervisor's own seccomp filter, loaded on top of the launcher's (the kernel runs
    both and takes the stricter answer: what that one refuses stays refused): each call of
    `CALLS`, ioctl with one of `INODE_IOCTLS` and, when `connect`, connect() return
    SECCOMP_RET_USER_NOTIF, and with it `send_rules` (a datagram's address makes no
    connect()); another architecture's table fails (ENOSYS); everything else is allowed."""
    arch, x32 = ARCHES[machine]
    missing = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)
    prog = [(BPF_LD_W_ABS, 0, 0, 4), (BPF_JEQ_K, 1, 0, arch), missing, (BPF_LD_W_ABS, 0, 0, 0)]
    if x32:
        prog += [(BPF_JGE_K, 0, 1, x32), missing]
    if connect:
        prog += [(BPF_JEQ_K, 0, 1, CONNECT[machine]), (BPF_RET_K, 0, 0, SECCOMP_RET_USER_NOTIF)]
        prog += send_rules(machine)
    return [*prog, *notify_rules(machine), (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]


def send_rules(machine: str) -> list[tuple[int, int, int, int]]:
    """BPF instructions placed where the accumulator holds the system call number (and left
    holding it): sendmsg() and sendmmsg() return SECCOMP_RET_USER_NOTIF (the filter cannot see
    inside their `struct msghdr`), and sendto() when it names an address (its fifth argument
    not NULL: `send()` and `write()` on a connected socket never come here)."""
    notify = (BPF_RET_K, 0, 0, SECCOMP_RET_USER_NOTIF)
    calls = SENDS[machine]
    address = [
        (BPF_LD_W_ABS, 0, 0, 48),  # sendto's dest_addr (args[4]): its low half
        (BPF_JEQ_K, 1, 0, 0),
        notify,
        (BPF_LD_W_ABS, 0, 0, 52),  # its high half
        (BPF_JEQ_K, 1, 0, 0),
        notify,
        (BPF_LD_W_ABS, 0, 0, 0),  # the call number again
    ]
    return [
        (BPF_JEQ_K, 0, 1, calls["sendmsg"]),
        notify,
        (BPF_JEQ_K, 0, 1, calls["sendmmsg"]),
        notify,
        (BPF_JEQ_K, 0, len(address), calls["sendto"]),
        *address,
    ]


def notify_rules(machine: str) -> list[tuple[int, int, int, int]]:
    """BPF instructions placed where the accumulator holds the system call number (and left
    holding it): each call of `CALLS`, and ioctl with one of `INODE_IOCTLS`, returns
    SECCOMP_RET_USER_NOTIF."""
    notify = (BPF_RET_K, 0, 0, SECCOMP_RET_USER_NOTIF)
    prog: list[tuple[int, int, int, int]] = []
    for number in sorted(CALLS[machine].values()):
        prog += [(BPF_JEQ_K, 0, 1, number), notify]
    commands = [(BPF_JEQ_K, 0, 1, cmd) for cmd in INODE_IOCTLS]
    block = [(BPF_LD_W_ABS, 0, 0, 24)]  # ioctl(fd, cmd, arg): cmd's low 32 bits
    for insn in commands:
        block += [insn, notify]
    block += [(BPF_LD_W_ABS, 0, 0, 0)]  # the call number again
    prog += [(BPF_JEQ_K, 0, len(block), IOCTL[machine]), *block]
    return prog


# --- what a call asks for ------------------------------------------------------------------


class _Value:
    """A frozen record compared by its fields (dataclasses would cost every command's
    launcher ~30 ms of imports)."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Value) or type(other) is not type(self):
            return False
        return other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({inner})"


class ByFd(_Value):
    """The object a descriptor of the caller's refers to."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd


class ByPath(_Value):
    """A path of the caller's, relative to `dirfd` (AT_FDCWD: its cwd), the last link followed
    when `follow`; the empty path names `dirfd` itself when `empty` (AT_EMPTY_PATH)."""

    __slots__ = ("dirfd", "empty", "follow", "path")

    def __init__(self, dirfd: int, path: bytes, follow: bool = True, empty: bool = False) -> None:
        self.dirfd, self.path, self.follow, self.empty = dirfd, path, follow, empty


Target = ByFd | ByPath


class Request(_Value):
    """One metadata change (or connect), as the caller asked for it. `kind`: chmod, chown,
    utimens, setxattr, removexattr, ioctl or connect; `values`: its arguments (mode; uid, gid;
    the times as (sec, nsec) pairs or None for now; name, value, flags; name; command,
    argument bytes; the address)."""

    __slots__ = ("kind", "target", "values")

    def __init__(self, kind: str, target: Target, values: tuple[object, ...]) -> None:
        self.kind, self.target, self.values = kind, target, values


class Message(_Value):
    """One message to send, as the caller gave it: `name` the destination's address (b"":
    none), `data` its bytes (at most SEND_MAX of `whole`), `control` its ancillary data."""

    __slots__ = ("control", "data", "name", "whole")

    def __init__(self, name: bytes, data: bytes, whole: int, control: bytes) -> None:
        self.name, self.data, self.whole, self.control = name, data, whole, control


class Memory:
    """The caller's memory (through `/proc/<pid>/mem`, opened from its pinned directory)."""

    def __init__(self, read: Callable[[int, int], bytes]) -> None:
        self._read = read

    def read(self, address: int, size: int) -> bytes:
        if address == 0:
            raise OSError(errno.EFAULT, "null pointer")
        try:
            data = self._read(size, address)
        except (OSError, OverflowError, ValueError):
            raise OSError(errno.EFAULT, "unreadable") from None
        if len(data) != size:
            raise OSError(errno.EFAULT, "unreadable")
        return data

    def string(self, address: int, limit: int, too_long: int = errno.ENAMETOOLONG) -> bytes:
        """A NUL-terminated string of at most `limit` bytes, read page by page."""
        out = b""
        while len(out) <= limit:
            size = 4096 - (address % 4096)
            chunk = self.read(address, size) if size else b""
            end = chunk.find(b"\0")
            if end >= 0:
                out += chunk[:end]
                break
            out += chunk
            address += size
        if len(out) > limit:
            raise OSError(too_long, "too long")
        return out


def _fd(value: int) -> int:
    """A descriptor argument: the low 32 bits, signed (AT_FDCWD is -100)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _id(value: int) -> int:
    """A uid or gid argument: -1 (unchanged) stays -1."""
    value &= 0xFFFFFFFF
    return -1 if value == 0xFFFFFFFF else value


def _at(dirfd: int, path: bytes, flags: int) -> ByPath:
    return ByPath(
        _fd(dirfd),
        path,
        follow=not flags & AT_SYMLINK_NOFOLLOW,
        empty=bool(flags & AT_EMPTY_PATH),
    )


def _xattr_target(name: str, args: Sequence[int], path: Callable[[int], bytes]) -> Target:
    """f*xattr: a descriptor; l*xattr: a path, its last link not followed; *xattr: a path."""
    if name[0] == "f":
        return ByFd(_fd(args[0]))
    return ByPath(AT_FDCWD, path(0), follow=name[0] != "l")


def _times(memory: Memory, address: int, kind: str) -> tuple[tuple[int, int], ...] | None:
    """Access and modification times as (sec, nsec), or None (both now)."""
    if address == 0:
        return None
    if kind == "utimbuf":  # time_t actime, modtime
        actime, modtime = struct.unpack("=qq", memory.read(address, 16))
        return ((actime, 0), (modtime, 0))
    raw = struct.unpack("=qqqq", memory.read(address, 32))
    if kind == "timeval":
        for usec in (raw[1], raw[3]):
            if not 0 <= usec < 1_000_000:
                raise OSError(errno.EINVAL, "bad microseconds")
        return ((raw[0], raw[1] * 1000), (raw[2], raw[3] * 1000))
    return ((raw[0], raw[1]), (raw[2], raw[3]))


def _address(memory: Memory, address: int, size: int) -> bytes:
    """A destination address (sendto's dest_addr, a msghdr's msg_name); b"" for none."""
    size &= 0xFFFFFFFF
    if address == 0 or size == 0:
        return b""
    if size > SOCKADDR_MAX:
        raise OSError(errno.EINVAL, "address length")
    return memory.read(address, size)


def _data(memory: Memory, vectors: Sequence[tuple[int, int]]) -> tuple[bytes, int]:
    """The bytes of (base, length) pieces, at most SEND_MAX of them; and their whole length."""
    chunks: list[bytes] = []
    have = whole = 0
    for base, length in vectors:
        if length >= 1 << 63:
            raise OSError(errno.EINVAL, "length")
        whole += length
        take = min(length, SEND_MAX - have)
        if take > 0:
            chunks.append(memory.read(base, take))
            have += take
    return b"".join(chunks), whole


def _message(memory: Memory, address: int) -> Message:
    """The message a `struct msghdr` at `address` describes."""
    name, namelen, iov, iovlen, control, controllen, _ = MSGHDR.unpack(
        memory.read(address, MSGHDR.size)
    )
    if iovlen > UIO_MAXIOV:
        raise OSError(errno.EMSGSIZE, "too many pieces")
    raw = memory.read(iov, 16 * iovlen) if iovlen else b""
    data, whole = _data(memory, [struct.unpack_from("=QQ", raw, 16 * i) for i in range(iovlen)])
    if controllen > CONTROL_MAX:
        raise OSError(errno.ENOBUFS, "control")
    ancillary = memory.read(control, controllen) if controllen else b""
    return Message(_address(memory, name, namelen), data, whole, ancillary)


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def parse(name: str, args: Sequence[int], memory: Memory) -> Request:
    """The request behind system call `name` with arguments `args`, its strings and structures
    read from `memory`. Raises OSError with the errno the call itself would fail with."""
    a = args

    def path(i: int) -> bytes:
        return memory.string(a[i], PATH_MAX - 1)

    def xname(i: int) -> bytes:
        return memory.string(a[i], XATTR_NAME_MAX, errno.ERANGE)

    def value(address: int, size: int) -> bytes:
        if size > XATTR_SIZE_MAX:
            raise OSError(errno.E2BIG, "too big")
        return memory.read(address, size) if size else b""

    cwd = AT_FDCWD
    if name == "chmod":
        return Request("chmod", ByPath(cwd, path(0)), (a[1] & 0o7777,))
    if name == "fchmod":
        return Request("chmod", ByFd(_fd(a[0])), (a[1] & 0o7777,))
    if name == "fchmodat":
        return Request("chmod", ByPath(_fd(a[0]), path(1)), (a[2] & 0o7777,))
    if name == "fchmodat2":
        flags = a[3] & 0xFFFFFFFF
        if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
            raise OSError(errno.EINVAL, "flags")
        return Request("chmod", _at(a[0], path(1), flags), (a[2] & 0o7777,))
    if name in ("chown", "lchown"):
        target = ByPath(cwd, path(0), follow=name == "chown")
        return Request("chown", target, (_id(a[1]), _id(a[2])))
    if name == "fchown":
        return Request("chown", ByFd(_fd(a[0])), (_id(a[1]), _id(a[2])))
    if name == "fchownat":
        return Request("chown", _at(a[0], path(1), a[4]), (_id(a[2]), _id(a[3])))
    if name == "utime":
        return Request("utimens", ByPath(cwd, path(0)), (_times(memory, a[1], "utimbuf"),))
    if name == "utimes":
        return Request("utimens", ByPath(cwd, path(0)), (_times(memory, a[1], "timeval"),))
    if name == "futimesat":
        target = ByPath(_fd(a[0]), path(1))
        return Request("utimens", target, (_times(memory, a[2], "timeval"),))
    if name == "utimensat":
        times = _times(memory, a[2], "timespec")
        if a[1] == 0:  # futimens(fd, times)
            return Request("utimens", ByFd(_fd(a[0])), (times,))
        return Request("utimens", _at(a[0], path(1), a[3]), (times,))
    if name in ("setxattr", "lsetxattr", "fsetxattr"):
        return Request(
            "setxattr",
            _xattr_target(name, a, path),
            (xname(1), value(a[2], a[3]), a[4] & 0xFFFFFFFF),
        )
    if name in ("removexattr", "lremovexattr", "fremovexattr"):
        return Request("removexattr", _xattr_target(name, a, path), (xname(1),))
    if name == "setxattrat":  # (dirfd, path, at_flags, name, struct xattr_args *, size)
        if a[5] < 16:
            raise OSError(errno.EINVAL, "xattr_args")
        address, size, flags = struct.unpack("=QII", memory.read(a[4], 16))
        return Request(
            "setxattr", _at(a[0], path(1), a[2]), (xname(3), value(address, size), flags)
        )
    if name == "removexattrat":
        return Request("removexattr", _at(a[0], path(1), a[2]), (xname(3),))
    if name == "truncate":  # Landlock refuses it outside from ABI 3 only (Linux 6.2)
        length = a[1] - (1 << 64) if a[1] >= 1 << 63 else a[1]
        return Request("truncate", ByPath(cwd, path(0)), (length,))
    if name == "connect":  # (fd, struct sockaddr *, addrlen)
        size = a[2] & 0xFFFFFFFF
        if size > SOCKADDR_MAX or size >= 1 << 31:
            raise OSError(errno.EINVAL, "addrlen")
        return Request("connect", ByFd(_fd(a[0])), (memory.read(a[1], size) if size else b"",))
    if name == "sendto":  # (fd, buf, len, flags, dest_addr, addrlen)
        data, whole = _data(memory, [(a[1], a[2])])
        message = Message(_address(memory, a[4], a[5]), data, whole, b"")
        return Request("send", ByFd(_fd(a[0])), (_signed32(a[3]), 0, (message,)))
    if name == "sendmsg":  # (fd, struct msghdr *, flags)
        return Request("send", ByFd(_fd(a[0])), (_signed32(a[2]), 0, (_message(memory, a[1]),)))
    if name == "sendmmsg":  # (fd, struct mmsghdr *, vlen, flags): each msg_len written back
        messages: list[Message] = []
        have = 0
        for i in range(min(a[2] & 0xFFFFFFFF, UIO_MAXIOV)):
            if have >= SEND_MAX:  # the rest in the caller's next call, as a full buffer would
                break
            messages.append(_message(memory, a[1] + MMSGHDR_SIZE * i))
            have += len(messages[-1].data)
        return Request("send", ByFd(_fd(a[0])), (_signed32(a[3]), a[1], tuple(messages)))
    if name == "ioctl":
        command = a[1] & 0xFFFFFFFF
        argument = memory.read(a[2], INODE_IOCTLS[command])
        return Request("ioctl", ByFd(_fd(a[0])), (command, argument))
    raise OSError(errno.ENOSYS, name)


# --- where the object is --------------------------------------------------------------------


def allowed(where: str, links: int, writable: Sequence[str]) -> bool:
    """May a confined command change the metadata of the object the kernel names `where`
    (`/proc/self/fd/N`'s target) with `links` hard links? Yes beneath a writable place (a
    whole path component: `/w` is not beneath `/work`), and for objects no path reaches (a
    pipe or socket, `pipe:[…]`; an unlinked file or memfd, no link left); no elsewhere."""
    if not where.startswith("/"):
        return True
    if links == 0:
        return True
    for place in writable:
        root = place.rstrip("/")
        if where == root or where.startswith(root + "/") or root == "":
            return True
    return False


def unix_path(address: bytes) -> bytes | None:
    """The file a Unix socket address names; None for any other address (an inet one, an
    abstract or unnamed Unix one, AF_UNSPEC)."""
    if len(address) <= 2 or int.from_bytes(address[:2], "little") != AF_UNIX:
        return None
    path = address[2:].split(b"\0", 1)[0]
    return path or None


def is_abstract(address: bytes) -> bool:
    """Whether a socket address is an abstract Unix name (a NUL, then the name)."""
    family = int.from_bytes(address[:2], "little") if len(address) >= 2 else -1
    return family == AF_UNIX and len(address) > 2 and address[2] == 0


# --- the supervisor -------------------------------------------------------------------------


class Supervisor:
    """Answers the notifications of one listener until the command's first process ends."""

    def __init__(
        self,
        listener: int,
        child: int,
        writable: Sequence[str],
        machine: str,
        *,
        abstract: bool = True,
    ) -> None:
        self.listener = listener
        self.abstract = abstract  # False: no abstract Unix name is reached (one outside listens)
        self.child = child
        self.writable = [os.path.realpath(p) for p in writable]
        self.tgkill = TGKILL[machine]
        self.names = {number: name for name, number in CALLS[machine].items()}
        self.names[IOCTL[machine]] = "ioctl"
        self.names[CONNECT[machine]] = "connect"
        self.names.update({number: name for name, number in SENDS[machine].items()})
        self.libc = ctypes.CDLL(None, use_errno=True)

    def serve(self) -> int:
        """Serve until the child ends; its wait status."""
        poller = select.poll()
        poller.register(self.listener, select.POLLIN)
        pidfd = os.pidfd_open(self.child)
        poller.register(pidfd, select.POLLIN)
        while True:
            status = self._reap()
            if status is not None:
                return status
            try:
                events = poller.poll(1000)  # now and then: orphans that came to us end too
            except InterruptedError:
                continue
            for fd, event in events:
                if fd == self.listener and event & select.POLLIN:
                    self.answer_one()
                elif fd == self.listener and event & (select.POLLHUP | select.POLLERR):
                    poller.unregister(self.listener)  # no process of the tree is left

    def _reap(self) -> int | None:
        """Reap whatever ended (orphans come to us: we are their subreaper); the child's wait
        status once it has ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            if pid == 0:
                return None
            if pid == self.child:
                return status

    def answer_one(self) -> None:
        buf = ctypes.create_string_buffer(NOTIF.size)
        if self.libc.ioctl(self.listener, NOTIF_RECV, buf) < 0:
            return  # interrupted, or the caller was killed meanwhile
        notif_id, pid, _flags, nr, _arch, _ip, *args = NOTIF.unpack(buf.raw)
        try:
            error = self.handle(notif_id, pid, self.names.get(nr, ""), args)
        except OSError as exc:
            error = exc.errno or errno.EPERM
        except Exception:
            error = errno.EPERM
        if callable(error):  # a connect() or send, which may block: from a thread of its own
            import threading  # only a command that connects pays for it

            threading.Thread(target=self._answer_later, args=(notif_id, error), daemon=True).start()
        elif isinstance(error, tuple):  # a send made: its result
            self.send(notif_id, *error)
        elif error is not None:  # None: the caller is gone, nobody to answer
            self.send(notif_id, error)

    def _answer_later(self, notif_id: int, work: Callable[[], int | tuple[int, int]]) -> None:
        value = 0
        try:
            result = work()
            error, value = result if isinstance(result, tuple) else (result, 0)
        except OSError as exc:
            error = exc.errno or errno.EPERM
        except Exception:
            error = errno.EPERM
        self.send(notif_id, error, value)

    def send(self, notif_id: int, error: int, value: int = 0) -> None:
        """Answer: the call fails with `error`, or (0) returns `value`."""
        resp = ctypes.create_string_buffer(RESP.pack(notif_id, value, -error if error else 0, 0))
        self.libc.ioctl(self.listener, NOTIF_SEND, resp)  # ENOENT: it was killed meanwhile

    def valid(self, notif_id: int) -> bool:
        ident = ctypes.c_uint64(notif_id)
        return int(self.libc.ioctl(self.listener, NOTIF_ID_VALID, ctypes.byref(ident))) == 0

    def handle(
        self, notif_id: int, pid: int, name: str, args: Sequence[int]
    ) -> int | tuple[int, int] | Callable[[], int | tuple[int, int]] | None:
        """0, or the errno to answer (or the errno and the value to return: a send); None when
        the caller is gone; for a connect() or a send that may block the work that answers
        it."""
        try:
            proc = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        opened: list[int] = [proc]
        try:
            # /proc/<pid> as a descriptor stays that process's, whatever reuses the number:
            # once the notification is valid, everything opened through it is the caller's.
            if not self.valid(notif_id):
                return None
            mem = os.open("mem", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
            opened.append(mem)
            request = parse(name, args, Memory(lambda size, at: os.pread(mem, size, at)))
            if request.kind == "connect":
                return self.connect(notif_id, proc, request, opened)
            if request.kind == "send":
                return self.send_messages(notif_id, pid, proc, request, opened)
            target = self.open_target(proc, request.target, opened)
            if not self.valid(notif_id):
                return None
            where = os.readlink(f"/proc/self/fd/{target}")
            if not allowed(where, os.fstat(target).st_nlink, self.writable):
                return errno.EPERM
            if isinstance(request.target, ByFd) and _is_path_only(proc, request.target.fd):
                return errno.EBADF  # f*() on an O_PATH descriptor
            self.perform(request, target, opened)
            return 0
        finally:
            for fd in opened:
                os.close(fd)

    def connect(
        self, notif_id: int, proc: int, request: Request, opened: list[int]
    ) -> int | Callable[[], int] | None:
        """connect() on the caller's socket itself (a duplicate of its descriptor), to the
        address it gave: a Unix socket's file only beneath a writable place (reached through
        our own descriptor of that file, so a link swapped in meanwhile leads nowhere else);
        any other address as given (Landlock's rules, the same for us, decide on TCP)."""
        assert isinstance(request.target, ByFd)
        address = request.values[0]
        assert isinstance(address, bytes)
        if not self.abstract and is_abstract(address):
            return errno.EACCES
        sock = self._socket_of(proc, request.target.fd)
        opened.append(sock)
        path = unix_path(address)
        target = None
        if path is not None:
            target = self.open_target(proc, ByPath(AT_FDCWD, path), opened)
        if not self.valid(notif_id):
            return None
        if target is not None:
            where = os.readlink(f"/proc/self/fd/{target}")
            if not allowed(where, os.fstat(target).st_nlink, self.writable):
                return errno.EACCES
            family = struct.pack("=H", AF_UNIX)
            address = family + f"/proc/self/fd/{target}".encode() + b"\0"
            opened.remove(target)
        opened.remove(sock)
        mine = [fd for fd in (sock, target) if fd is not None]

        def work() -> int:
            try:
                buf = ctypes.create_string_buffer(address, len(address))
                if self.libc.connect(sock, buf, len(address)) < 0:
                    return ctypes.get_errno()
                return 0
            finally:
                for fd in mine:
                    os.close(fd)

        return work

    def send_messages(
        self, notif_id: int, pid: int, proc: int, request: Request, opened: list[int]
    ) -> int | tuple[int, int] | Callable[[], tuple[int, int]] | None:
        """sendto(), sendmsg() or sendmmsg(), made by us on the caller's socket itself (a
        duplicate of its descriptor) with the caller's bytes, flags and ancillary data (the
        descriptors it passes duplicated too), to the address it gave under connect()'s rule:
        a named Unix socket only beneath a writable place (reached through our own descriptor
        of its file, so a link or a path changed meanwhile leads nowhere else), any other
        address as given. Never let through: the caller could change the address in its memory,
        or the socket behind its descriptor, between our look and the kernel's."""
        assert isinstance(request.target, ByFd)
        flags, vector, messages = request.values
        assert isinstance(flags, int) and isinstance(vector, int) and isinstance(messages, tuple)
        start = len(opened)
        sock = self._socket_of(proc, request.target.fd)
        opened.append(sock)
        stream = self._socket_type(sock) == SOCK_STREAM
        ready: list[tuple[bytes, bytes, bytes]] = []
        refusal = 0
        for message in messages:
            assert isinstance(message, Message)
            try:
                ready.append(self._ready(proc, message, stream, opened))
            except OSError as exc:  # the messages before it are sent, as the kernel would
                refusal = exc.errno or errno.EPERM
                break
        if refusal and not ready:
            return refusal
        if not self.valid(notif_id):
            return None
        tgid = self._tgid(proc)
        mine = opened[start:]
        del opened[start:]
        done = [0, 0]  # messages sent, the last one's result

        def attempt(now: bool) -> tuple[int, int] | None:
            """Send what is left; None when `now` and a datagram would have to wait."""
            extra = MSG_NOSIGNAL | (MSG_DONTWAIT if now else 0)
            for i in range(done[0], len(ready)):
                name, data, control = ready[i]
                result = self._sendmsg(sock, name, data, control, flags | extra)
                if result < 0:
                    error = ctypes.get_errno()
                    if now and error == errno.EAGAIN and not flags & MSG_DONTWAIT:
                        return None  # the caller's socket may block: a thread waits for it
                    if error == errno.EPIPE and not flags & MSG_NOSIGNAL and done[0] == 0:
                        self._pipe_signal(notif_id, tgid, pid)  # the kernel's, to the caller
                    return (error, 0) if done[0] == 0 else (0, done[0])
                if vector:  # sendmmsg: each msg_len, as the kernel writes it
                    where = vector + MMSGHDR_SIZE * i + MSG_LEN_AT
                    self._write_memory(notif_id, pid, where, struct.pack("=I", result))
                done[0], done[1] = i + 1, result
            return 0, done[0] if vector else done[1]

        def close() -> None:
            for fd in mine:
                os.close(fd)

        if not stream:  # a datagram goes whole or not at all: most go at once, no thread
            try:
                answer = attempt(now=True)
            except BaseException:
                close()
                raise
            if answer is not None:
                close()
                return answer

        def work() -> tuple[int, int]:
            try:
                answer = attempt(now=False)
                assert answer is not None
                return answer
            finally:
                close()

        return work

    def _ready(
        self, proc: int, message: Message, stream: bool, opened: list[int]
    ) -> tuple[bytes, bytes, bytes]:
        """The address, bytes and ancillary data we send for `message`."""
        if message.whole > len(message.data) and not stream:
            raise OSError(errno.EMSGSIZE, "too long")  # a datagram is never cut
        name = message.name
        if not self.abstract and is_abstract(name):
            raise OSError(errno.EACCES, "abstract")
        path = unix_path(name)
        if path is not None:
            target = self.open_target(proc, ByPath(AT_FDCWD, path), opened)
            where = os.readlink(f"/proc/self/fd/{target}")
            if not allowed(where, os.fstat(target).st_nlink, self.writable):
                raise OSError(errno.EACCES, "outside")
            name = struct.pack("=H", AF_UNIX) + f"/proc/self/fd/{target}".encode() + b"\0"
        control = bytearray(message.control)
        at = 0
        while at + CMSGHDR.size <= len(control):
            length, level, kind = CMSGHDR.unpack_from(control, at)
            if length < CMSGHDR.size or at + length > len(control):
                raise OSError(errno.EINVAL, "control")
            if level == SOL_SOCKET and kind == SCM_RIGHTS:  # the caller's descriptors: ours
                for place in range(at + CMSGHDR.size, at + length - 3, 4):
                    (theirs,) = struct.unpack_from("=i", control, place)
                    ours = self._socket_of(proc, theirs)
                    opened.append(ours)
                    struct.pack_into("=i", control, place, ours)
            elif level == SOL_SOCKET and kind == SCM_CREDENTIALS and length >= CMSGHDR.size + 4:
                # the caller's own pid becomes ours (the kernel checks it against the sender's,
                # and a receiver asking for credentials sees the sender's: ours); uid and gid
                # are checked by the kernel as they are
                (claimed,) = struct.unpack_from("=i", control, at + CMSGHDR.size)
                if claimed == self._tgid(proc):
                    struct.pack_into("=i", control, at + CMSGHDR.size, os.getpid())
            at += (length + 7) & ~7
        return name, message.data, bytes(control)

    def _pipe_signal(self, notif_id: int, tgid: int, tid: int) -> None:
        """SIGPIPE to the calling thread, as the kernel sends it for a send on a closed
        connection without MSG_NOSIGNAL (we send with it: the signal is the caller's)."""
        if self.valid(notif_id):
            self.libc.syscall(self.tgkill, tgid, tid, signal.SIGPIPE)

    def _write_memory(self, notif_id: int, pid: int, address: int, data: bytes) -> None:
        """Write `data` into the waiting caller's memory (process_vm_writev: writing its
        `/proc/<pid>/mem` is a write beneath /proc, which our Landlock domain refuses); only
        while the notification is valid, so `pid` is still the caller's."""
        local = ctypes.create_string_buffer(data, len(data))
        here = (ctypes.c_uint64 * 2)(ctypes.addressof(local), len(data))
        there = (ctypes.c_uint64 * 2)(address, len(data))
        if self.valid(notif_id):
            self.libc.process_vm_writev(pid, here, 1, there, 1, 0)

    def _socket_type(self, sock: int) -> int:
        value, size = ctypes.c_int(0), ctypes.c_uint32(4)
        getsockopt = self.libc.getsockopt
        self._check(getsockopt(sock, SOL_SOCKET, SO_TYPE, ctypes.byref(value), ctypes.byref(size)))
        return value.value

    def _sendmsg(self, sock: int, name: bytes, data: bytes, control: bytes, flags: int) -> int:
        """sendmsg() of one message on our socket; its result (-1: see errno)."""
        keep = [ctypes.create_string_buffer(b, len(b) or 1) for b in (name, data, control)]
        iov = (ctypes.c_uint64 * 2)(ctypes.addressof(keep[1]), len(data))
        header = MSGHDR.pack(
            ctypes.addressof(keep[0]) if name else 0,
            len(name),
            ctypes.addressof(iov),
            1,
            ctypes.addressof(keep[2]) if control else 0,
            len(control),
            0,
        )
        msghdr = ctypes.create_string_buffer(header, len(header))
        return int(self.libc.sendmsg(sock, msghdr, ctypes.c_int(flags)))

    def _socket_of(self, proc: int, fd: int) -> int:
        """Our duplicate of the caller's descriptor `fd` (pidfd_getfd: the same open socket)."""
        pidfd = int(self.libc.syscall(PIDFD_OPEN, self._tgid(proc), 0))
        if pidfd < 0:
            raise OSError(ctypes.get_errno(), "pidfd_open")
        try:
            dup = int(self.libc.syscall(PIDFD_GETFD, pidfd, fd, 0))
            if dup < 0:
                raise OSError(ctypes.get_errno(), "pidfd_getfd")
            return dup
        finally:
            os.close(pidfd)

    @staticmethod
    def _tgid(proc: int) -> int:
        """The caller's process (its thread group), from its pinned `/proc/<pid>`."""
        status = os.open("status", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
        try:
            for line in os.read(status, 4096).decode("ascii", "replace").splitlines():
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
        finally:
            os.close(status)
        raise OSError(errno.ESRCH, "no thread group")

    def open_target(self, proc: int, target: Target, opened: list[int]) -> int:
        """An O_PATH descriptor of ours for the object the caller named."""
        flags = O_PATH | os.O_CLOEXEC
        if isinstance(target, ByFd):
            fd = self._open_proc(f"fd/{target.fd}", flags, proc)
            opened.append(fd)
            return fd
        if target.path.startswith(b"/"):
            base, rel = "root", target.path.lstrip(b"/") or b"."
        elif target.dirfd == AT_FDCWD:
            base, rel = "cwd", target.path
        else:
            base, rel = f"fd/{target.dirfd}", target.path
        if not rel:
            if not target.empty:
                raise OSError(errno.ENOENT, "empty path")
            rel = b"."
            if base != "cwd" and base != "root":
                fd = self._open_proc(base, flags, proc)
                opened.append(fd)
                return fd
        base_fd = self._open_proc(base, flags | os.O_DIRECTORY, proc)
        opened.append(base_fd)
        if not target.follow and rel != b".":
            flags |= os.O_NOFOLLOW
        fd = os.open(rel, flags, dir_fd=base_fd)
        opened.append(fd)
        return fd

    @staticmethod
    def _open_proc(name: str, flags: int, proc: int) -> int:
        try:
            return os.open(name, flags, dir_fd=proc)
        except FileNotFoundError:
            raise OSError(errno.EBADF, name) from None  # a descriptor it does not hold

    def perform(self, request: Request, fd: int, opened: list[int]) -> None:
        """The call, on our descriptor of the object (the link of `/proc/self/fd/N` leads to
        that very object: a symbolic link itself when it was not followed)."""
        at = f"/proc/self/fd/{fd}"
        kind, values = request.kind, request.values
        if kind == "chmod":
            mode = values[0]
            assert isinstance(mode, int)
            os.chmod(at, mode)
        elif kind == "chown":
            uid, gid = values
            assert isinstance(uid, int) and isinstance(gid, int)
            self._check(
                self.libc.fchownat(
                    fd,
                    b"",
                    ctypes.c_uint32(uid & 0xFFFFFFFF),
                    ctypes.c_uint32(gid & 0xFFFFFFFF),
                    AT_EMPTY_PATH,
                )
            )
        elif kind == "utimens":
            times = values[0]
            spec = None
            if times is not None:
                assert isinstance(times, tuple)
                spec = (ctypes.c_long * 4)(*(n for pair in times for n in pair))
            self._check(self.libc.utimensat(fd, b"", spec, AT_EMPTY_PATH))
        elif kind == "setxattr":
            name, value, flags = values
            assert isinstance(name, bytes) and isinstance(value, bytes) and isinstance(flags, int)
            os.setxattr(at, name, value, flags)
        elif kind == "removexattr":
            name = values[0]
            assert isinstance(name, bytes)
            os.removexattr(at, name)
        elif kind == "truncate":
            length = values[0]
            assert isinstance(length, int)
            os.truncate(at, length)
        elif kind == "ioctl":
            command, argument = values
            assert isinstance(command, int) and isinstance(argument, bytes)
            # inode ioctls need a file opened, not a path: a fresh read-only open of it
            real = os.open(at, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            opened.append(real)
            fcntl.ioctl(real, command, argument)

    @staticmethod
    def _check(result: int) -> None:
        if result < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


def _is_path_only(proc: int, fd: int) -> bool:
    """Whether the caller's descriptor `fd` was opened O_PATH (fchmod and the like refuse it)."""
    try:
        fdinfo = os.open(f"fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
    except OSError:
        return True
    try:
        text = os.read(fdinfo, 4096).decode("ascii", "replace")
    finally:
        os.close(fdinfo)
    for line in text.splitlines():
        if line.startswith("flags:"):
            return bool(int(line.split()[1], 8) & O_PATH)
    return True


# --- the launcher's side --------------------------------------------------------------------


def load_with_listener(libc: ctypes.CDLL, machine: str, *, connect: bool) -> int | None:
    """Load `guard_program` and return its listener; None when this task already has a
    listener (EBUSY: an outer launcher's supervisor answers these calls, for its wider
    places)."""
    program = guard_program(machine, connect=connect)
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in program)
    filters = ctypes.create_string_buffer(raw, len(raw))
    fprog = ctypes.create_string_buffer(
        struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters)), 16
    )
    for flags in (FLAG_NEW_LISTENER | FLAG_WAIT_KILLABLE_RECV, FLAG_NEW_LISTENER):
        fd = libc.syscall(SECCOMP[machine], SECCOMP_SET_MODE_FILTER, flags, fprog)
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err == errno.EBUSY:
            return None
        if err != errno.EINVAL:  # EINVAL: a kernel before 5.19 (no WAIT_KILLABLE_RECV)
            break
    raise OSError(err, f"seccomp listener: {os.strerror(err)}")


def drop_all_capabilities(libc: ctypes.CDLL, machine: str) -> None:
    """Empty the effective, permitted and inheritable sets: the supervisor changes metadata
    with no more right than the command it answers for (which execs with none)."""
    header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)
    if libc.syscall(CAPSET[machine], header, data) < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


def supervise(
    confine_child: Callable[[], int | None],
    command: Sequence[str],
    writable: Sequence[str],
    machine: str,
    *,
    abstract: bool = True,
) -> int:
    """Fork: the child runs `confine_child` (its last confinement steps; it returns the
    listener of the filter it loaded, or None when an outer supervisor answers) and execs
    `command`; this process serves the listener and returns the command's exit code (or dies
    of its signal). Exit 126: the child could not be confined, and never ran the command."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    parent = os.getpid()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child execs or exits
        ours.close()
        _child(libc, parent, theirs, confine_child, command)
    theirs.close()
    for sig in IGNORED:  # the reaper's SIGTERM is for the command: we go when it goes
        signal.signal(sig, signal.SIG_IGN)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    fds = _received_fds(ours)
    ours.close()
    if fds:
        status = Supervisor(fds[0], child, writable, machine, abstract=abstract).serve()
        os.close(fds[0])
    else:  # no listener: it could not be confined, or an outer supervisor answers
        status = _wait(child)
    if os.WIFSIGNALED(status):  # the same death, for the reaper to report
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep theirs
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return 128 + number
    return os.waitstatus_to_exitcode(status)


def _received_fds(sock: _socket.socket) -> list[int]:
    """The descriptors the child sent (SCM_RIGHTS); none when it ended without sending."""
    try:
        _, ancillary, _, _ = sock.recvmsg(1, _socket.CMSG_SPACE(4))
    except OSError:
        return []
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += [n for (n,) in struct.iter_unpack("=i", data[: len(data) - len(data) % 4])]
    return fds


def _wait(child: int) -> int:
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def _child(
    libc: ctypes.CDLL,
    parent: int,
    sock: _socket.socket,
    confine_child: Callable[[], int | None],
    command: Sequence[str],
) -> None:  # pragma: no cover - runs in the forked child
    code = 126
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # no supervisor, no command
        if os.getppid() != parent:
            os._exit(126)
        # Once the filter is loaded, sendmsg() goes to the supervisor, which has no listener
        # before this hand-off: a thread started before (a seccomp filter and a Landlock domain
        # are each thread's own; exec ends the thread) hands the listener over.
        box: list[int | None] = []
        sent: list[bool] = []
        go, done = _thread.allocate_lock(), _thread.allocate_lock()
        go.acquire()
        done.acquire()

        def hand_over() -> None:
            try:
                go.acquire()
                if box and box[0] is not None:
                    rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("=i", box[0]))]
                    sock.sendmsg([b"L"], rights)
                    sent.append(True)
            finally:
                done.release()

        _thread.start_new_thread(hand_over, ())
        try:
            box.append(confine_child())
        finally:
            go.release()
        done.acquire()
        listener = box[0]
        if listener is not None:
            os.close(listener)  # the command must never hold it
            if not sent:
                raise OSError(errno.EPIPE, "the listener was not handed over")
        sock.close()
        code = 127
        os.execvp(command[0], list(command))  # noqa: S606 - the confined command itself
    except Exception as exc:
        what = "cannot run " + command[0] if code == 127 else "cannot confine the command"
        os.write(2, f"codegen-ci: {what} (landlock): {exc}\n".encode())
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(code)
