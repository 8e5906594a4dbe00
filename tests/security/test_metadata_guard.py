"""The metadata guard's decisions (security/metadata_guard.py): which objects a confined command
may change the metadata of, how each system call's arguments are read from the caller's memory,
and which calls the seccomp filter sends to the supervisor. The guard at work, under both
backends, is in tests/e2e/security/test_metadata_writes.py."""

from __future__ import annotations

import errno
import struct

import pytest

from codegen_ci.security import landlock_exec
from codegen_ci.security.metadata_guard import (
    AT_EMPTY_PATH,
    AT_FDCWD,
    AT_SYMLINK_NOFOLLOW,
    CALLS,
    CONNECT,
    INODE_IOCTLS,
    IOCTL,
    SECCOMP_RET_USER_NOTIF,
    SENDS,
    ByFd,
    ByPath,
    Memory,
    Message,
    allowed,
    guard_program,
    is_abstract,
    notify_rules,
    parse,
    send_rules,
)

WRITABLE = ["/work/wt/run", "/tmp/codegen-sandbox-x/rw"]


@pytest.mark.parametrize(
    ("where", "links", "expected"),
    [
        ("/work/wt/run", 1, True),  # the place itself
        ("/work/wt/run/src/tool.sh", 1, True),
        ("/tmp/codegen-sandbox-x/rw/home/.cache/x", 2, True),
        ("/work/wt/run2/tool.sh", 1, False),  # a sibling sharing the prefix is not beneath
        ("/work/wt", 1, False),  # nor is the parent
        ("/home/user/.ssh/id_ed25519", 1, False),
        ("/work/repo/.git/hooks", 1, False),
        ("/dev/null", 1, False),
        ("/home/user/.ssh/id_ed25519 (deleted)", 1, False),  # a name's suffix changes nothing
        ("/tmp/gone (deleted)", 0, True),  # unlinked: no name reaches it any more
        ("/memfd:buffer (deleted)", 0, True),
        ("pipe:[4026]", 1, True),  # no path reaches a pipe, a socket or an anonymous inode
        ("socket:[4027]", 1, True),
        ("anon_inode:[eventfd]", 1, True),
    ],
)
def test_only_objects_beneath_a_writable_place_or_unreachable_are_allowed(
    where: str, links: int, expected: bool
) -> None:
    assert allowed(where, links, WRITABLE) is expected


def test_a_writable_place_with_a_trailing_slash_is_the_same_place() -> None:
    assert allowed("/work/wt/run/a", 1, ["/work/wt/run/"])
    assert not allowed("/work/wt/runner", 1, ["/work/wt/run/"])


BASE = 0x7F0000001000


class FakeMemory:
    """A caller's address space: one mapped page run at BASE, nothing elsewhere."""

    def __init__(self) -> None:
        self.data = bytearray(3 * 4096)
        self.next = BASE

    def put(self, value: bytes) -> int:
        address = self.next
        offset = address - BASE
        self.data[offset : offset + len(value)] = value
        self.next += len(value) + 8
        return address

    def read(self, size: int, address: int) -> bytes:
        offset = address - BASE
        if offset < 0 or offset >= len(self.data):
            raise OSError(errno.EIO, "unmapped")
        return bytes(self.data[offset : offset + size])  # short at the end, as a real read


def number(name: str) -> int:
    return CALLS["x86_64"][name]


def test_path_calls_read_their_path_relative_to_cwd_or_dirfd() -> None:
    memory = FakeMemory()
    path = memory.put(b"src/tool.sh\0")
    request = parse("chmod", [path, 0o100755], Memory(memory.read))
    assert (request.kind, request.target, request.values) == (
        "chmod",
        ByPath(AT_FDCWD, b"src/tool.sh"),
        (0o755,),
    )
    flags = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH
    request = parse("fchmodat2", [7, path, 0o600, flags], Memory(memory.read))
    assert request.target == ByPath(7, b"src/tool.sh", follow=False, empty=True)
    request = parse("fchmodat", [(1 << 32) - 100, path, 0o644], Memory(memory.read))
    assert request.target == ByPath(AT_FDCWD, b"src/tool.sh")  # AT_FDCWD as a 32-bit int
    with pytest.raises(OSError) as refused:
        parse("fchmodat2", [7, path, 0o600, 0x8000], Memory(memory.read))
    assert refused.value.errno == errno.EINVAL


