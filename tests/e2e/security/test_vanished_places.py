"""A place listed when the sandbox opens or a command's argv is made (a named socket, a hidden
folder) can be gone before bubblewrap mounts over it: bwrap then cannot make the mount point in
the read-only root. That is no failure of the machine's nor the command's: the sandbox is proven
again, and the command run again, without that mount (seen under load: one test's socket under
/run, and /run/secrets another test made, removed while a run used them)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_attacks import unix_listener

from codegen_ci.security.bwrap import bwrap_argv
from codegen_ci.security.confinement import Confinement
from codegen_ci.security.sandbox import open_sandbox
from codegen_ci.workspace.proc import run_shell

pytestmark = pytest.mark.bwrap

# bwrap as a program that closes a socket just before the real bwrap starts: the first time it
# runs, it removes the socket and fails as bwrap does when a mount point's file has gone.
CLOSING_BWRAP = """#!/bin/sh
if [ ! -e "{mark}" ]; then
  : > "{mark}"
  rm -f "{socket}"
  echo "bwrap: Can't create file at {socket}: Read-only file system" >&2
  exit 1
fi
exec {bwrap} "$@"
"""


@pytest.fixture
def short() -> Iterator[Path]:
    """A short path (a Unix socket's has at most 107 bytes), outside every hidden place."""
    path = Path(tempfile.mkdtemp(prefix="cg-sock-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_socket_closed_before_bwraps_mount_does_not_make_the_sandbox_unavailable(
    short: Path,
) -> None:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    socket, mark = short / "agent.sock", short / "closed"
    fake = short / "bwrap"
    fake.write_text(CLOSING_BWRAP.format(mark=mark, socket=socket, bwrap=bwrap))
    fake.chmod(0o755)
    with unix_listener(socket):
        environ = {**os.environ, "CODEGEN_SANDBOX": "bwrap", "CODEGEN_BWRAP": str(fake)}
        sandbox = open_sandbox(environ, git_dir=None)
        try:
            assert sandbox.kind == "bwrap"
            assert socket in sandbox.sockets  # listed at the start, gone at the mount
        finally:
            sandbox.close()
    assert mark.exists()  # the closing bwrap ran: the socket went between listing and mount


# bwrap as a program that removes a folder just before the real bwrap starts (the first time).
REMOVING_BWRAP = """#!/bin/sh
rmdir "{place}" 2>/dev/null
exec {bwrap} "$@"
"""


def test_a_hidden_folder_removed_before_bwraps_mount_does_not_fail_the_command(
    short: Path,
) -> None:
    if not os.access("/run", os.W_OK):
        pytest.skip("a folder in /run (read-only inside the sandbox) needs root")
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    place = Path(f"/run/cg-vanish-{uuid.uuid4().hex[:8]}")
    place.mkdir()
    fake = short / "bwrap"
    fake.write_text(REMOVING_BWRAP.format(place=place, bwrap=bwrap))
    fake.chmod(0o755)
    work = short / "work"
    work.mkdir()
    try:
        wrap = bwrap_argv(str(fake), Confinement(work, writable=(work,), hidden=(place,)))
        result = run_shell(
            "echo confined",
            cwd=work,
            env=dict(os.environ),
            timeout=60,
            output_path=short / "out.log",
            wrap=wrap,
        )
    finally:
        place.rmdir() if place.exists() else None
    output = (short / "out.log").read_text()
    assert result.exit_code == 0, output
    assert output.strip() == "confined"
