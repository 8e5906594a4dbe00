"""Attacks on the network, the kernel's shared objects and the user's sockets, as a hostile
confined command makes them (issue 31, points 1 and 3): Python programs, run under a backend's
argv prefix or unconfined as the control. Each attack prints `<name>: WORKED` or
`<name>: REFUSED <errno name>`; `outcomes` reads them back. The "outside" is always a listener
of the test process on 127.0.0.1 or a Unix socket it made: nothing leaves the machine."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sandbox_attacks import recording

from codegen_ci.security.bwrap import argv_again

# argv[1]: what to attack, as `name=value` pairs (ports, socket paths, a key's description).
PROBE = r"""
import ctypes, errno, os, socket, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
X86 = os.uname().machine == "x86_64"

def syscall(*call):
    result = libc.syscall(*call)
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result

def attempt(name, action):
    try:
        action()
        print(f"{name}: WORKED", flush=True)
    except OSError as exc:
        print(f"{name}: REFUSED {errno.errorcode.get(exc.errno, exc.errno)}", flush=True)

def tfo_sendto():
    with socket.socket() as s:
        s.sendto(b"leak-tfo-sendto", socket.MSG_FASTOPEN, ("127.0.0.1", int(args["tcp"])))

def tfo_sendmsg():
    with socket.socket() as s:
        s.sendmsg([b"leak-tfo-sendmsg"], [], socket.MSG_FASTOPEN, ("127.0.0.1", int(args["tcp"])))

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"leak-udp", ("127.0.0.1", int(args["udp"])))

def own_loopback_server():
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), 3) as client:
            client.sendall(b"x")
            conn, _ = server.accept()
            assert conn.recv(1) == b"x"

def family(number, kind=socket.SOCK_STREAM, proto=0):
    return lambda: socket.socket(number, kind, proto).close()

def io_uring():
    params = ctypes.create_string_buffer(120)
    os.close(syscall(425, 8, params))

def add_key():
    payload = args["secret"].encode()
    syscall(248 if X86 else 217, b"user", args["key"].encode(), payload, len(payload), -4)

def read_key():  # search the user keyring (-4) for the key, then read it
    search = syscall(250 if X86 else 219, 10, -4, b"user", args["key"].encode(), 0)
    buf = ctypes.create_string_buffer(200)
    size = syscall(250 if X86 else 219, 11, search, buf, 200)
    print("KEY=" + buf.raw[:size].decode(), flush=True)

def sysv_shm():
    libc.shmget.restype = ctypes.c_int
    shm = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if shm < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    libc.shmctl(shm, 0, None)  # IPC_RMID

def unix_connect(path):
    path = "\0" + path[1:] if path.startswith("@") else path  # an abstract name
    def go():
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(path)
            s.sendall(b"leak-unix")
    return go

