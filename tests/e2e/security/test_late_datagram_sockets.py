"""A datagram makes no connect() (issue 31, points 1 and 3): `sendto()`, `sendmsg()` with a
`msg_name` and `sendmmsg()` reach a named Unix datagram socket by its path. bubblewrap hides
the sockets it finds when the run starts, not one a daemon makes later outside the hidden
places, and Landlock checks no Unix socket path at all; a socketpair()'s datagram socket (which
even Landlock's filter allows) can still send to any path. So the guard (security/
metadata_guard.py) answers these calls too, with connect()'s rule: a named socket only beneath
the writable places, reached through its own descriptor of the socket file.

The late socket lies in a folder shown read-only (as a checkout or a toolchain is), made after
the sandbox was opened (short paths: a Unix socket's path has at most 107 bytes). Controls:
with the sandbox off every send arrives; under every backend a command's own datagram sockets
work (a socket it bound in its worktree, by `sendto`, `sendmsg` and `sendmmsg`; a socketpair;
connected, then `send()` without an address; descriptors passed with SCM_RIGHTS)."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from kernel_attacks import outcomes, unix_datagram_listener
from sandbox_attacks import BACKENDS_AND_OFF, recording

from codegen_ci.security.landlock import kernel_abi
from codegen_ci.security.sandbox import Sandbox, open_sandbox

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(kernel_abi() < 1, reason="the kernel has no Landlock"),
]

# argv[1]: the late socket's path (`@name`: an abstract name). Each line it prints:
# `<name>: WORKED` or `<name>: REFUSED <errno>`.
PROBE = r"""
import ctypes, errno, os, socket, struct, sys
LATE = sys.argv[1].replace("@", "\0", 1) if sys.argv[1].startswith("@") else sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)

def attempt(name, action):
    try:
        action()
        print(f"{name}: WORKED", flush=True)
    except OSError as exc:
        print(f"{name}: REFUSED {errno.errorcode.get(exc.errno, exc.errno)}", flush=True)

def pair():  # a datagram socket every backend allows
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)

def sendmmsg(sock, payloads, path):
    # struct mmsghdr[] with a sockaddr_un each; returns (messages sent, each msg_len)
    end = b"" if path.startswith("\0") else b"\0"  # an abstract name is its bytes exactly
    name = struct.pack("=H", socket.AF_UNIX) + path.encode() + end
    keep, vec = [], b""
    for data in payloads:
        buf = ctypes.create_string_buffer(data, len(data))
        addr = ctypes.create_string_buffer(name, len(name))
        iov = ctypes.create_string_buffer(struct.pack("=QQ", ctypes.addressof(buf), len(data)))
        keep += [buf, addr, iov]
        vec += struct.pack("=QI4xQQQQi4xI4x", ctypes.addressof(addr), len(name),
                           ctypes.addressof(iov), 1, 0, 0, 0, 0)
    raw = ctypes.create_string_buffer(vec, len(vec))
    sent = libc.sendmmsg(sock.fileno(), raw, len(payloads), 0)
    if sent < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    lens = [struct.unpack_from("=I", raw.raw, 64 * i + 56)[0] for i in range(len(payloads))]
    return sent, lens

def to_late_by_socket():
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"leak-socket", LATE)

def to_late_by_pair_sendto():
    a, b = pair()
    with a, b:
        a.sendto(b"leak-pair", LATE)

def to_late_by_sendmsg():
    a, b = pair()
    with a, b:
        a.sendmsg([b"leak-", b"sendmsg"], [], 0, LATE)

def to_late_by_sendmmsg():
    a, b = pair()
    with a, b:
        sendmmsg(a, [b"leak-mmsg"], LATE)

def own_socket(name):
    path = os.path.join(os.getcwd(), name)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(10)
    return server, path

def check(got, want):
    if got != want:
        raise OSError(errno.EIO, f"got {got!r}, wanted {want!r}")

def own_by_sendto():
    server, path = own_socket("own.dgram")
    a, b = pair()
    with server, a, b:
        check(a.sendto(b"own-sendto", "own.dgram"), 10)
        check(server.recv(100), b"own-sendto")
        a.sendto(b"own-absolute", path)
        check(server.recv(100), b"own-absolute")
    os.unlink(path)

def own_by_sendmsg_and_sendmmsg():
    server, path = own_socket("own-msg.dgram")
    a, b = pair()
    with server, a, b:
        check(a.sendmsg([b"own-", b"sendmsg"], [], 0, path), 11)
        check(server.recv(100), b"own-sendmsg")
        check(sendmmsg(a, [b"one", b"three"], path), (2, [3, 5]))
        check([server.recv(100), server.recv(100)], [b"one", b"three"])
    os.unlink(path)

