"""The seccomp filter both backends share (security/landlock_exec.py `seccomp_program`), read
by a small BPF interpreter here, as the kernel would run it; the sockets outside a sandbox
that `outside_sockets` finds; and how bubblewrap's argv hides them. The kernel running the
filter, under each backend, is in tests/e2e/security/test_no_packet_leaves.py."""

from __future__ import annotations

import errno
import json
import os
import socket
import struct
from pathlib import Path

import pytest

from codegen_ci.security import landlock_exec as lx
from codegen_ci.security.bwrap import EMPTIED, LAUNCHER, WRITTEN, Inside, bwrap_argv
from codegen_ci.security.confinement import Confinement
from codegen_ci.security.landlock import landlock_argv
from codegen_ci.security.sandbox import outside_sockets, toolchain_places

pytestmark = pytest.mark.skipif(os.uname().machine not in lx.ARCHES, reason="x86_64, aarch64")
MACHINE = os.uname().machine
ARCH, X32 = lx.ARCHES.get(MACHINE, (0, 0))
NR = lx.SYSCALLS.get(MACHINE, {})
ALLOW = lx.SECCOMP_RET_ALLOW
EACCES = lx.SECCOMP_RET_ERRNO | errno.EACCES
ENOSYS = lx.SECCOMP_RET_ERRNO | errno.ENOSYS


def verdict(program: list[tuple[int, ...]], nr: int, *args: int, arch: int = ARCH) -> int:
    """What the kernel returns for system call `nr` with `args` under `program`."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == lx.BPF_LD_W_ABS:
            acc, pc = struct.unpack_from("=I", data, k)[0], pc + 1
        elif code == lx.BPF_AND_K:
            acc, pc = acc & k, pc + 1
        elif code == lx.BPF_JEQ_K:
            pc += 1 + (jt if acc == k else jf)
        elif code == lx.BPF_JGE_K:
            pc += 1 + (jt if acc >= k else jf)
        else:
            assert code == lx.BPF_RET_K
            return k


def landlock(network: bool = False, **extra: object) -> list[tuple[int, ...]]:
    return lx.policy_program({"network": network, **extra})


def bwrap(network: bool = False) -> list[tuple[int, ...]]:
    return lx.policy_program({"backend": "bwrap", "network": network})


INET = [
    (socket.AF_INET, socket.SOCK_STREAM, 0),
    (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP),
    (socket.AF_INET, socket.SOCK_DGRAM, 0),
    (socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, 262),  # MPTCP
    (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
]


@pytest.mark.parametrize("args", INET)
def test_inet_sockets_need_the_network_or_a_namespace_of_their_own(args: tuple[int, ...]) -> None:
    assert verdict(landlock(), NR["socket"], *args) == EACCES
    assert verdict(landlock(network=True), NR["socket"], *args) == ALLOW
    assert verdict(bwrap(), NR["socket"], *args) == ALLOW  # its own loopback only
    assert verdict(bwrap(network=True), NR["socket"], *args) == ALLOW


@pytest.mark.parametrize("family", [17, 40, 31, 29, 30, 38, 44, 21, 5, 9])
def test_no_other_family_with_or_without_the_network(family: int) -> None:
    """packet, vsock, Bluetooth, CAN, TIPC, ALG, XDP, RDS, AppleTalk, X.25."""
    for program in (landlock(), landlock(network=True), bwrap(), bwrap(network=True)):
        assert verdict(program, NR["socket"], family, socket.SOCK_STREAM, 0) == EACCES


def test_netlink_for_routes_only_and_unix_unless_one_outside_is_reachable() -> None:
    program = landlock()
    assert verdict(program, NR["socket"], socket.AF_NETLINK, socket.SOCK_RAW, 0) == ALLOW
    for protocol in (2, 4, 9, 15, 16):  # usersock, sock_diag, audit, uevent, generic
        assert verdict(program, NR["socket"], socket.AF_NETLINK, 3, protocol) == EACCES
    assert verdict(program, NR["socket"], socket.AF_UNIX, socket.SOCK_STREAM, 0) == ALLOW
    closed = landlock(unix_sockets=False)
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        assert verdict(closed, NR["socket"], socket.AF_UNIX, kind, 0) == EACCES
    assert verdict(closed, NR["socketpair"], socket.AF_UNIX, socket.SOCK_STREAM, 0) == ALLOW
    assert verdict(closed, NR["socketpair"], 30, socket.SOCK_STREAM, 0) == EACCES  # TIPC
    # a supervisor that checks connect() but not a datagram's address: datagrams only refused
    datagrams = landlock(unix_datagram=False)
    for kind in (socket.SOCK_DGRAM, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC):
        assert verdict(datagrams, NR["socket"], socket.AF_UNIX, kind, 0) == EACCES
    for kind in (socket.SOCK_STREAM | socket.SOCK_NONBLOCK, socket.SOCK_SEQPACKET):
        assert verdict(datagrams, NR["socket"], socket.AF_UNIX, kind, 0) == ALLOW


# What the metadata guard needs to start inside bubblewrap (as root) under bwrap's filter.
GUARD_CALLS = {
    "x86_64": {"seccomp": 317, "pidfd_open": 434, "pidfd_getfd": 438, "prctl": 157},
    "aarch64": {"seccomp": 277, "pidfd_open": 434, "pidfd_getfd": 438, "prctl": 167},
}


def test_the_metadata_guard_can_start_under_bubblewraps_filter() -> None:
    """The guard's launcher inside bubblewrap loads a second filter with a listener
    (seccomp()), passes it over a socketpair and duplicates the command's sockets
    (pidfd_open, pidfd_getfd): bwrap's filter allows each, with or without the network."""
    for program in (bwrap(), bwrap(network=True)):
        for name, nr in GUARD_CALLS[MACHINE].items():
            assert verdict(program, nr) == ALLOW, name
        pair = (socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC, 0)
        assert verdict(program, NR["socketpair"], *pair) == ALLOW


