"""The machine's secrets are out of reach (the brief: the model never sees a secret). A CI
container holds secrets outside HOME: Docker and Compose secrets in `/run/secrets`, the
Kubernetes service-account token in `/var/run/secrets/kubernetes.io/serviceaccount/token`,
TLS keys in `/etc/ssl/private`, cloud-init's user-data in `/var/lib/cloud`, root's
`.docker/config.json` when HOME is elsewhere (a container job). Both backends read them before
(bubblewrap shows the machine read-only, Landlock grants `/run` and `/etc`); now both hide
them (security/secret_places.py), as root and as another user. A user names more with
`CODEGEN_SANDBOX_HIDE`.

The files are real ones at those paths (this needs root; each under a fresh name, removed
after, and a folder this test made removed with it); the positive control reads each with the
sandbox off."""

from __future__ import annotations

import compileall
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import BACKENDS_AND_OFF, results, run_in_process

from codegen_ci.security.landlock import kernel_abi
from codegen_ci.security.sandbox import open_sandbox
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.skipif(kernel_abi() < 1, reason="the kernel has no Landlock")

SRC = Path(__file__).resolve().parents[3] / "src"

# Opens the sandbox as the user it runs as, reads each path with a confined `cat`, and prints
# what it read: {path: text or ""}.
READER = """
import json, os, subprocess, sys, tempfile
from pathlib import Path
from codegen_ci.security.sandbox import open_sandbox
kind, paths = sys.argv[1], sys.argv[2:]
sandbox = open_sandbox({**os.environ, "CODEGEN_SANDBOX": kind}, git_dir=None)
sandbox.new_phase()
work = Path(tempfile.mkdtemp(prefix="cg-secrets-work-"))
seen = {}
for path in paths:
    proc = subprocess.run([*sandbox.prefix(work, network=False), "cat", path], cwd=work,
                          env=sandbox.environment(os.environ), capture_output=True, text=True)
    seen[path] = proc.stdout
sandbox.close()
os.rmdir(work)
print(json.dumps(seen))
"""


def read_here(kind: str, paths: list[Path]) -> dict[str, str]:
    """READER's reads in this process: the tool run as root, as this test is."""
    environ = {**os.environ, "CODEGEN_SANDBOX": kind, "TMPDIR": "/tmp"}
    sandbox = open_sandbox(environ, git_dir=None)
    sandbox.new_phase()
    work = Path(tempfile.mkdtemp(prefix="cg-secrets-work-", dir="/tmp"))
    seen = {}
    try:
        for path in paths:
            proc = subprocess.run(
                [*sandbox.prefix(work, network=False), "cat", str(path)],
                cwd=work,
                env=sandbox.environment(environ),
                capture_output=True,
                text=True,
                check=False,
            )
            seen[str(path)] = proc.stdout
    finally:
        sandbox.close()
        os.rmdir(work)
    return seen


def read_confined(
    kind: str, paths: list[Path], *, user: int | None = None, lib: Path | None = None
) -> dict[str, str]:
    """What a confined `cat` reads of each path, the tool run as root (in this process) or as
    `user` (a process of that user's, the tool's source from `lib`)."""
    if user is None:
        return read_here(kind, paths)
    assert lib is not None, "another user reads the tool's source from `lib` (tool_lib)"
    python = [system_python(), "-c", READER, kind, *map(str, paths)]
    argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *python]
    home = Path(tempfile.mkdtemp(prefix="cg-secrets-home-"))
    os.chown(home, user, user)
    env = {**os.environ, "PYTHONPATH": str(lib), "TMPDIR": "/tmp", "HOME": str(home)}
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr
    seen: dict[str, str] = json.loads(proc.stdout.splitlines()[-1])
    return seen


@pytest.fixture(scope="module")
def tool_lib() -> Iterator[Path]:
    """The tool's source where another user can read it, compiled (that user cannot write its
    bytecode), for the module's tests: this checkout may lie in a folder only root enters (CI
    clones into a `mktemp -d`, mode 0700)."""
    lib = Path(tempfile.mkdtemp(prefix="cg-secrets-lib-"))
    lib.chmod(0o755)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(SRC / "codegen_ci", lib / "codegen_ci", ignore=ignore)
    compileall.compile_dir(lib, quiet=1)
    yield lib
    shutil.rmtree(lib, ignore_errors=True)