def own_connected_then_send():
    server, path = own_socket("own-connected.dgram")
    with server, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as client:
        client.connect(path)
        client.send(b"connected")
        check(server.recv(100), b"connected")
    os.unlink(path)

def own_pair():
    a, b = pair()
    with a, b:
        a.send(b"pair")
        check(b.recv(100), b"pair")
        reader, writer = os.pipe()
        a.sendmsg([b"fd"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("=i", writer))])
        os.close(writer)
        _, fds, _, _ = socket.recv_fds(b, 10, 1)
        os.write(fds[0], b"through")
        os.close(fds[0])
        check(os.read(reader, 100), b"through")
        os.close(reader)

def own_sigpipe():  # a send on a closed connection: EPIPE, and SIGPIPE without MSG_NOSIGNAL
    import signal
    got = []
    signal.signal(signal.SIGPIPE, lambda *_: got.append(1))
    a, b = socket.socketpair()
    b.close()
    with a:
        for flags in (socket.MSG_NOSIGNAL, 0):
            try:
                a.sendmsg([b"x"], [], flags)
            except BrokenPipeError:
                pass
    check(got, [1])

def own_credentials():  # SCM_CREDENTIALS with its own pid, to a receiver that asks for them
    a, b = pair()
    with a, b:
        b.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        ucred = struct.pack("=iII", os.getpid(), os.getuid(), os.getgid())
        a.sendmsg([b"creds"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, ucred)])
        data, ancillary, _, _ = b.recvmsg(10, 256)
        check((data, struct.unpack("=iII", ancillary[0][2])[1]), (b"creds", os.getuid()))

def own_full_queue():  # a blocking send waits for room, a non-blocking one does not
    import threading
    server, path = own_socket("own-full.dgram")
    a, b = pair()
    with server, a, b:
        a.setblocking(False)
        count = 0
        try:
            while True:
                a.sendto(b"fill", path)
                count += 1
        except BlockingIOError:
            pass
        a.setblocking(True)
        got = []
        drain = lambda: got.extend(server.recv(9) for _ in range(count + 1))
        reader = threading.Thread(target=drain)
        reader.start()
        a.sendto(b"last", path)
        reader.join(30)
        check(got[-1:], [b"last"])
    os.unlink(path)

attempt("late-socket-sendto", to_late_by_socket)
attempt("late-pair-sendto", to_late_by_pair_sendto)
attempt("late-sendmsg", to_late_by_sendmsg)
attempt("late-sendmmsg", to_late_by_sendmmsg)
attempt("own-sendto", own_by_sendto)
attempt("own-sendmsg-sendmmsg", own_by_sendmsg_and_sendmmsg)
attempt("own-connected-send", own_connected_then_send)
attempt("own-pair", own_pair)
attempt("own-sigpipe", own_sigpipe)
attempt("own-full-queue", own_full_queue)
attempt("own-credentials", own_credentials)
"""

LATE = ["late-socket-sendto", "late-pair-sendto", "late-sendmsg", "late-sendmmsg"]
OWN = [
    "own-sendto",
    "own-sendmsg-sendmmsg",
    "own-connected-send",
    "own-pair",
    "own-sigpipe",
    "own-full-queue",
    "own-credentials",
]


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """The command's worktree and a folder shown to it read-only, outside every hidden place."""
    work = Path(tempfile.mkdtemp(prefix="cg-work-"))
    shown = Path(tempfile.mkdtemp(prefix="cg-late-"))
    yield work, shown
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(shown, ignore_errors=True)


LEAKS = [b"leak-mmsg", b"leak-pair", b"leak-sendmsg", b"leak-socket"]  # LATE's, sorted


def run_probe(
    sandbox: Sandbox,
    kind: str,
    work: Path,
    address: str,
    received: list[bytes],
    *,
    network: bool,
    read_only: Sequence[Path] = (),
) -> subprocess.CompletedProcess[str]:
    """PROBE, confined in `work`, sending to `address` (a path, or `\0name`: an abstract
    name); then what reaches the listener settles: with the sandbox off each of LATE's
    datagrams, else a marker sent from outside after the probe (a datagram refused is never
    sent: nothing is on its way)."""
    prefix = sandbox.wrap(sandbox.confinement(work, network=network, read_only=read_only))
    named = "@" + address[1:] if address.startswith("\0") else address
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE, named],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if kind == "off":
        settled(received, len(LATE))
    else:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
            probe.sendto(b"marker", address)
        settled(received, 1)
    return proc