def test_landlocks_policy_allows_every_unix_socket_the_guard_checks() -> None:
    """The Landlock launcher's policy: stream, seqpacket and datagram Unix sockets (the
    metadata guard checks a connect()'s address and a datagram's), unless `unix_sockets` is
    False (an abstract socket outside, before ABI 6)."""
    work = Path("/nonexistent-work")
    for unix_sockets in (True, False):
        argv = landlock_argv(Confinement(work, (work,)), unix_sockets=unix_sockets)
        policy = json.loads(argv[4])
        assert "unix_datagram" not in policy and policy["unix_sockets"] is unix_sockets
        program = lx.policy_program(policy)
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            verdict_ = verdict(program, NR["socket"], socket.AF_UNIX, kind, 0)
            assert verdict_ == (ALLOW if unix_sockets else EACCES)


def test_keyring_io_uring_and_ipc_are_missing() -> None:
    for program in (landlock(), landlock(network=True), bwrap(), bwrap(network=True)):
        for name in (*lx.KEYRING, *lx.IO_URING):
            assert verdict(program, NR[name]) == ENOSYS, name
    for name in lx.IPC:  # bubblewrap's are the command's own (an IPC namespace)
        assert verdict(landlock(), NR[name]) == ENOSYS, name
        assert verdict(bwrap(), NR[name]) == ALLOW, name


def test_other_architectures_tables_are_missing() -> None:
    assert verdict(landlock(network=True), NR["socket"], 2, 1, 0, arch=0x40000003) == ENOSYS
    if X32:
        assert verdict(landlock(network=True), X32 | NR["socket"], 2, 1, 0) == ENOSYS


def test_notify_rules_slot_in_after_the_denials() -> None:
    """The supervisor's slot: named system calls go to it (SECCOMP_RET_USER_NOTIF); a call
    the filter denies stays denied; unknown names never make a filter."""
    program = landlock(notify=["socketpair", "keyctl"])
    assert verdict(program, NR["socketpair"], socket.AF_UNIX, 1, 0) == lx.SECCOMP_RET_USER_NOTIF
    assert verdict(program, NR["keyctl"]) == ENOSYS
    assert verdict(program, NR["socket"], socket.AF_INET, 1, 0) == EACCES
    with pytest.raises(lx.ConfineError, match="unknown system calls"):
        landlock(notify=["no_such_call"])
    assert len(lx.compiled(program)) == 8 * len(program)


def test_outside_sockets_are_found_where_the_kernel_lists_them(tmp_path: Path) -> None:
    agent, other = tmp_path / "agent.sock", tmp_path / "other.sock"
    listeners = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    for server, path in zip(listeners, (agent, other), strict=True):
        server.bind(str(path))
    table = tmp_path / "unix"
    table.write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000: 00000002 00000000 00010000 0001 01 11 {agent}\n"
        f"0000: 00000002 00000000 00010000 0001 01 12 {tmp_path / 'gone.sock'}\n"
        "0000: 00000002 00000000 00010000 0001 01 13 @/tmp/dbus-abstract\n"
        "0000: 00000002 00000000 00010000 0001 01 14 relative.sock\n"
        "0000: 00000003 00000000 00000000 0001 03 15\n"
    )
    try:
        found = outside_sockets({"SSH_AUTH_SOCK": str(other)}, str(table))
    finally:
        for server in listeners:
            server.close()
    assert {agent, other} <= set(found.named)
    assert not any(p.name in ("gone.sock", "relative.sock") for p in found.named)
    assert found.abstract == ("@/tmp/dbus-abstract",)


