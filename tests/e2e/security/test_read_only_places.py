"""A read-only place is not a closed one (issue 31, points 1 and 3): a read-only mount stops
creating, changing and removing files, not a write into a named pipe (FIFO) that lies there,
nor a connect() to a named Unix socket; and bubblewrap covers only the sockets it found when
the run started. So the launcher runs inside every bubblewrap command (security/
landlock_exec.py, `"inside": "bwrap"`): a Landlock layer for write rights and the guard's
connect() check, as Landlock has them by itself.

The place is a folder shown read-only (as a checkout or a toolchain is) outside /tmp,
/var/tmp, HOME and the other hidden places; the controls: with the sandbox off both attacks
work, and the command's own FIFO and socket in its worktree work under every backend. Where
the kernel has no Landlock, bubblewrap still runs, and the run says what stays open
(report.json `sandbox_gaps`, stderr)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_attacks import attack, outcomes, unix_listener
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import BACKENDS_AND_OFF, launch, results, run_in_process, without_landlock

from codegen_ci.security.landlock import kernel_abi
from codegen_ci.security.sandbox import Sandbox, open_sandbox
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.skipif(kernel_abi() < 1, reason="the kernel has no Landlock")

# The command writes into the FIFO outside, then makes a FIFO of its own in its worktree and
# passes a line through it (the positive control).
FIFO_ATTACK = """
echo leak > "$1" && echo "outside WORKED" || echo "outside REFUSED"
mkfifo own.fifo && { cat own.fifo > own.got & echo mine > own.fifo; wait; }
echo "own $(cat own.got)"
"""


def opened(kind: str) -> Sandbox:
    return open_sandbox({**os.environ, "CODEGEN_SANDBOX": kind}, git_dir=None)


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """The command's worktree and a folder shown to it read-only (short paths: a Unix
    socket's path has at most 107 bytes)."""
    work = Path(tempfile.mkdtemp(prefix="cg-work-"))
    shown = Path(tempfile.mkdtemp(prefix="cg-shown-"))
    yield work, shown
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(shown, ignore_errors=True)


def read_what_came(reader: int) -> bytes:
    try:
        return os.read(reader, 100)
    except BlockingIOError:
        return b""


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_named_pipe_in_a_read_only_place_takes_nothing(
    kind: str, places: tuple[Path, Path]
) -> None:
    """A FIFO this test reads, in a folder shown read-only: bubblewrap's read-only mount let
    a command write into it; the Landlock layer inside refuses it, as Landlock does."""
    work, shown = places
    fifo = shown / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that a writer's open succeeds
    sandbox = opened(kind)
    try:
        prefix = sandbox.wrap(sandbox.confinement(work, network=False, read_only=[shown]))
        proc = subprocess.run(
            [*prefix, "/bin/sh", "-c", FIFO_ATTACK, "sh", str(fifo)],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        got = read_what_came(reader)
    finally:
        os.close(reader)
        sandbox.close()
    out = proc.stdout + proc.stderr
    assert "own mine" in out, out  # the command's own FIFO, in its worktree
    if kind == "off":  # control: the write arrives
        assert got == b"leak\n" and "outside WORKED" in out, out
    else:
        assert got == b"" and "outside REFUSED" in out, out
        assert "Permission denied" in out, out  # Landlock's EACCES, not a read-only EROFS


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_a_socket_made_after_the_start_is_out_of_reach(
    kind: str, places: tuple[Path, Path]
) -> None:
    """A daemon started during the run, its socket in a folder shown read-only: bubblewrap
    found no socket there when the sandbox was opened, so covered none; the guard inside
    refuses the connect() (EACCES), as it does under Landlock. The command's own socket
    server in its worktree works."""
    work, shown = places
    sandbox = opened(kind)
    try:
        late = shown / "daemon.sock"
        with unix_listener(late) as received:  # made after the sandbox was opened
            prefix = sandbox.wrap(sandbox.confinement(work, network=False, read_only=[shown]))
            out = attack(prefix, work, ["unix:late", "own-unix-socket"], **{"unix:late": str(late)})
            if kind == "off":
                wait_for(received)
    finally:
        sandbox.close()
    assert str(late) not in sandbox.sockets
    seen = outcomes(out)
    assert seen["own-unix-socket"] == "WORKED", out
    if kind == "off":  # control: the daemon answers
        assert seen["unix:late"] == "WORKED" and received == [b"leak-unix"], out
    else:
        assert seen["unix:late"] == errno.errorcode[errno.EACCES] and received == [], out


def wait_for(received: list[bytes]) -> None:
    """The control's data arrives on the listener's thread (never a bound that decides the
    test: the assertion fails whatever the wait when nothing arrives)."""
    for _ in range(400):
        if received:
            return
        subprocess.run(["sleep", "0.05"], check=False)


@pytest.mark.bwrap
@pytest.mark.parametrize("landlock", [True, False])
def test_a_bwrap_run_closes_the_pipe_or_says_it_cannot(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    tmp_path: Path,
    landlock: bool,
) -> None:
    """A run under bubblewrap, the model writing into a FIFO in the user's checkout (shown
    read-only). With Landlock: nothing arrives, and report.json says nothing is open. On a
    kernel without it (its system calls fail with ENOSYS) bubblewrap still runs, the write
    arrives, and the run says so: `sandbox_gaps` and a note on stderr."""
    # the model's command is the attack, not the repository's tests: no proof and coverage runs
    # after the passing round (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    fifo = sample_repo.path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(WRITE_FIFO)} {shlex.quote(str(fifo))}"
    model_server.add(Reply(tool_calls=[call("run_command", command=command), FIX]), Reply("ok"))
    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    try:
        if landlock:  # in-process: the FIFO the confined command writes into is the subject
            proc = run_in_process(sample_repo, model_server, spec, sandbox="bwrap")
        else:  # a process, started through a program that takes Landlock away from it
            through = [str(without_landlock(tmp_path))]
            proc = launch(sample_repo, model_server, spec, sandbox="bwrap", through=through)
        got = read_what_came(reader)
    finally:
        os.close(reader)
        fifo.unlink()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = json.loads((out_dir / "report.json").read_text())
    assert report["sandbox"] == "bwrap"
    if landlock:
        assert got == b"" and "fifo REFUSED 13" in seen, seen
        assert report["sandbox_gaps"] == [] and report["landlock_abi"] >= 1
        assert "bubblewrap:" not in proc.stderr, proc.stderr
    else:
        assert got == b"leak" and "fifo WORKED" in seen, seen
        assert report["sandbox_gaps"] == ["named-pipes"] and report["landlock_abi"] is None
        assert "note: bubblewrap: no Landlock layer" in proc.stderr, proc.stderr


WRITE_FIFO = """
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"leak")
    print("fifo WORKED")
except OSError as exc:
    print("fifo REFUSED", exc.errno)
"""