def settled(received: list[bytes], count: int) -> None:
    """The control's datagrams arrive on the listener's thread (never a bound that decides the
    test: the assertion fails whatever the wait when they do not arrive)."""
    for _ in range(400):
        if len(received) >= count:
            return
        subprocess.run(["sleep", "0.05"], check=False)


@pytest.mark.parametrize("where", ["shown", "dev-shm"])
@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_late_datagram_socket_outside_gets_nothing(
    kind: str, where: str, places: tuple[Path, Path]
) -> None:
    """`shown`: in a folder shown read-only (a checkout's, a toolchain's); `dev-shm`: in a
    fresh folder of the machine's /dev/shm, shown to nobody (Landlock resolves a socket's path
    without asking for read rights; bubblewrap has a /dev/shm of its own, where it is not)."""
    work, shown = places
    read_only = [shown]
    if where == "dev-shm":
        if not os.access("/dev/shm", os.W_OK):
            pytest.skip("no writable /dev/shm on this machine")
        shown = Path(tempfile.mkdtemp(prefix="cg-late-", dir="/dev/shm"))
        read_only = []
    sandbox: Sandbox = open_sandbox({**os.environ, "CODEGEN_SANDBOX": kind}, git_dir=None)
    late = shown / "daemon.dgram"
    try:
        with unix_datagram_listener(late) as received:  # made after the sandbox was opened
            proc = run_probe(
                sandbox, kind, work, str(late), received, network=False, read_only=read_only
            )
    finally:
        sandbox.close()
        if where == "dev-shm":
            shutil.rmtree(shown, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert str(late) not in sandbox.sockets
    seen = outcomes(out)
    for name in OWN:
        assert seen[name] == "WORKED", out
    if kind == "off":  # control: each datagram arrives
        assert all(seen[name] == "WORKED" for name in LATE), out
        assert sorted(received) == LEAKS
    else:  # bubblewrap's own /dev/shm holds no such socket: not found
        refused = errno.errorcode[
            errno.ENOENT if (kind, where) == ("bwrap", "dev-shm") else errno.EACCES
        ]
        assert {name: seen[name] for name in LATE} == dict.fromkeys(LATE, refused), out
        assert received == [b"marker"], out


@pytest.mark.parametrize("listening", [False, True])
@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_late_abstract_datagram_name_outside_gets_nothing_with_the_network(
    kind: str, listening: bool, places: tuple[Path, Path]
) -> None:
    """With the network a bubblewrap command shares the host's network namespace, and so its
    abstract names; Landlock (ABI 6) scopes them. The guard sends for the command, so it must
    reach no more of them than the command: an abstract datagram socket made outside after
    the start gets nothing. Where none listened at the start (`listening` False, as on a
    machine without any), Unix sockets are the command's, and Landlock's scope refuses the
    send (EPERM: the guard's layer inside bubblewrap scopes them too); where one did, the
    command gets no Unix socket (EACCES) and the guard sends to no abstract name (EACCES),
    not even from a socketpair()'s datagram socket."""
    if kind != "off" and kernel_abi() < 6:
        pytest.skip("Landlock before ABI 6 cannot scope abstract sockets (docs/sandbox.md)")
    work, _ = places
    name = f"cg-late-{os.getpid()}-{kind}-{listening}"
    sandbox: Sandbox = open_sandbox({**os.environ, "CODEGEN_SANDBOX": kind}, git_dir=None)
    if kind == "bwrap":
        sandbox = replace(sandbox, abstract_sockets=listening)
    elif kind == "landlock":  # the policy of a kernel before ABI 6 where one listens
        sandbox = replace(sandbox, unix_sockets=not listening)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind("\0" + name)  # after the sandbox was opened
    try:
        with recording(server, datagrams=True) as received:
            proc = run_probe(sandbox, kind, work, "\0" + name, received, network=True)
    finally:
        sandbox.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    seen = outcomes(out)
    assert seen["own-pair"] == seen["own-sigpipe"] == "WORKED", out  # socketpairs only
    if kind == "off":
        assert all(seen[own] == "WORKED" for own in OWN), out
        assert sorted(received) == LEAKS
        return
    assert received == [b"marker"], out
    if listening:
        pairs = ("own-pair", "own-sigpipe", "own-credentials")  # socketpairs only
        refused = [n for n in [*LATE, *OWN] if n not in pairs]
        assert {seen[n] for n in refused} == {"EACCES"}, out
    else:
        assert all(seen[own] == "WORKED" for own in OWN), out
        assert {seen[late] for late in LATE} == {"EPERM"}, out