def test_bwrap_empties_tmp_covers_sockets_and_takes_the_filter(tmp_path: Path) -> None:
    """/tmp and /var/tmp empty (never shown whole again, a PATH entry that is /tmp included);
    a place shown again inside them bound read-only, and a socket in it covered with
    /dev/null; the command's own sockets (in a writable place) left alone; the launcher
    hands bwrap the filter."""
    work, checkout = tmp_path / "work", tmp_path / "checkout"
    work.mkdir()
    checkout.mkdir()
    inside, own = checkout / "agent.sock", work / "own.sock"
    servers = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    for server, path in zip(servers, (inside, own), strict=True):
        server.bind(str(path))
    confinement = Confinement(
        work,
        writable=(work,),
        read_only=(checkout, Path("/tmp")),
        sockets=(inside, own),
    )
    try:
        argv = bwrap_argv("/usr/bin/bwrap", confinement, unix_sockets=False)
    finally:
        for server in servers:
            server.close()
    assert argv[2:4] == ["-S", str(LAUNCHER)] and argv[5:7] == ["--", "/usr/bin/bwrap"]
    assert json.loads(argv[4]) == {"backend": "bwrap", "network": False, "unix_sockets": False}
    triples = [argv[i : i + 3] for i in range(len(argv) - 2)]
    pairs = [t[:2] for t in triples]
    for place in EMPTIED:
        if place.is_dir():
            assert ["--tmpfs", str(place)] in pairs and ["--remount-ro", str(place)] in pairs
    assert ["--ro-bind", "/tmp", "/tmp"] not in triples
    covered = [t[2] for t in triples if t[:2] == ["--ro-bind", "/dev/null"]]
    assert str(own) not in covered
    if tmp_path.is_relative_to("/tmp"):
        assert ["--ro-bind", str(checkout), str(checkout)] in triples
        assert str(inside) in covered


@pytest.mark.parametrize("writes", [True, False])
def test_with_the_launcher_inside_bwrap_starts_it_after_its_mounts(
    tmp_path: Path, writes: bool
) -> None:
    """With a launcher inside, nothing runs around bwrap (no `--seccomp`: the launcher loads
    the same filter, its own network and IPC namespace), and the launcher's policy grants
    writes beneath the writable places and bwrap's /dev/shm, and writing only to the device
    nodes and beneath /dev/pts and /proc; its Landlock layer only where asked for."""
    work = tmp_path / "work"
    work.mkdir()
    launcher = tmp_path / "tool" / "landlock_exec.py"
    confinement = Confinement(work, writable=(work,))
    argv = bwrap_argv("/usr/bin/bwrap", confinement, inside=Inside(launcher, writes))
    assert argv[0] == "/usr/bin/bwrap" and "--seccomp" not in argv
    end = argv.index("--chdir") + 3
    assert argv[end - 1] == "--" and argv[end + 1 : end + 4] == ["-I", "-S", str(launcher)]
    assert argv[-1] == "--"
    policy = json.loads(argv[end + 4])
    assert policy == {
        "inside": "bwrap",
        "landlock": "writes" if writes else False,
        "network": False,
        "unix_sockets": True,
        "write": [str(work), "/dev/shm"],
        "devices": list(WRITTEN),
    }
    program = lx.policy_program(policy)
    assert program == lx.seccomp_program(network=False, own_network=True, own_ipc=True)


def test_a_node_modules_bin_on_path_brings_the_packages_its_links_point_to(
    tmp_path: Path,
) -> None:
    """`/tmp` is shown empty under bubblewrap, with the toolchains on PATH shown again: a
    `node_modules/.bin` entry holds links into its `node_modules` (`pnpm ->
    ../pnpm/bin/pnpm.cjs`), so that folder is shown too (tests/e2e/security/
    test_dependency_writes.py runs a pnpm installed under /tmp)."""
    modules = tmp_path / "tool" / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    found = toolchain_places({"HOME": str(tmp_path / "home"), "PATH": str(modules / ".bin")})
    assert modules / ".bin" in found and modules in found