def test_owners_times_and_descriptors() -> None:
    memory = FakeMemory()
    path = memory.put(b"/work/wt/run/a\0")
    request = parse("lchown", [path, 0xFFFFFFFF, 1000], Memory(memory.read))
    assert request.target == ByPath(AT_FDCWD, b"/work/wt/run/a", follow=False)
    assert request.values == (-1, 1000)  # -1: the owner unchanged
    assert parse("fchown", [5, 0, 0], Memory(memory.read)).target == ByFd(5)
    timeval = memory.put(struct.pack("=qqqq", 10, 5, 20, 999_999))
    request = parse("utimes", [path, timeval], Memory(memory.read))
    assert request.values == (((10, 5000), (20, 999_999_000)),)
    bad = memory.put(struct.pack("=qqqq", 10, 1_000_000, 20, 0))
    with pytest.raises(OSError) as refused:
        parse("utimes", [path, bad], Memory(memory.read))
    assert refused.value.errno == errno.EINVAL
    now = parse("utimensat", [AT_FDCWD & 0xFFFFFFFF, path, 0, 0], Memory(memory.read))
    assert now.values == (None,)  # no times: both now
    futimens = parse("utimensat", [3, 0, 0, 0], Memory(memory.read))
    assert futimens.target == ByFd(3)  # a null path: the descriptor itself


def test_extended_attributes_and_inode_flags() -> None:
    memory = FakeMemory()
    path, name = memory.put(b"notes.txt\0"), memory.put(b"user.origin\0")
    value = memory.put(b"\x01\x02\x03")
    request = parse("lsetxattr", [path, name, value, 3, 1], Memory(memory.read))
    assert request.target == ByPath(AT_FDCWD, b"notes.txt", follow=False)
    assert request.values == (b"user.origin", b"\x01\x02\x03", 1)
    assert parse("fremovexattr", [4, name], Memory(memory.read)).target == ByFd(4)
    long_name = memory.put(b"user." + b"x" * 300 + b"\0")
    with pytest.raises(OSError) as refused:
        parse("setxattr", [path, long_name, value, 3, 0], Memory(memory.read))
    assert refused.value.errno == errno.ERANGE
    with pytest.raises(OSError) as refused:
        parse("setxattr", [path, name, value, 70_000, 0], Memory(memory.read))
    assert refused.value.errno == errno.E2BIG
    flags = memory.put(struct.pack("=i", 0x40))
    request = parse("ioctl", [6, 0x40086602, flags], Memory(memory.read))
    assert (request.kind, request.target, request.values) == (
        "ioctl",
        ByFd(6),
        (0x40086602, struct.pack("=i", 0x40)),
    )


def test_unreadable_or_endless_arguments_fail_as_the_kernel_would() -> None:
    memory = FakeMemory()
    for address in (0, 0x1000, 1 << 63):
        with pytest.raises(OSError) as refused:
            parse("chmod", [address, 0o644], Memory(memory.read))
        assert refused.value.errno == errno.EFAULT
    endless = memory.put(b"a" * 5000 + b"\0")
    with pytest.raises(OSError) as refused:
        parse("chmod", [endless, 0o644], Memory(memory.read))
    assert refused.value.errno == errno.ENAMETOOLONG
    unterminated = BASE + 3 * 4096 - 4  # the string runs into unmapped memory
    memory.data[-4:] = b"abcd"
    with pytest.raises(OSError) as refused:
        parse("chmod", [unterminated, 0o644], Memory(memory.read))
    assert refused.value.errno == errno.EFAULT


