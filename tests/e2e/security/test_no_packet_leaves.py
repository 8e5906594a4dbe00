"""No packet leaves, no kernel object or user socket is shared (issue 31, points 1 and 3), under
each backend: every attack runs through the argv prefix of a sandbox `open_sandbox` set up (as
a run does), and once with the sandbox off as the control, where it works. The "outside" is
a listener of this test process: on 127.0.0.1, or a Unix socket it made.

What each backend does about it, and what it cannot: docs/sandbox.md (the table)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_attacks import (
    attack,
    environ_with,
    listen_and_get_called,
    outcomes,
    probe_command,
    remove_key,
    udp_listener,
    unix_datagram_listener,
    unix_listener,
)
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import BACKENDS, BACKENDS_AND_OFF, results, run_in_process

from codegen_ci.security.landlock import kernel_abi
from codegen_ci.security.sandbox import Sandbox, open_sandbox
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

REFUSED_BY_FILTER = errno.errorcode[errno.EACCES]
MISSING = errno.errorcode[errno.ENOSYS]


def opened(kind: str, environ: dict[str, str] | None = None) -> Sandbox:
    return open_sandbox({**(environ or os.environ), "CODEGEN_SANDBOX": kind}, git_dir=None)


@pytest.fixture
def work() -> Iterator[Path]:
    """A short path, as a run's scratch is (/tmp/codegen-sandbox-*): a Unix socket's path has
    at most 107 bytes, and multiprocessing's forkserver puts one two levels below TMPDIR, which
    pytest's own temporary folders (deep under a CI machine's basetemp) would overflow."""
    path = Path(tempfile.mkdtemp(prefix="cg-work-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def wait_for(received: list[bytes], count: int) -> None:
    """The control's data arrives on another thread: wait until it has (never a bound that
    decides a test: the assertions below fail whatever the wait when nothing arrives)."""
    deadline = time.monotonic() + 20
    while len(received) < count and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_without_the_network_no_packet_leaves(
    kind: str, work: Path, listener: tuple[int, list[bytes]]
) -> None:
    """TCP Fast Open (sendto and sendmsg with MSG_FASTOPEN on an unconnected socket: no
    connect() for Landlock to check) and UDP to a listener outside; raw, packet, vsock,
    Bluetooth and netlink sockets other than NETLINK_ROUTE; io_uring."""
    tcp, received = listener
    attacks = ["tfo-sendto", "tfo-sendmsg", "udp", "raw", "packet", "vsock", "bluetooth"]
    attacks += ["netlink-diag", "netlink-usersock", "netlink-route", "socketpair", "io-uring"]
    sandbox = opened(kind)
    try:
        with udp_listener() as (udp, datagrams):
            out = attack(
                sandbox.prefix(work, network=False), work, attacks, tcp=str(tcp), udp=str(udp)
            )
            if kind == "off":
                wait_for(received, 2)
                wait_for(datagrams, 1)
    finally:
        sandbox.close()
    seen = outcomes(out)
    assert set(seen) == set(attacks), out
    if kind == "off":  # control: the data left, the sockets were made
        assert sorted(received) == [b"leak-tfo-sendmsg", b"leak-tfo-sendto"], out
        assert datagrams == [b"leak-udp"], out
        assert seen["tfo-sendto"] == seen["netlink-diag"] == "WORKED", out
        return
    assert received == [] and datagrams == [], out
    for family in ("packet", "vsock", "bluetooth", "netlink-diag", "netlink-usersock"):
        assert seen[family] == REFUSED_BY_FILTER, (family, out)
    assert seen["raw"] != "WORKED" and seen["io-uring"] == MISSING, out
    # what stays: interfaces and addresses (getaddrinfo), pipes between its own processes
    assert seen["netlink-route"] == seen["socketpair"] == "WORKED", out
    if kind == "landlock":  # no inet socket at all: it has no loopback of its own
        assert {seen[a] for a in ("tfo-sendto", "tfo-sendmsg", "udp")} == {REFUSED_BY_FILTER}
    else:  # its own network namespace: the packets reach its own loopback only
        assert seen["tfo-sendto"] == errno.errorcode[errno.ECONNREFUSED], out


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_listen_on_an_unbound_socket_takes_no_call_from_outside(kind: str, work: Path) -> None:
    """listen() without bind() binds 0.0.0.0 and a port by itself (Landlock checks bind()
    only): this test process, outside, connects to that port."""
    sandbox = opened(kind)
    try:
        out = listen_and_get_called(sandbox.prefix(work, network=False), work)
    finally:
        sandbox.close()
    expected = {"off": "ACCEPTED", "bwrap": "NOBODY", "landlock": "LISTEN-REFUSED"}[kind]
    assert expected in out, out
    assert "inbound" not in out or kind == "off", out


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_tests_own_loopback_server_works_under_bwrap_only(kind: str, work: Path) -> None:
    """A test that starts its own server on 127.0.0.1: bubblewrap gives it a loopback of its
    own; Landlock cannot isolate the host's, so it refuses inet sockets, and says so."""
    sandbox = opened(kind)
    try:
        out = attack(sandbox.prefix(work, network=False), work, ["own-loopback-server"])
    finally:
        sandbox.close()
    assert outcomes(out)["own-loopback-server"] == (
        "WORKED" if kind == "bwrap" else REFUSED_BY_FILTER
    ), out
    assert sandbox.loopback == ("own" if kind == "bwrap" else "none")


