"""The Landlock launcher (security/landlock_exec.py) confines what it starts: each probe runs
once through the argv prefix `landlock_argv` builds and once directly (the positive control:
the same probe works unconfined). What the full runs cover (other processes' environment,
writes outside the worktree, TCP, HOME) is in test_sandbox.py and test_home_allowlist.py; this
is the rest: UDP, abstract Unix sockets, signals, capabilities, shared memory, /tmp, and a
launcher that cannot confine never running the command."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from codegen_ci.security.confinement import Confinement
from codegen_ci.security.landlock import kernel_abi, landlock_argv
from codegen_ci.security.sandbox import toolchain_places

pytestmark = pytest.mark.skipif(kernel_abi() < 1, reason="the kernel has no Landlock")


def run(code: str, tmp: Path, *, confined: bool, network: bool = False) -> str:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    confinement = Confinement(work, (work,), toolchain_places(os.environ), network=network)
    prefix = landlock_argv(confinement) if confined else []
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", code],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.stdout + proc.stderr


def attempt(statement: str) -> str:
    return f"""
import os, socket, signal
try:
    {statement}
    print("WORKED")
except OSError as exc:
    print("REFUSED", exc)
"""


@pytest.mark.parametrize("confined", [True, False])
def test_udp_is_refused_without_the_network(tmp_path: Path, confined: bool) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(2)
        port = server.getsockname()[1]
        udp = "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
        send = f"{udp}.sendto(b'leak', ('127.0.0.1', {port}))"
        out = run(attempt(send), tmp_path, confined=confined)
        assert ("WORKED" in out) is not confined, out
        if not confined:
            assert server.recv(10) == b"leak"


def test_with_the_network_udp_and_tcp_work(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        out = run(
            attempt(f"socket.create_connection(('127.0.0.1', {port}), 3)"),
            tmp_path,
            confined=True,
            network=True,
        )
    assert "WORKED" in out, out


@pytest.mark.skipif(kernel_abi() < 6, reason="scoping needs Landlock ABI 6 (Linux 6.12)")
@pytest.mark.parametrize("confined", [True, False])
def test_abstract_unix_sockets_and_signals_outside_are_out_of_reach(
    tmp_path: Path, confined: bool
) -> None:
    name = f"\0codegen-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen(1)
        connect = f"socket.socket(socket.AF_UNIX).connect({name!r})"
        out = run(attempt(connect), tmp_path, confined=confined)
        assert ("WORKED" in out) is not confined, out
    out = run(attempt(f"os.kill({os.getpid()}, 0)"), tmp_path, confined=confined)
    assert ("WORKED" in out) is not confined, out


@pytest.mark.parametrize("confined", [True, False])
def test_shared_memory_tmp_and_capabilities(tmp_path: Path, confined: bool) -> None:
    shm, tmp = f"/dev/shm/codegen-{uuid.uuid4().hex}", f"/tmp/codegen-{uuid.uuid4().hex}"
    try:
        out = run(
            attempt(f"open({shm!r}, 'w').write('x'); open({tmp!r}, 'w').write('x')"),
            tmp_path,
            confined=confined,
        )
        assert ("WORKED" in out) is not confined, out
    finally:
        for path in (shm, tmp):
            Path(path).unlink(missing_ok=True)
    status = run("print(open('/proc/self/status').read())", tmp_path, confined=confined)
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert (fields["NoNewPrivs"].strip() == "1") is confined
    if os.geteuid() == 0:  # root's commands hold no capability
        assert (int(fields["CapBnd"], 16) == 0) is confined


def test_a_policy_it_cannot_apply_never_runs_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    prefix = landlock_argv(Confinement(tmp_path, (tmp_path,)))
    prefix[-2] = '{"read": "not a list"}'
    proc = subprocess.run(
        [*prefix, "/bin/sh", "-c", f"touch {marker}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 126 and "cannot confine" in proc.stderr
    assert not marker.exists()


UNIX_PROBE = """
import socket, sys
def attempt(label, action):
    try:
        action()
        print(label, "WORKED")
    except OSError as exc:
        print(label, "REFUSED", exc.errno)
kept = []
def listen():
    kept.append(socket.socket(socket.AF_UNIX))
    kept[0].bind("own.sock")
    kept[0].listen(1)
attempt("own-listen", listen)
attempt("own", lambda: socket.socket(socket.AF_UNIX).connect("own.sock"))
attempt("engine", lambda: socket.socket(socket.AF_UNIX).connect(sys.argv[1]))
attempt("seqpacket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).close())
attempt("datagram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).close())
attempt("pair", lambda: [s.close() for s in socket.socketpair()])
"""


@pytest.mark.parametrize("confined", [True, False])
def test_an_engine_socket_outside_is_refused_the_commands_own_works(
    tmp_path: Path, confined: bool
) -> None:
    """Landlock cannot stop a connect() to a named socket (`/var/run/docker.sock` in GitHub's
    action containers): the metadata guard refuses one outside the writable places (EACCES)
    while a stream socket of the command's own in its worktree works, and so do datagram Unix
    sockets (the guard checks a datagram's address too: tests/e2e/security/
    test_late_datagram_sockets.py) and socketpair(). Control: unconfined, the engine socket
    answers."""
    work = tmp_path / "work"
    work.mkdir()
    engine = tmp_path / "engine.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(engine))
        server.listen(1)
        confinement = Confinement(work, (work,), toolchain_places(os.environ))
        prefix = landlock_argv(confinement) if confined else []
        proc = subprocess.run(
            [*prefix, sys.executable, "-c", UNIX_PROBE, str(engine)],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    out = proc.stdout + proc.stderr
    for label in ("own-listen", "own", "seqpacket", "datagram", "pair"):
        assert f"{label} WORKED" in out, out
    refused = f"REFUSED {errno.EACCES}"
    assert ("engine WORKED" if not confined else f"engine {refused}") in out, out


def test_without_unix_sockets_only_socketpair_works(tmp_path: Path) -> None:
    """`unix_sockets=False` (an abstract socket listens outside on a kernel before ABI 6, which
    cannot scope it): no Unix socket at all, while socketpair() (pipes between a command's own
    processes) still works."""
    work = tmp_path / "work"
    work.mkdir()
    confinement = Confinement(work, (work,), toolchain_places(os.environ))
    proc = subprocess.run(
        [*landlock_argv(confinement, unix_sockets=False), sys.executable, "-c", UNIX_PROBE, "x"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert "pair WORKED" in out, out
    for label in ("own-listen", "seqpacket", "datagram"):
        assert f"{label} REFUSED {errno.EACCES}" in out, out