# --- the filter ------------------------------------------------------------------------------

X86_64 = 0xC000003E


def run_bpf(program: list[tuple[int, ...]], nr: int, args: tuple[int, ...] = ()) -> int:
    """The classic BPF subset seccomp programs use here, run on one x86_64 system call."""
    words = [nr, X86_64, 0, 0]  # nr, arch, ip (two words)
    for arg in (*args, *[0] * (6 - len(args))):
        words += [arg & 0xFFFFFFFF, arg >> 32]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:  # LD W ABS
            acc = words[k // 4]
        elif code == 0x54:  # AND K
            acc &= k
        elif code in (0x15, 0x35):  # JEQ K, JGE K
            taken = acc == k if code == 0x15 else acc >= k
            pc += jt if taken else jf
        elif code == 0x06:  # RET K
            return k
        else:
            raise AssertionError(f"unknown instruction {code:#x}")


def stacked(programs: list[list[tuple[int, ...]]], nr: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel answers for filters loaded one on another: the strictest action (the
    lowest, as a signed action value: errno before user notification before allow)."""

    def action(ret: int) -> int:
        value = ret & 0xFFFF0000
        return value - (1 << 32) if value >= 1 << 31 else value

    return min((run_bpf(p, nr, args) for p in programs), key=action)


@pytest.mark.parametrize("network", [True, False])
def test_the_filter_sends_exactly_the_metadata_calls_to_the_supervisor(network: bool) -> None:
    static = landlock_exec.seccomp_program(network=network)
    both = [static, guard_program("x86_64", connect=True)]
    for name, nr in CALLS["x86_64"].items():
        assert stacked(both, nr) == SECCOMP_RET_USER_NOTIF, name
    connect = CONNECT["x86_64"]
    assert stacked(both, connect) == SECCOMP_RET_USER_NOTIF
    no_connect = [static, guard_program("x86_64", connect=False)]  # inside bubblewrap
    assert stacked(no_connect, connect) == landlock_exec.SECCOMP_RET_ALLOW
    ioctl = IOCTL["x86_64"]
    for command in INODE_IOCTLS:
        assert stacked(both, ioctl, (3, command)) == SECCOMP_RET_USER_NOTIF
    tcgets, fionread = 0x5401, 0x541B
    for command in (tcgets, fionread, 0x80086601):  # reading the flags is not changing them
        assert stacked(both, ioctl, (1, command)) == landlock_exec.SECCOMP_RET_ALLOW
    # everything else decides as without the guard: reads, writes, sockets of each family
    udp = (2, 2, 0)
    for nr, args in [(0, ()), (1, ()), (2, ()), (41, (1, 1, 0)), (41, udp), (41, (2, 1, 6))]:
        assert stacked(both, nr, args) == run_bpf(static, nr, args), (nr, args)
    assert stacked(both, 0x40000000 | 90) == run_bpf(static, 0x40000000 | 90)  # x32: ENOSYS
    io_uring_setup = 425  # what the launcher's filter refuses stays refused
    assert stacked(both, io_uring_setup) == run_bpf(static, io_uring_setup) != 0x7FFF0000


def test_each_machine_names_its_own_calls() -> None:
    assert set(CALLS) == set(IOCTL) == {"x86_64", "aarch64"}
    for machine in CALLS:
        rules = notify_rules(machine)
        assert len(rules) < 255  # every jump fits the instruction's 8 bits
        head = 7 if machine == "x86_64" else 5  # the architecture checks and allow
        assert len(guard_program(machine, connect=False)) == len(rules) + head
        sends = len(send_rules(machine))
        assert len(guard_program(machine, connect=True)) == len(rules) + head + 2 + sends


def test_sends_that_may_name_an_address_go_to_the_supervisor() -> None:
    """sendmsg() and sendmmsg() always (their address is inside a struct the filter cannot
    read), sendto() only with a dest_addr: send() and write() on a connected socket never."""
    static = landlock_exec.seccomp_program(network=False)
    both = [static, guard_program("x86_64", connect=True)]
    sends = SENDS["x86_64"]
    for name in ("sendmsg", "sendmmsg"):
        assert stacked(both, sends[name], (3, BASE, 0)) == SECCOMP_RET_USER_NOTIF, name
    for address in (BASE, 1 << 40, 1):  # either half of the pointer set
        notified = stacked(both, sends["sendto"], (3, BASE, 4, 0, address, 16))
        assert notified == SECCOMP_RET_USER_NOTIF, address
    assert stacked(both, sends["sendto"], (3, BASE, 4, 0, 0, 0)) == landlock_exec.SECCOMP_RET_ALLOW
    no_connect = [static, guard_program("x86_64", connect=False)]
    assert stacked(no_connect, sends["sendmsg"]) == landlock_exec.SECCOMP_RET_ALLOW
    for machine in SENDS:  # the rules leave the call number in the accumulator
        rules = send_rules(machine)
        assert rules[-1] == (0x20, 0, 0, 0) and len(rules) < 255


def unix_address(path: bytes) -> bytes:
    return struct.pack("=H", 1) + path


def test_sends_read_the_address_the_bytes_and_the_ancillary_data() -> None:
    memory = FakeMemory()
    read = Memory(memory.read)
    name = unix_address(b"/run/daemon.sock\0")
    at = memory.put(name)
    data = memory.put(b"hello")
    request = parse("sendto", [5, data, 5, 0x4000, at, len(name)], read)
    assert (request.kind, request.target) == ("send", ByFd(5))
    assert request.values == (0x4000, 0, (Message(name, b"hello", 5, b""),))
    # sendmsg: two pieces, a control message, flags as a signed int
    first, second = memory.put(b"ab"), memory.put(b"cde")
    iov = memory.put(struct.pack("=QQQQ", first, 2, second, 3))
    control = struct.pack("=Qii", 20, 1, 1) + struct.pack("=i", 7) + bytes(4)
    control_at = memory.put(control)
    header = struct.pack("=QI4xQQQQi4x", at, len(name), iov, 2, control_at, len(control), 0)
    request = parse("sendmsg", [5, memory.put(header), 0xFFFFFFFF], read)
    assert request.values == (-1, 0, (Message(name, b"abcde", 5, control),))
    # sendmmsg: each struct mmsghdr in turn, the vector's address kept for msg_len
    vector = memory.put(header + bytes(8) + header + bytes(8))
    request = parse("sendmmsg", [5, vector, 2, 0], read)
    assert request.values[1] == vector and len(request.values[2]) == 2
    # no address: sendto's NULL, a msghdr's empty name
    nameless = struct.pack("=QI4xQQQQi4x", 0, 0, iov, 2, 0, 0, 0)
    assert parse("sendmsg", [5, memory.put(nameless), 0], read).values[2][0].name == b""


def test_sends_fail_as_the_kernel_would_on_bad_arguments() -> None:
    memory = FakeMemory()
    read = Memory(memory.read)
    data = memory.put(b"x")
    cases = [
        ("sendto", [5, data, 1, 0, data, 129], errno.EINVAL),  # an address longer than any
        ("sendto", [5, 0x1000, 1, 0, 0, 0], errno.EFAULT),  # bytes nowhere
        (
            "sendmsg",
            [5, memory.put(struct.pack("=QI4xQQQQi4x", 0, 0, 0, 1025, 0, 0, 0)), 0],
            errno.EMSGSIZE,
        ),
    ]
    for name, args, expected in cases:
        with pytest.raises(OSError) as refused:
            parse(name, args, read)
        assert refused.value.errno == expected, name
    assert is_abstract(unix_address(b"\0name")) and not is_abstract(unix_address(b"/a\0"))
    assert not is_abstract(struct.pack("=H", 2) + bytes(14))  # inet