@pytest.mark.parametrize("kind", BACKENDS)
def test_with_the_network_the_same_calls_go_through(
    kind: str, work: Path, listener: tuple[int, list[bytes]]
) -> None:
    """Positive control inside: a command whose kind has the network reaches the listener
    with the very calls refused above."""
    tcp, received = listener
    sandbox = opened(kind)
    try:
        with udp_listener() as (udp, datagrams):
            prefix = sandbox.prefix(work, network=True)
            out = attack(prefix, work, ["tfo-sendto", "udp"], tcp=str(tcp), udp=str(udp))
            wait_for(received, 1)
            wait_for(datagrams, 1)
    finally:
        sandbox.close()
    assert outcomes(out) == {"tfo-sendto": "WORKED", "udp": "WORKED"}, out
    assert received == [b"leak-tfo-sendto"] and datagrams == [b"leak-udp"], out


@pytest.fixture
def key() -> Iterator[str]:
    description = f"codegen-test-{uuid.uuid4().hex}"
    yield description
    remove_key(description)


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_key_one_command_adds_is_not_read_by_a_later_one(kind: str, work: Path, key: str) -> None:
    """The user keyring outlives every command: one run's command adds a key, a later run's
    reads it back (here: two sandboxes, as two runs have)."""
    secret = f"secret{uuid.uuid4().hex}"
    outputs = []
    for step in ("add-key", "read-key"):
        sandbox = opened(kind)
        try:
            outputs.append(
                attack(sandbox.prefix(work, network=False), work, [step], key=key, secret=secret)
            )
        finally:
            sandbox.close()
    added, read = (outcomes(o) for o in outputs)
    if kind == "off":  # control
        assert added == {"add-key": "WORKED"} and f"KEY={secret}" in outputs[1], outputs
    else:
        assert added == {"add-key": MISSING} and read == {"read-key": MISSING}, outputs
        assert secret not in outputs[1]


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_system_v_ipc_is_the_commands_own_or_missing(kind: str, work: Path) -> None:
    """System V shared memory (like message queues and semaphores) lives in the IPC
    namespace: bubblewrap gives each command its own, Landlock has none, so it is missing."""
    sandbox = opened(kind)
    try:
        out = attack(sandbox.prefix(work, network=False), work, ["sysv-shm"])
    finally:
        sandbox.close()
    assert outcomes(out) == {"sysv-shm": MISSING if kind == "landlock" else "WORKED"}, out


