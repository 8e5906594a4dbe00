"""A named socket listed when the sandbox opens can be closed by its program before bubblewrap
mounts over it: bwrap then cannot make the mount point in the read-only root. That is no
failure of the machine's: the sandbox is proven again without the socket (seen in CI: one test's
socket under /run removed while another test opened its sandbox)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_attacks import unix_listener

from codegen_ci.security.sandbox import open_sandbox

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