def own_unix_socket():  # a Unix socket of the command's own, in its working directory
    path = os.path.join(os.getcwd(), f"own-{os.getpid()}.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen(1)
        unix_connect(path)()

def unix_sendto(path):  # a datagram to a named socket: no connect() for a guard to see
    def go():
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(b"leak-dgram", path)
    return go

def own_unix_datagram():  # datagrams between two sockets of the command's own
    path = os.path.join(os.getcwd(), f"own-{os.getpid()}.dgram")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        unix_sendto(path)()

def forkserver():  # multiprocessing's forkserver: a Unix socket server in the temporary folder
    import multiprocessing, tempfile
    tempfile.tempdir = os.getcwd()  # a run's TMPDIR: its scratch directory
    process = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    process.start()
    process.join(60)
    if process.exitcode != 0:
        raise OSError(errno.ECHILD, f"the forkserver's child ended with {process.exitcode}")

attacks = {
    "tfo-sendto": tfo_sendto,
    "tfo-sendmsg": tfo_sendmsg,
    "udp": udp,
    "own-loopback-server": own_loopback_server,
    "raw": family(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    "packet": family(17, socket.SOCK_RAW),
    "vsock": family(40),
    "bluetooth": family(31, socket.SOCK_STREAM, 3),
    "netlink-route": family(16, socket.SOCK_RAW, 0),
    "netlink-diag": family(16, socket.SOCK_RAW, 4),
    "netlink-usersock": family(16, socket.SOCK_RAW, 2),
    "socketpair": lambda: [s.close() for s in socket.socketpair()],
    "io-uring": io_uring,
    "add-key": add_key,
    "read-key": read_key,
    "sysv-shm": sysv_shm,
    "own-unix-socket": own_unix_socket,
    "own-unix-datagram": own_unix_datagram,
    "forkserver": forkserver,
}
for name in args["attacks"].split(","):
    if name.startswith("unix:"):
        attempt(name, unix_connect(args[name]))
    elif name.startswith("dgram:"):
        attempt(name, unix_sendto(args[name]))
    else:
        attempt(name, attacks[name])
"""

# listen() on an unbound TCP socket: the kernel binds it to 0.0.0.0 and a port by itself (no
# bind() for Landlock to check). It prints the port, then says whether anyone connected before
# the test says (on stdin) that it tried.
LISTEN = r"""
import select, socket, sys
try:
    server = socket.socket()
    server.listen(1)
except OSError as exc:
    print("LISTEN-REFUSED", exc, flush=True)
    sys.exit(0)
print("PORT", server.getsockname()[1], flush=True)
ready, _, _ = select.select([server, sys.stdin], [], [], 60)
if server in ready:
    conn, _ = server.accept()
    print("ACCEPTED", conn.recv(20), flush=True)
else:
    print("NOBODY", flush=True)
"""


def attack(prefix: Sequence[str], cwd: Path, attacks: Sequence[str], **values: str) -> str:
    """The output of PROBE running `attacks` under `prefix` ([]: unconfined). Run again, as
    the tool runs its own commands (security/bwrap.argv_again), when bwrap could not make a
    mount point: a place listed when `prefix` was made, gone since (under -n 8, another test's
    socket under /run, removed while this one's sandbox was set up); the probe never started."""
    pairs = [f"attacks={','.join(attacks)}", *(f"{k}={v}" for k, v in values.items())]
    argv: list[str] | None = [*prefix, sys.executable, "-c", PROBE, *pairs]
    output = ""
    for _ in range(3):
        if argv is None:
            break
        proc = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False
        )
        output = proc.stdout + proc.stderr
        argv = argv_again(argv, output) if prefix else None
    return output


def probe_command(attacks: Sequence[str], **values: str) -> str:
    """PROBE as a shell command line (the model's `run_command`, a test command)."""
    pairs = [f"attacks={','.join(attacks)}", *(f"{k}={v}" for k, v in values.items())]
    return shlex.join([sys.executable, "-c", PROBE, *pairs])


def outcomes(output: str) -> dict[str, str]:
    """`{attack: "WORKED" or the errno name}` from PROBE's output."""
    found = {}
    for line in output.splitlines():
        name, sep, rest = line.partition(": ")
        if sep and rest.split()[0] in ("WORKED", "REFUSED"):
            found[name] = rest.split()[-1]
    return found


def listen_and_get_called(prefix: Sequence[str], cwd: Path) -> str:
    """LISTEN under `prefix`; the test process connects to the port it got, from outside the
    sandbox, and sends `inbound`. Its output: LISTEN-REFUSED, ACCEPTED or NOBODY."""
    with subprocess.Popen(
        [*prefix, sys.executable, "-c", LISTEN],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        first = proc.stdout.readline()
        if first.startswith("PORT"):
            try:
                with socket.create_connection(("127.0.0.1", int(first.split()[1])), 5) as conn:
                    conn.sendall(b"inbound")
            except OSError:
                pass
            with contextlib.suppress(BrokenPipeError):  # it accepted, answered and ended
                proc.stdin.write("tried\n")
                proc.stdin.flush()
        rest, _ = proc.communicate(timeout=60)
    return first + rest


@contextmanager
def udp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback UDP socket recording what it receives: (port, received)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    with recording(server, datagrams=True) as received:
        yield server.getsockname()[1], received


@contextmanager
def unix_listener(path: Path | str) -> Iterator[list[bytes]]:
    """A listening Unix socket (a path, or an abstract name written with a leading `@`) that
    records what connections send: an ssh-agent, gpg-agent, D-Bus or engine socket stand-in."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = str(path)
    server.bind("\0" + name[1:] if name.startswith("@") else name)
    server.listen(4)
    try:
        with recording(server) as received:
            yield received
    finally:
        if isinstance(path, Path):
            path.unlink(missing_ok=True)


@contextmanager
def unix_datagram_listener(path: Path) -> Iterator[list[bytes]]:
    """A named datagram Unix socket recording what it receives: `/dev/log` or journald's
    stand-in."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    try:
        with recording(server, datagrams=True) as received:
            yield received
    finally:
        path.unlink(missing_ok=True)


def remove_key(description: str) -> None:
    """Unlink a key the control added to the user keyring (a no-op when there is none)."""
    code = (
        "import ctypes, sys; l = ctypes.CDLL(None); l.syscall.restype = ctypes.c_long\n"
        "n = 250 if __import__('os').uname().machine == 'x86_64' else 219\n"
        "k = l.syscall(n, 10, -4, b'user', sys.argv[1].encode(), 0)\n"
        "k > 0 and l.syscall(n, 9, k, -4)\n"  # KEYCTL_UNLINK from the user keyring
    )
    subprocess.run([sys.executable, "-c", code, description], check=False, timeout=30)


def environ_with(**values: str) -> dict[str, str]:
    return {**os.environ, **values}
