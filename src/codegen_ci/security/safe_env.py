"""Environments without the tool's credentials: for the commands the agent runs and the
repository's validation commands (`safe_env`), and for our own process (`reexec_without_secrets`).

Those commands execute code the model wrote (or a pull request supplied), so they must not see
the credentials codegen-ci itself holds. `safe_env` only *removes* variables and sets
`GIT_TERMINAL_PROMPT=0`; it does not otherwise change what the user's commands mean (no
`PYTHONDONTWRITEBYTECODE`, no `GIT_CONFIG_NOSYSTEM`: their tests run as they would in CI).

Two kinds of removal:

* **Hard-denied** names (`HARD_DENIED`, `HARD_DENIED_GLOBS`): the tool's own credentials
  (`GITHUB_TOKEN`, `OPENAI_API_KEY`, the `ACTIONS_*` runtime tokens and service URLs), every
  action input (`INPUT_*`, which carries `github-token` and `openai-api-key`), and the runner's
  command files (`GITHUB_ENV`, `GITHUB_PATH`, `GITHUB_OUTPUT`, `GITHUB_STATE`,
  `GITHUB_STEP_SUMMARY`), through which a command could set outputs or inject variables and
  `PATH` entries into later workflow steps. No `passthrough` entry can bring these back: a
  spec or `.codegen.yml` may come from a fork, and an allowlist glob like `*` must not
  re-open the door.
* **Secret-looking** names (`is_secret_name`): removed unless the caller's `passthrough`
  allowlist (exact names or `fnmatch` globs) names them, e.g. a test database password.

The same names are kept out of our own process's start-up environment. A command the model
runs can read its parent's environment (`/proc/$PPID/environ`) and print it in a form no
redactor recognises (reversed, encoded). So the commands that run a model first re-execute
themselves with every secret-looking or hard-denied variable removed and receive the values
through a pipe (`reexec_without_secrets`, `restore_secrets`). Values set into `os.environ`
after start-up live on the heap, not in the block that `/proc/<pid>/environ` shows.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

# Secret-looking names, matched per *segment* of the name (segments are separated by anything
# that is not a letter or digit: `_`, `-`, `.`). Matching bare substrings would drop
# KEYBOARD_LAYOUT, TOKENIZERS_PARALLELISM, GIT_AUTHOR_NAME or PWD; matching whole segments
# only would miss GITHUBTOKEN or DBPASSWORD. So:
#   * SECRET, PASSWORD, PASSWD, CREDENTIAL anywhere in a segment (no common word contains them);
#   * a segment *ending* in TOKEN(S) (GITHUBTOKEN, authToken) but not TOKENIZERS;
#   * a segment that is KEY(S) or ends in APIKEY/ACCESSKEY/PRIVATEKEY/AUTHKEY (not MONKEY);
#   * a segment that is exactly AUTH, AUTHORIZATION, PRIVATE, PASS, CREDS, PAT or COOKIE
#     (so AUTHOR, PASSTHROUGH, PATH and PATTERN stay).
# SSH_AUTH_SOCK matches on purpose: an agent socket lets a command use the user's SSH keys.
SECRET_NAME_PATTERN = re.compile(
    r"""
    (?:^|(?<=[^A-Z0-9]))                       # start of a segment
    (?:
        [A-Z0-9]*(?:SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9]*
      | [A-Z0-9]*TOKENS?
      | (?:[A-Z0-9]*(?:API|ACCESS|PRIVATE|AUTH))?KEYS?
      | AUTH|AUTHORIZATION|PRIVATE|PASS|CREDS|PAT|COOKIE
    )
    (?=[^A-Z0-9]|$)                            # end of the segment
    """,
    re.IGNORECASE | re.VERBOSE,
)

# `GIT_CONFIG_KEY_<n>` holds the *name* of a git config key (its value is GIT_CONFIG_VALUE_<n>);
# dropping it would leave GIT_CONFIG_COUNT pointing at a missing key and break every git call.
_NOT_SECRET = re.compile(r"GIT_CONFIG_KEY_\d+", re.IGNORECASE)

HARD_DENIED: frozenset[str] = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "OPENAI_API_KEY",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_RUNTIME_URL",
        "ACTIONS_CACHE_URL",
        "ACTIONS_RESULTS_URL",
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_OUTPUT",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
    }
)
# Upper-cased names are matched against these; `INPUT_*` covers both the runner's hyphenated
# form (INPUT_OPENAI-API-KEY) and the underscore form a shell can set.
HARD_DENIED_GLOBS: tuple[str, ...] = ("INPUT_*", "ACTIONS_*_TOKEN", "ACTIONS_*_URL")

# Set for every command: a git command that needs credentials fails instead of waiting
# forever for a password on a terminal nobody is watching.
FORCED: Mapping[str, str] = {"GIT_TERMINAL_PROMPT": "0"}

SECRETS_FD = "CODEGEN_SECRETS_FD"
MAX_PIPE_BYTES = 60_000  # below the pipe buffer, so writing never blocks before exec
_state = {"restored": False}


# Both tests are pure functions of the name, asked for every variable of the environment at
# each git call (`workspace/git.git_env`) and command: remembered, that is a dict lookup each
# instead of the regular expressions (0.57 ms a git call with 38 variables, 0.05 ms cached).
@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True if an environment variable with this name probably holds a credential."""
    if _NOT_SECRET.fullmatch(name):
        return False
    return SECRET_NAME_PATTERN.search(name) is not None


@functools.lru_cache(maxsize=4096)
def is_hard_denied(name: str) -> bool:
    """True for names no passthrough can keep (see the module docstring)."""
    upper = name.upper()
    return upper in HARD_DENIED or any(fnmatchcase(upper, glob) for glob in HARD_DENIED_GLOBS)


def _passes(name: str, passthrough: Iterable[str]) -> bool:
    return any(name == allowed or fnmatchcase(name, allowed) for allowed in passthrough)


def _removed(name: str, passthrough: tuple[str, ...]) -> bool:
    if is_hard_denied(name):
        return True
    return is_secret_name(name) and not _passes(name, passthrough)


def removed_names(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> list[str]:
    """The names `safe_env` drops from `environ`, sorted (for logging; never the values)."""
    allowed = tuple(passthrough)
    return sorted(name for name in environ if _removed(name, allowed))


def safe_env(
    environ: Mapping[str, str],
    *,
    passthrough: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A copy of `environ` without credentials, plus `extra` and `FORCED`.

    `passthrough` keeps secret-looking names (exact or glob) but never hard-denied ones.
    `extra` is the caller's own additions; a hard-denied name there is a programming error.
    Everything else, `CI=true` included, is kept as it is.
    """
    allowed = tuple(passthrough)
    env = {name: value for name, value in environ.items() if not _removed(name, allowed)}
    for name, value in (extra or {}).items():
        if is_hard_denied(name):
            raise ValueError(f"{name} must not be given to commands the agent can influence")
        env[name] = value
    env.update(FORCED)
    return env


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