@pytest.fixture
def session_sockets(tmp_path: Path) -> Iterator[dict[str, tuple[str, list[bytes]]]]:
    """The user's session sockets, listening: an ssh-agent in /tmp, a gpg-agent in HOME, a
    D-Bus session bus in XDG_RUNTIME_DIR, a system socket under /run (where this user may
    make one), an abstract socket, and a datagram socket (a syslog's) in /tmp."""
    agent_dir = Path(tempfile.mkdtemp(prefix="ssh-", dir="/tmp"))
    runtime = tmp_path / "run-user"
    gnupg = Path(os.environ["HOME"]) / ".gnupg"
    gnupg.mkdir(exist_ok=True)
    runtime.mkdir()
    places = {
        "unix:ssh-agent": agent_dir / "agent.1",
        "unix:gpg-agent": gnupg / "S.gpg-agent",
        "unix:dbus": runtime / "bus",
        "dgram:log": agent_dir / "log",
    }
    if os.access("/run", os.W_OK):
        places["unix:run"] = Path(f"/run/codegen-test-{uuid.uuid4().hex[:8]}.sock")
    abstract = f"@codegen-test-{uuid.uuid4().hex}"
    listening: dict[str, tuple[str, list[bytes]]] = {}
    try:
        with (
            unix_listener(places["unix:ssh-agent"]) as agent,
            unix_listener(places["unix:gpg-agent"]) as gpg,
            unix_listener(places["unix:dbus"]) as dbus,
            unix_listener(abstract) as hidden,
            unix_datagram_listener(places["dgram:log"]) as log,
        ):
            listening = {
                "unix:ssh-agent": (str(places["unix:ssh-agent"]), agent),
                "unix:gpg-agent": (str(places["unix:gpg-agent"]), gpg),
                "unix:dbus": (str(places["unix:dbus"]), dbus),
                "unix:abstract": (abstract, hidden),
                "dgram:log": (str(places["dgram:log"]), log),
            }
            if "unix:run" in places:
                with unix_listener(places["unix:run"]) as run:
                    listening["unix:run"] = (str(places["unix:run"]), run)
                    yield listening
            else:
                yield listening
    finally:
        for path in places.values():
            path.unlink(missing_ok=True)
        agent_dir.rmdir()


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_the_users_session_sockets_are_out_of_reach(
    kind: str, work: Path, tmp_path: Path, session_sockets: dict[str, tuple[str, list[bytes]]]
) -> None:
    """ssh-agent (SSH_AUTH_SOCK removed, its socket still in /tmp), gpg-agent in HOME, D-Bus
    in XDG_RUNTIME_DIR, a socket under /run, an abstract socket, a syslog's datagram socket:
    a confined command reaches none of them. bubblewrap: /tmp and XDG_RUNTIME_DIR empty, HOME
    hidden, a socket under /run covered, abstract sockets in its own network namespace.
    Landlock cannot refuse a connect() to a named socket, nor a datagram's sendto(): the
    metadata guard does (EACCES); abstract sockets outside are scoped (ABI 6). Positive
    controls: the command's own Unix socket server, its own datagram sockets and
    multiprocessing's forkserver work on both backends."""
    if kind == "landlock" and kernel_abi() < 6:
        session_sockets.pop("unix:abstract")  # refused too: no Unix socket at all then
    environ = environ_with(
        XDG_RUNTIME_DIR=str(tmp_path / "run-user"),
        SSH_AUTH_SOCK=session_sockets["unix:ssh-agent"][0],
    )
    own = ["own-unix-socket", "own-unix-datagram", "forkserver"]
    names = [*session_sockets, *own]
    values = {name: path for name, (path, _) in session_sockets.items()}
    sandbox = opened(kind, environ)
    try:
        prefix = sandbox.prefix(work, network=False)
        out = attack(prefix, work, names, **values)
        if kind == "off":
            for _, received in session_sockets.values():
                wait_for(received, 1)
    finally:
        sandbox.close()
    seen = outcomes(out)
    leaked = sorted(name for name, (_, got) in session_sockets.items() if got)
    if kind == "off":  # control: every one of them answered
        assert leaked == sorted(session_sockets), out
        assert set(seen.values()) == {"WORKED"}, out
        return
    assert leaked == [], out
    assert all(seen[name] != "WORKED" for name in session_sockets), out
    if kind == "landlock" and not sandbox.unix_sockets:  # an abstract one, before ABI 6
        assert kernel_abi() < 6 and sandbox.abstract_sockets
        assert {seen[name] for name in own} == {REFUSED_BY_FILTER}, out
        return
    if kind == "landlock":
        named = [name for name in session_sockets if name != "unix:abstract"]
        for name in named:  # the guard refuses connect() and a datagram's sendto() alike
            assert seen[name] == REFUSED_BY_FILTER, out
    assert seen["own-unix-socket"] == "WORKED", out
    assert seen["forkserver"] == "WORKED", out
    assert seen["own-unix-datagram"] == "WORKED", out