def system_python() -> str:
    """The system's Python 3.11+ (this test's own may lie in root's HOME, which another user
    cannot enter: pyenv in /root)."""
    found = shutil.which("python3", path="/usr/bin:/bin")
    check = [found or "python3", "-c", "import sys; assert sys.version_info >= (3, 11)"]
    if found is None or subprocess.run(check, capture_output=True, check=False).returncode:
        pytest.skip("no system Python 3.11 for another user to run the tool with")
    return found


# Where CI machines keep secrets: (the folder that holds them, a file made inside it).
PLACES = {
    "docker secret": ("/run/secrets", "{tag}/db_password"),
    "kubernetes token": ("/var/run/secrets", "{tag}/kubernetes.io/serviceaccount/token"),
    "TLS key": ("/etc/ssl/private", "{tag}.key"),
    "cloud-init user-data": ("/var/lib/cloud", "{tag}/user-data.txt"),
    "root's docker config": ("/root", "{tag}/.docker/config.json"),
}
# Readable by every user outside (Docker mounts secrets 0444; a projected token is 0644)
WORLD_READABLE = ("docker secret", "kubernetes token", "cloud-init user-data")


@pytest.fixture
def planted() -> Iterator[tuple[str, dict[str, Path]]]:
    """A secret in each place (world-readable files, as Docker makes them); removed after,
    with each top folder that did not exist before. One test at a time on the machine (a lock
    beside the xdist workers): a top folder one test made and removes would take another's
    secrets with it, and that test's control would fail."""
    if os.geteuid() != 0:
        pytest.skip("making files under /run/secrets, /etc/ssl/private and /root needs root")
    with open(Path(tempfile.gettempdir()) / "codegen-ci-machine-secrets.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield from plant()


def plant() -> Iterator[tuple[str, dict[str, Path]]]:
    tag = f"cg-{uuid.uuid4().hex[:10]}"
    secret = f"SECRET-{uuid.uuid4().hex}"
    made: list[Path] = []  # top folders this test made, removed after
    files: dict[str, Path] = {}
    try:
        for name, (top, inside) in PLACES.items():
            folder = Path(top)
            if not folder.exists():
                folder.mkdir(parents=True)
                made.append(folder)
            path = folder / inside.format(tag=tag)
            path.parent.mkdir(parents=True, exist_ok=True)
            for parent in (path.parent, *path.parent.parents):
                if parent == folder:
                    break
                parent.chmod(0o755)
            path.write_text(f"{secret} {name}\n")
            path.chmod(0o444)
            files[name] = path
        yield secret, files
    finally:
        for top, inside in PLACES.values():
            first = Path(top) / Path(inside.format(tag=tag)).parts[0]
            if first.is_dir() and not first.is_symlink():
                shutil.rmtree(first, ignore_errors=True)
            else:
                first.unlink(missing_ok=True)
        for folder in reversed(made):
            shutil.rmtree(folder, ignore_errors=True)


def secrets_read(
    kind: str,
    planted: tuple[str, dict[str, Path]],
    *,
    user: int | None = None,
    lib: Path | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The places whose secret a confined `cat` read (run as root or as `user`), and what it
    read of each path."""
    secret, files = planted
    seen = read_confined(kind, list(files.values()), user=user, lib=lib)
    return [name for name, path in files.items() if secret in seen[str(path)]], seen


def run_confined(
    environ: dict[str, str],
    work: Path,
    shown: Path,
    argv: list[str],
    *,
    sandbox_env: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`argv` run in a sandbox opened with `environ`, in `work` (made here), with `shown` shown
    read-only; `sandbox_env`: in the environment the sandbox gives its commands."""
    work.mkdir()
    sandbox = open_sandbox(environ, git_dir=None)
    try:
        prefix = sandbox.wrap(sandbox.confinement(work, network=False, read_only=[shown]))
        return subprocess.run(
            [*prefix, *argv],
            cwd=work,
            env=sandbox.environment(environ) if sandbox_env else None,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        sandbox.close()


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_the_machines_secrets_are_hidden_from_root(
    kind: str, planted: tuple[str, dict[str, Path]]
) -> None:
    """codegen-ci run as root (a CI container): every secret readable outside, none inside."""
    read, seen = secrets_read(kind, planted)
    if kind == "off":  # control: root reads each of them
        assert read == list(PLACES)
    else:
        assert read == [], seen


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_the_models_command_reads_no_secret_of_the_machine(
    kind: str,
    planted: tuple[str, dict[str, Path]],
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
) -> None:
    """A full run: the model's `run_command` hunts the secrets (reversed, so no redactor
    would know them) and finds none; with the sandbox off it finds them all."""
    # the model's command is the attack, not the repository's tests: no proof and coverage runs
    # after the passing round (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    secret, files = planted
    command = f"cat {' '.join(map(str, files.values()))} | rev; echo DONE"
    model_server.add(Reply(tool_calls=[call("run_command", command=command), FIX]), Reply("ok"))
    # in-process: the machine's files the model's command reads are the subject, not how the
    # tool was started (test_secret_env keeps the process)
    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    proc = run_in_process(sample_repo, model_server, spec, sandbox=kind)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert "DONE" in seen
    read = [name for name in files if f"{secret} {name}"[::-1] in seen]
    assert read == (list(PLACES) if kind == "off" else []), seen


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_the_machines_secrets_are_hidden_from_another_user(
    kind: str, planted: tuple[str, dict[str, Path]], tool_lib: Path
) -> None:
    """codegen-ci run as an ordinary user (`nobody`): the secrets any user can read outside
    (Docker's, the Kubernetes token) are hidden inside too."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    read, seen = secrets_read(kind, planted, user=65534, lib=tool_lib)
    if kind == "off":  # control: what is readable by every user is readable by this one
        assert read == list(WORLD_READABLE)
    else:
        assert read == [], seen


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_places_the_user_names_are_hidden(kind: str, tmp_path: Path) -> None:
    """`CODEGEN_SANDBOX_HIDE` hides more places: a folder inside one shown read-only (as a
    checkout or toolchain is), and a file there; their neighbour stays readable."""
    shown = Path(tempfile.mkdtemp(prefix="cg-shown-"))
    try:
        (shown / "vault").mkdir()
        (shown / "vault" / "key").write_text("SECRET-vault\n")
        (shown / "token").write_text("SECRET-token\n")
        (shown / "readme").write_text("PUBLIC\n")
        hide = f"{shown / 'vault'}:{shown / 'token'}"
        environ = {**os.environ, "CODEGEN_SANDBOX": kind, "CODEGEN_SANDBOX_HIDE": hide}
        names = [shown / "vault" / "key", shown / "token", shown / "readme"]
        proc = run_confined(environ, tmp_path / "work", shown, ["cat", *map(str, names)])
    finally:
        shutil.rmtree(shown, ignore_errors=True)
    assert "PUBLIC" in proc.stdout, proc.stderr
    if kind == "off":  # control: nothing is hidden without a sandbox
        assert "SECRET-vault" in proc.stdout and "SECRET-token" in proc.stdout
    else:
        assert "SECRET" not in proc.stdout, proc.stdout


@pytest.mark.parametrize("kind", BACKENDS_AND_OFF)
def test_gits_system_config_is_shown_without_its_credentials(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A self-hosted runner's system git config with a token in an `insteadOf` URL (here named
    by `GIT_CONFIG_SYSTEM`, as git allows, rather than the machine's /etc/gitconfig): the file
    is hidden, and git inside reads a copy without the token; its other settings stay."""
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    shown = Path(tempfile.mkdtemp(prefix="cg-etc-"))
    token = f"ghp_{uuid.uuid4().hex}"
    config = shown / "gitconfig"
    config.write_text(
        f'[url "https://x-access-token:{token}@github.com/"]\n\tinsteadOf = https://github.com/\n'
        "[core]\n\tabbrev = 11\n"
    )
    config.chmod(0o644)
    environ = {**os.environ, "CODEGEN_SANDBOX": kind, "GIT_CONFIG_SYSTEM": str(config)}
    script = f"cat {config}; git config --system --list; git init -q repo && echo GIT-OK"
    try:
        proc = run_confined(
            environ, tmp_path / "work", shown, ["/bin/sh", "-c", script], sandbox_env=True
        )
    finally:
        shutil.rmtree(shown, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert "GIT-OK" in out and "core.abbrev=11" in out, out  # git works, the settings stay
    if kind == "off":  # control: the token is there to read
        assert token in out
    else:
        assert token not in out and "url.https://github.com/.insteadof" in out, out
