"""Keep secrets out of our own process's start-up environment.

A command the model runs can read its parent's environment (`/proc/$PPID/environ`) and print it
in a form no redactor recognises (reversed, encoded). So the commands that run a model first
re-execute themselves with every secret-looking variable removed and receive the values through
a pipe. Values set into `os.environ` after start-up live on the heap, not in the block that
`/proc/<pid>/environ` shows.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from codegen_ci.security.safe_env import is_hard_denied, is_secret_name

SECRETS_FD = "CODEGEN_SECRETS_FD"
MAX_PIPE_BYTES = 60_000  # below the pipe buffer, so writing never blocks before exec
_state = {"restored": False}


def reexec_without_secrets(argv: Sequence[str]) -> None:
    """Replace this process with itself minus secret variables; returns if nothing to do."""
    if sys.platform != "linux" or SECRETS_FD in os.environ or _state["restored"]:
        return
    secret = {k: v for k, v in os.environ.items() if is_secret_name(k) or is_hard_denied(k)}
    payload = json.dumps(secret).encode()
    if not secret or len(payload) > MAX_PIPE_BYTES:
        return
    read_end, write_end = os.pipe()
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k not in secret}
    env[SECRETS_FD] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "codegen_ci", *argv], env)  # noqa: S606


def restore_secrets() -> None:
    """In the re-executed process: take the values back from the pipe, into memory only."""
    fd = os.environ.pop(SECRETS_FD, None)
    if fd is None:
        return
    _state["restored"] = True
    with os.fdopen(int(fd), "rb") as pipe:
        secret = json.loads(pipe.read() or b"{}")
    os.environ.update({str(k): str(v) for k, v in secret.items()})