@pytest.mark.bwrap
def test_bwrap_with_the_network_refuses_unix_sockets_where_an_abstract_one_listens(
    work: Path,
) -> None:
    """With the network, a bubblewrap command shares the host's network namespace, so its
    abstract sockets (which no path hides): where one listens, no Unix socket is made.
    Control: without the network, its own namespace holds none of them."""
    name = f"@codegen-test-{uuid.uuid4().hex}"
    with unix_listener(name) as received:
        sandbox = opened("bwrap")
        try:
            with_network = attack(
                sandbox.prefix(work, network=True), work, ["unix:x"], **{"unix:x": name}
            )
            without = attack(
                sandbox.prefix(work, network=False), work, ["unix:x"], **{"unix:x": name}
            )
        finally:
            sandbox.close()
    assert sandbox.abstract_sockets
    assert outcomes(with_network) == {"unix:x": REFUSED_BY_FILTER}, with_network
    assert outcomes(without) == {"unix:x": errno.errorcode[errno.ECONNREFUSED]}, without
    assert received == []


@pytest.mark.bwrap
def test_the_seccomp_descriptor_does_not_reach_the_command(work: Path) -> None:
    """bwrap reads the filter from the descriptor the launcher hands it, and closes it: the
    command holds no descriptor but its standard three (and the one `ls` lists them with)."""
    sandbox = opened("bwrap")
    try:
        listing = [*sandbox.prefix(work, network=False), "/bin/ls", "/proc/self/fd"]
        fds = subprocess.run(listing, capture_output=True, text=True, check=False, timeout=60)
    finally:
        sandbox.close()
    assert sorted(fds.stdout.split()) == ["0", "1", "2", "3"], fds.stdout + fds.stderr


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_in_a_run_the_model_sends_nothing_out_and_keeps_no_key(
    kind: str,
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]],
    key: str,
) -> None:
    """The red team's attack as a run makes it: the model's command sends the private source
    out with TCP Fast Open and adds a key to the user keyring, its next command reads the key
    back. report.json says what loopback commands had; under Landlock the run says so."""
    # the model's commands are the attack, not the repository's tests: no proof and coverage
    # runs after the passing round (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    tcp, received = listener
    secret = f"secret{uuid.uuid4().hex}"
    send = probe_command(["tfo-sendto", "add-key"], tcp=str(tcp), key=key, secret=secret)
    read = probe_command(["read-key"], key=key)
    model_server.add(
        Reply(tool_calls=[call("run_command", command=send), call("run_command", command=read)]),
        Reply(tool_calls=[FIX]),
        Reply("ok"),
    )
    # in-process: what the model's commands send and keep is the subject, not how the tool was
    # started (test_secret_env keeps the process)
    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    proc = run_in_process(sample_repo, model_server, spec, sandbox=kind)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = json.loads((out_dir / "report.json").read_text())
    if kind == "off":  # control
        wait_for(received, 1)
        assert received == [b"leak-tfo-sendto"] and f"KEY={secret}" in seen, seen
        assert report["loopback"] is None
        return
    assert received == [] and f"KEY={secret}" not in seen, seen
    assert "add-key: REFUSED ENOSYS" in seen and "read-key: REFUSED ENOSYS" in seen, seen
    assert report["loopback"] == {"bwrap": "own", "landlock": "none"}[kind]
    assert ("no loopback of their own" in proc.stderr) is (kind == "landlock"), proc.stderr


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_named_pipe_outside_takes_nothing(kind: str, work: Path, tmp_path: Path) -> None:
    """A FIFO another process reads, in /tmp: bubblewrap shows /tmp empty; Landlock refuses
    the write (no write right there). In a place shown read-only (a read-only mount does not
    stop a write into a FIFO): tests/e2e/security/test_read_only_places.py."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that a writer's open succeeds
    sandbox = opened(kind)
    try:
        proc = subprocess.run(
            [*sandbox.prefix(work, network=False), "/bin/sh", "-c", f"echo leak > {fifo}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        try:
            got = os.read(reader, 100)
        except BlockingIOError:
            got = b""
    finally:
        os.close(reader)
        sandbox.close()
    assert (got == b"leak\n") is (kind == "off"), proc.stderr
    assert (proc.returncode == 0) is (kind == "off"), proc.stderr
