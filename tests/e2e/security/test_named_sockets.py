"""Under Landlock a confined command cannot connect to a named Unix socket outside its writable
places (an ssh-agent's under /tmp or HOME, a session bus under /run): Landlock does not cover
connect() to a path, so the metadata guard (security/metadata_guard.py) answers every
connect(), reaching a socket file only beneath a writable place, through its own descriptor of
that file. A full run shows the user's ssh-agent out of reach (positive control: with the
sandbox off it signs); a command's own sockets, links swapped in and TCP are shown at the
launcher."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import recording, results, run_in_process

from codegen_ci.security.confinement import Confinement
from codegen_ci.security.landlock import kernel_abi, landlock_argv
from codegen_ci.security.sandbox import toolchain_places
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.skipif(kernel_abi() < 1, reason="the kernel has no Landlock")


@contextmanager
def fake_agent(path: Path) -> Iterator[list[bytes]]:
    """A Unix stream listener at `path` that answers `SIGNED` and records what it got."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(5)
    with recording(server, answer=b"SIGNED") as received:
        yield received


ASK = """
import socket, sys
def ask(label, path):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"sign this")
        print(label, s.recv(10).decode())
    except OSError as exc:
        print(label, "REFUSED", exc.errno)
"""


@pytest.mark.parametrize("sandbox", ["landlock", "off"])
def test_the_users_ssh_agent_is_out_of_reach(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    # the model's command is the attack, not the repository's tests: no proof and coverage runs
    # after the passing round (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    agent_dir = tmp_path / "ssh-XXXXabc"  # where ssh-agent puts its socket: /tmp/ssh-*/agent.N
    agent_dir.mkdir()
    agent = agent_dir / "agent.1234"
    code = f"{ASK}\nask('agent', {str(agent)!r})"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    model_server.add(Reply(tool_calls=[call("run_command", command=command), FIX]), Reply("ok"))
    # in-process: the socket the model's command reaches is the subject, not how the tool was
    # started (test_secret_env keeps the process)
    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    with fake_agent(agent) as received:
        proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    if sandbox == "off":  # control: the agent answers
        assert "agent SIGNED" in seen and received == [b"sign this"]
    else:
        assert "agent REFUSED 13" in seen and received == []


OWN = """
import os, socket, threading
server = socket.socket(socket.AF_UNIX)
server.bind("own.sock")
server.listen(5)
def serve():
    while True:
        conn, _ = server.accept()
        conn.recv(100)
        conn.sendall(b"OWN")
        conn.close()
threading.Thread(target=serve, daemon=True).start()
ask("own", "own.sock")
ask("own-absolute", os.path.abspath("own.sock"))
os.symlink(AGENT, "innocent.sock")
ask("link-to-agent", "innocent.sock")
ask("agent", AGENT)
ask("missing", "missing.sock")
"""


@pytest.mark.parametrize("network", [False, True])
def test_own_sockets_work_links_out_do_not_and_tcp_is_landlocks_to_decide(
    tmp_path: Path, network: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    agent = tmp_path / "agent.sock"
    code = f"{ASK}\nAGENT = {str(agent)!r}\n{OWN}"
    with fake_agent(agent) as received, socket.create_server(("127.0.0.1", 0)) as tcp:
        port = tcp.getsockname()[1]
        code += f"\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 3)\n"
        code += "    print('tcp CONNECTED')\nexcept OSError as exc:\n    print('tcp REFUSED')\n"
        confinement = Confinement(work, (work,), toolchain_places(os.environ), network=network)
        proc = subprocess.run(
            [*landlock_argv(confinement), sys.executable, "-c", code],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "own OWN" in out and "own-absolute OWN" in out, out
    assert "link-to-agent REFUSED 13" in out and "agent REFUSED 13" in out, out
    assert "missing REFUSED 2" in out, out
    assert received == []
    assert ("tcp CONNECTED" in out) is network, out
