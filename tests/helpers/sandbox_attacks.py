"""What the confinement tests share: a `codegen-ci run` started the way a runner starts it, and
the attacks a hostile command tries (read other processes' environment, write outside its
worktree, connect to a loopback listener). Used by test_sandbox.py and the tests of the other
confined paths (the base-commit re-run, nested repositories)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner
from sample_repo import PYTEST, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.security.bwrap import argv_again
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.testing.scripted_model import ScriptedModelServer


def tool_env(
    server: ScriptedModelServer, sandbox: str = "", extra: dict[str, str] | None = None
) -> dict[str, str]:
    """What `launch` and `run_in_process` add to the environment of a run: the scripted model,
    the backend (`sandbox`, unless empty), and `extra`."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-0000",
        **({"CODEGEN_SANDBOX": sandbox} if sandbox else {}),
        **(extra or {}),
    }


def run_args(repo: SampleRepo, spec: Path, args: Sequence[str] = ()) -> list[str]:
    """`codegen-ci`'s arguments for a run of `spec` on `repo` (then `args`), into an output
    directory of its own, `out-*` in the repository's temporary folder."""
    out = repo.tmp / f"out-{uuid.uuid4().hex}"
    return ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *args]


def launch(
    repo: SampleRepo,
    server: ScriptedModelServer,
    spec: Path,
    *,
    sandbox: str = "",
    extra: dict[str, str] | None = None,
    shell: str = "/bin/sh",
    through: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`codegen-ci run` started by a shell that holds LAUNCHER_CANARY (the tool does not: it
    gets DEPLOY_TOKEN, which the commands' environment never carries). `shell`: the program
    that shell is (a runner's worker, say); `through`: a program the tool is started by."""
    env = {
        **os.environ,
        "LAUNCHER_CANARY": f"launcher{uuid.uuid4().hex}",
        **tool_env(server, sandbox, extra),
    }
    tool = shlex.join([*through, sys.executable, "-m", "codegen_ci", *run_args(repo, spec)])
    # `; exit $?` keeps the shell alive as the tool's parent, with its environment.
    script = f"env -u LAUNCHER_CANARY DEPLOY_TOKEN=deploy{uuid.uuid4().hex} {tool}; exit $?"
    return subprocess.run(
        [shell, "-c", script], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def run_in_process(
    repo: SampleRepo,
    server: ScriptedModelServer,
    spec: Path,
    *args: str,
    sandbox: str = "",
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`launch`'s run in this process (click's CliRunner, its environment `extra` for the
    run's time), `args` after the run's own (`--push`), for a test whose subject is not the
    process: our git, our readers of what a command left, the gate. The commands it runs are
    as confined as `launch`'s; what only a process shows (the launching shell's canary, the
    re-exec without secrets, the ancestors' environment, the git binary resolved at the
    tool's start) is test_sandbox.py's, test_secret_env.py's and test_git_hardening.py's
    planted-git test's. An exception the run raised is raised here, as a process would print
    its traceback."""
    argv = run_args(repo, spec, args)
    result = CliRunner().invoke(cli, argv, env=tool_env(server, sandbox, extra))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def proof_spec(repo: SampleRepo, **overrides: object) -> Path:
    """`repo.write_spec(**overrides)` with the product's proof (its base-commit worktree, its
    git and confined commands, its coverage run) but no re-run of a failing test (the flaky
    check: one more test process per failing round and per proof), for a security test whose
    subject is not flakiness (tests/e2e/gate/test_validation_gate.py's flaky tests are)."""
    validation = overrides.pop("validation", {"test": [PYTEST], "timeout": 120})
    assert isinstance(validation, dict) and "proof" not in validation, validation
    return repo.write_spec(validation={**validation, "proof": {"reruns": 0}}, **overrides)


def results(server: ScriptedModelServer) -> str:
    """The tool results of the last request the model got."""
    messages = server.requests[-1]["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] == "tool")


def results_each(server: ScriptedModelServer) -> list[str]:
    """Each tool result of the last request the model got, in the order of the calls: the
    attacks planted in one run are told apart by the place of their call."""
    messages = server.requests[-1]["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


# The environment of every ancestor of a command, one variable a line: its parent is a reaper
# (whose environment is PATH alone), the reaper's parent codegen-ci itself, and so on up.
ANCESTORS_ENVIRON = (
    "p=$PPID; while [ \"$p\" -gt 1 ]; do tr '\\0' '\\n' < /proc/$p/environ; "
    "p=$(cut -d' ' -f4 /proc/$p/stat); done"
)

PROC_SCAN = (
    "n=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
    "| grep -c -e '^LAUNCHER_CANARY=' -e '^DEPLOY_TOKEN='); echo found=$n"
)


def write_attempts(repo: SampleRepo, tmp: Path) -> tuple[str, list[Path]]:
    """A command that appends to files outside the worktree, and those files."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    targets = [
        tmp / "runner" / "github_env",
        tmp / "home" / ".gitconfig",
        bin_dir / "git",
        repo.path / ".git" / "config",
        repo.path / ".git" / "hooks" / "pre-commit",
    ]
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    command = "; ".join(
        f"echo pwned >> {shlex.quote(str(p))} && echo WROTE-{i}" for i, p in enumerate(targets)
    )
    return command, targets


@contextmanager
def recording(
    server: socket.socket, *, datagrams: bool = False, answer: bytes = b""
) -> Iterator[list[bytes]]:
    """What a bound `server` receives, recorded by a thread until the block ends (then, what is
    still queued taken, the thread ends and the socket is closed): the first 100 bytes of each
    connection (`answer` sent back), or each datagram. The listeners of this module,
    kernel_attacks.py and the tests share it. The thread ends before the socket is closed: a
    thread left waiting in accept() would take the connections of a later test's socket given
    the same descriptor number (seen in the full suite: an [off] control's listener saw nothing
    while its command connected, and an agent answered that recorded nothing)."""
    received: list[bytes] = []
    stop = threading.Event()
    server.settimeout(0.05)

    def serve() -> None:
        while True:
            try:
                if datagrams:
                    received.append(server.recv(100))
                    continue
                conn, _ = server.accept()
            except TimeoutError:
                if stop.is_set():
                    return  # nothing more queued
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    received.append(conn.recv(100))
                    if answer:
                        conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join(10)
        server.close()


@contextmanager
def loopback_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP server that records what connections send: (port, received)."""
    server = socket.create_server(("127.0.0.1", 0))
    with recording(server) as received:
        yield server.getsockname()[1], received


def connect(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 3).sendall(b'leak')"
    return f"{sys.executable} -c {shlex.quote(code)} && echo CONNECTED"


# Every attack runs under each backend (`CODEGEN_SANDBOX=bwrap` / `landlock`) and, as its
# positive control, with the sandbox off.
BACKENDS = ["bwrap", "landlock"]
BACKENDS_AND_OFF = [*BACKENDS, "off"]
# Where the subject is our own unconfined code (the tool's git reading the names and files a
# confined command left, the report), the backend only confines the command that plants them,
# which each test shows done: such a test runs under one backend, Landlock (it runs wherever
# the kernel has it, bubblewrap or not, and starts cheaper).
ONE_BACKEND = ["landlock"]

NO_LANDLOCK = """
import ctypes, os, struct, sys
# seccomp: landlock_create_ruleset (444) fails with ENOSYS, as on a kernel without Landlock or
# under a container profile that predates it; everything else is allowed. Then exec argv.
arch = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[os.uname().machine]
prog = [(0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, 0x7FFF0000), (0x20, 0, 0, 0),
        (0x15, 0, 1, 444), (0x06, 0, 0, 0x00050000 | 38), (0x06, 0, 0, 0x7FFF0000)]
raw = b"".join(struct.pack("=HBBI", *i) for i in prog)
buf = ctypes.create_string_buffer(raw, len(raw))
fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, fprog, 0, 0) == 0
os.execvp(sys.argv[1], sys.argv[1:])
"""


def without_landlock(tmp: Path) -> Path:
    """A program that runs its arguments on what looks like a kernel without Landlock."""
    script = tmp / "no-landlock"
    script.write_text(f"#!{sys.executable}\n{NO_LANDLOCK}")
    script.chmod(0o755)
    return script


def path_without_bwrap(into: Path) -> str:
    """PATH as this machine's, with `bwrap` taken out (every other program of /usr/bin kept,
    through links in `into/bin`): a machine without bubblewrap, as in GitHub's containers."""
    bin_dir = into / "bin"
    bin_dir.mkdir(parents=True)
    for program in Path("/usr/bin").iterdir():
        if program.name != "bwrap":
            (bin_dir / program.name).symlink_to(program)
    kept = [
        p for p in os.environ["PATH"].split(os.pathsep) if p and not (Path(p) / "bwrap").exists()
    ]
    return os.pathsep.join([str(bin_dir), *kept])


def run_inside(sandbox: Sandbox, work: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` through `/bin/sh` inside `sandbox` from `work`, run again as the tool runs its
    commands (workspace/proc.py) when bubblewrap failed on a place that went away since its
    argv was made (security/bwrap.argv_again): another test, on another worker, makes and
    removes such places (/run/secrets, /var/lib/cloud: test_machine_secrets.py)."""
    argv = [*sandbox.prefix(work, network=False), "/bin/sh", "-c", script]
    for _ in range(5):
        proc = subprocess.run(
            argv,
            env=sandbox.environment(os.environ),
            cwd=work,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        again = argv_again(argv, proc.stderr) if proc.returncode == 1 else None
        if again is None:
            return proc
        argv = again
    return proc
