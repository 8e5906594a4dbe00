"""Commands that run repository code are confined (security/sandbox.py), under each backend.

Each attack runs as a real `codegen-ci run` process, launched from a real shell that holds a
secret of its own, with the scripted model over HTTP, once with bubblewrap and once with
Landlock (in this process, sandbox_attacks.run_in_process, where the process takes no part;
beside a process holding that secret where a command scans other processes' environment).
Each has a positive control: the same run with `CODEGEN_SANDBOX=off` (the documented opt-out)
shows the attack working. Where the gate's verdict is not the subject, the test command is
a grep of the fixed line (sample_repo.QUICK_GATE): no test suite starts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import (
    BACKENDS,
    BACKENDS_AND_OFF,
    PROC_SCAN,
    connect,
    launch,
    results,
    results_each,
    run_in_process,
    without_landlock,
    write_attempts,
)
from tests.e2e.security.test_metadata_writes import (
    assert_no_metadata_changed_outside,
    metadata_attack,
)

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call


def runner_home(tmp_path: Path) -> tuple[Path, Path, str]:
    """A self-hosted runner's directory: what it authenticates to GitHub with (`.credentials`,
    `.credentials_rsaparams`, `.runner`) beside its programs, among them a shell installed as
    `bin/Runner.Worker`: (the directory, that shell, the secret its files hold)."""
    runner = tmp_path / "actions-runner"
    (runner / "bin").mkdir(parents=True)
    worker = runner / "bin" / "Runner.Worker"
    shutil.copy(Path("/bin/sh").resolve(), worker)
    secret = f"rsa{uuid.uuid4().hex}"
    for name in (".credentials", ".credentials_rsaparams", ".runner"):
        (runner / name).write_text(f'{{"{name}": "{secret}"}}\n')
    return runner, worker, secret


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_a_models_commands_reach_no_environment_file_network_credential_or_output_outside(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]],
    sandbox: str,
    tmp_path: Path,
) -> None:
    """Seven attacks, each a `run_command` call of its own in ONE run (each asserted on its own
    result): other processes' environment, writes outside the worktree, the network (the spec
    allows none), credentials in the repository config, the runner's own credentials, the
    run's output directory, metadata outside. With the sandbox off (the control) every one of
    them works."""
    port, received = listener
    # the model's commands are the subject, not the proof runs after them (the base re-run's
    # confinement: test_base_rerun_confined.py)
    sample_repo.proof = False
    # environment: the launching shell's and the tool's secrets, in /proc
    scan = PROC_SCAN
    # credentials: actions/checkout's auth header and a token in another remote's URL; the
    # command reads the config reversed (no redactor recognises that)
    url_token, header_token = f"url{uuid.uuid4().hex}", f"hdr{uuid.uuid4().hex}"
    sample_repo.git(
        "remote", "add", "upstream", f"https://x-access-token:{url_token}@github.com/o/r.git"
    )
    sample_repo.git(
        "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: bearer {header_token}"
    )
    read_config = 'rev < "$(git rev-parse --git-common-dir)/config"'
    # the runner's credentials: the tool finds their directory among its ancestors (the
    # shell that starts it is `bin/Runner.Worker`) and keeps it whole
    runner, worker, secret = runner_home(tmp_path)
    read_runner = f"cat {runner}/.credentials* {runner}/.runner | rev; ls {runner}/bin"
    # the output directory holds the transcript and the pre-flight's logs while commands run:
    # bubblewrap shows it empty, Landlock refuses it
    look = f"ls -R {sample_repo.tmp}/out-* 2>&1; echo LOOKED"
    # writes: last, as they append to the repository's git config without the sandbox
    writes, targets = write_attempts(sample_repo, tmp_path)
    # metadata (mode, owner, times, extended attributes) of files outside: a HOME credential,
    # the repository's hooks, the checkout, a program on PATH (test_metadata_writes.py); set up
    # after the files above, its `before` taken last
    metadata, meta_targets, meta_before = metadata_attack(sample_repo, tmp_path)
    attacks = [scan, connect(port), read_config, read_runner, look, metadata, writes]
    model_server.add(
        Reply(tool_calls=[*(call("run_command", command=c) for c in attacks), FIX]),
        Reply("ok"),
    )
    extra = {
        "GITHUB_ENV": str(targets[0]),
        "HOME": str(tmp_path / "home"),
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
    }
    spec = sample_repo.write_spec(validation={**QUICK_GATE, "timeout": 120, "network": []})
    proc = launch(sample_repo, model_server, spec, sandbox=sandbox, extra=extra, shell=str(worker))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results_each(model_server)
    assert len(seen) == len(attacks) + 1, seen
    environ, network, config, runner_files, output, meta, wrote_to = seen[: len(attacks)]
    off = sandbox == "off"

    # other processes' environment
    if off:  # control: the launching shell and the tool are readable
        assert "found=0" not in environ and "found=" in environ, f"environment: {environ}"
    else:
        assert "found=0" in environ, f"environment: {environ}"

    # the network: none unless the spec allows it (test_..._when_the_spec_allows_it)
    time.sleep(0.2)
    assert (b"leak" in received) is off, f"network: {received}"
    assert ("CONNECTED" in network) is off, f"network: {network}"

    # credentials in the repository config
    if sandbox == "landlock":  # it cannot show another file in its place: it keeps it whole
        assert "Permission denied" in config, f"config: {config}"
    else:
        assert "r/o/moc.buhtig" in config, f"config: {config}"  # read (reversed)
    leaked = [t for t in (url_token, header_token) if t[::-1] in config]
    assert leaked == ([url_token, header_token] if off else []), f"config: {config}"

    # the runner's own credentials: none of its files, hidden or shown
    assert ("Runner.Worker" in runner_files) is off, f"runner: {runner_files}"
    assert runner_files.count(secret[::-1]) == (3 if off else 0), f"runner: {runner_files}"

    # the run's own output directory
    assert "LOOKED" in output, f"output directory: {output}"
    assert (".log" in output) is off, f"output directory: {output}"

    # metadata outside: none changed (all with the sandbox off); inside, the same calls work
    assert_no_metadata_changed_outside(meta, meta_targets, meta_before, sandbox, tmp_path)

    # writes outside the worktree
    wrote = [i for i in range(len(targets)) if f"WROTE-{i}" in wrote_to]
    if off:  # control: every one of them is writable without the sandbox
        assert wrote == list(range(len(targets))), f"writes: {wrote_to}"
    else:
        assert wrote == [], f"writes: {wrote_to}"
        assert all(b"pwned" not in p.read_bytes() for p in targets)


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_run_command_has_the_network_when_the_spec_allows_it(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]],
    sandbox: str,
) -> None:
    """`network: [run_command]`; without it, no network (the test above). In this process:
    what the command may reach is the subject, not the process; nor is the proof."""
    sample_repo.proof = False
    port, received = listener
    model_server.add(
        Reply(tool_calls=[call("run_command", command=connect(port)), FIX]), Reply("ok")
    )
    spec = sample_repo.write_spec(validation={**QUICK_GATE, "network": ["run_command"]})
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(0.2)
    assert b"leak" in received
    assert "CONNECTED" in results(model_server)


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_a_test_command_is_confined_too(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    sandbox: str,
    tmp_path: Path,
    listener: tuple[int, list[bytes]],
) -> None:
    port, received = listener
    # no flaky re-run of the failed command after the round (the base re-run's confinement:
    # test_base_rerun_confined.py): the pre-flight's and the round's runs are the subject
    sample_repo.proof = False
    writes, targets = write_attempts(sample_repo, tmp_path)
    # the refused writes' and connection's messages are silenced: printed, they would make the
    # gate stop at the pre-flight with an environment error (exit 3: a place it may not write, a
    # socket Landlock refuses), before the round this test also watches
    hostile = f"{PROC_SCAN}; ( {writes} ) 2>/dev/null; ( {connect(port)} ) 2>/dev/null; exit 1"
    model_server.add(Reply("Nothing to do."))
    spec = sample_repo.write_spec(validation={"test": [hostile]}, limits={"max_iterations": 1})
    # in this process, beside a process holding the canary: the confined test command is the
    # subject (the launching shell and the tool's own process: the model's commands' test)
    with canary_beside():
        proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [out_dir] = sample_repo.tmp.glob("out-*")
    # the run on the untouched code (pre-flight, which answers for the base commit) and round 1
    logs = [*(out_dir / "logs").glob("*test*.log"), *(out_dir / "baseline").glob("logs/*.log")]
    assert len(logs) >= 2, logs
    text = "".join(log.read_text() for log in logs)
    if sandbox == "off":  # control
        assert "found=0" not in text and "WROTE-0" in text and "CONNECTED" in text
        assert b"leak" in received
    else:
        assert text.count("found=0") == len(logs) and "WROTE" not in text
        assert "CONNECTED" not in text
        assert not received and all(b"pwned" not in p.read_bytes() for p in targets)


@contextmanager
def canary_beside() -> Iterator[None]:
    """A process holding LAUNCHER_CANARY (as `launch`'s shell does) while a run goes on in this
    process: PROC_SCAN's `found=0` says the command could not read it. Control: unconfined,
    PROC_SCAN finds it."""
    canary = {"PATH": os.environ["PATH"], "LAUNCHER_CANARY": f"launcher{uuid.uuid4().hex}"}
    holder = subprocess.Popen(["sleep", "300"], env=canary)
    try:
        scan = subprocess.run(["/bin/sh", "-c", PROC_SCAN], capture_output=True, text=True)
        assert "found=" in scan.stdout and "found=0" not in scan.stdout, scan.stdout
        yield
    finally:
        holder.kill()
        holder.wait()


def test_without_bubblewrap_auto_confines_with_landlock(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """No bwrap (and one that cannot create namespaces, as under AppArmor or Docker's seccomp
    profile): `auto` confines with Landlock, says so, and the report names it and its ABI. In
    this process: which backend `auto` takes is the subject, not the process (a process holding
    a canary beside it shows the command confined)."""
    sample_repo.proof = False  # which backend confines is the subject, not the proof runs
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    for bwrap in (tmp_path / "no-such-bwrap", broken):
        model_server.add(
            Reply(tool_calls=[call("run_command", command=PROC_SCAN), FIX]), Reply("ok")
        )
        with canary_beside():
            proc = run_in_process(
                sample_repo,
                model_server,
                sample_repo.write_spec(validation=QUICK_GATE),
                extra={"CODEGEN_BWRAP": str(bwrap)},
            )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "confined with Landlock" in proc.stderr and "found=0" in results(model_server)
        out_dir = max(sample_repo.tmp.glob("out-*"), key=lambda p: p.stat().st_mtime)
        report = json.loads((out_dir / "report.json").read_text())
        assert report["sandbox"] == "landlock" and report["landlock_abi"] >= 1


def test_with_neither_backend_the_run_fails_closed_unless_switched_off(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """No bwrap and a kernel without Landlock (a seccomp filter makes its system calls fail
    with ENOSYS, as on Linux < 5.13 or under a container profile that predates them)."""
    sample_repo.proof = False  # which backend confines (or none) is the subject, not proof
    missing = {"CODEGEN_BWRAP": str(tmp_path / "no-such-bwrap")}
    no_landlock = [str(without_landlock(tmp_path))]
    # the gate is not the subject: a grep of the fixed line (no test suite starts)
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    proc = launch(sample_repo, model_server, spec, extra=missing, through=no_landlock)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "bubblewrap" in proc.stderr and "no Landlock" in proc.stderr
    assert "apt-get install bubblewrap" in proc.stderr and "lsm=landlock" in proc.stderr
    assert "CODEGEN_SANDBOX=off" in proc.stderr
    assert "Traceback" not in proc.stderr and not model_server.requests  # no model call
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = json.loads((out_dir / "report.json").read_text())
    assert (report["status"], report["reason"]) == ("error", "sandbox")
    assert "codegen/" not in sample_repo.git("branch", "--list")  # nothing left behind

    # asking for one backend by name: no falling back to the other (in this process where no
    # seccomp filter is needed: the messages are the subject)
    proc = run_in_process(sample_repo, model_server, spec, sandbox="bwrap", extra=missing)
    assert proc.returncode == 3 and "bubblewrap" in proc.stderr, proc.stdout + proc.stderr
    proc = launch(sample_repo, model_server, spec, sandbox="landlock", through=no_landlock)
    assert proc.returncode == 3 and "no Landlock" in proc.stderr, proc.stdout + proc.stderr

    # the retired user mode is an unknown value (exit 2), never a silent fallback
    proc = run_in_process(sample_repo, model_server, spec, sandbox="user")
    assert proc.returncode == 2 and "landlock" in proc.stderr, proc.stdout + proc.stderr

    # the explicit opt-out runs anyway, and says so
    proc = launch(
        sample_repo,
        model_server,
        spec,
        sandbox="off",
        extra=missing,
        through=no_landlock,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "UNCONFINED" in proc.stderr
    # ... and so does the action's `sandbox: off` input, the same setting (in this process:
    # ignored, `auto` would take this machine's Landlock and say nothing of UNCONFINED)
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    proc = run_in_process(
        sample_repo,
        model_server,
        spec,
        extra={**missing, "INPUT_SANDBOX": "off"},
    )
    assert proc.returncode == 0 and "UNCONFINED" in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_a_confined_command_that_hangs_leaves_no_process_behind(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    marker = f"codegen-marker-{uuid.uuid4().hex}"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(60)' {marker}"
    hanging = f"(trap '' TERM; {sleeper}) & setsid {sleeper} & {sleeper}"
    model_server.add(Reply("Nothing to do."))
    spec = sample_repo.write_spec(
        validation={"test": [hanging], "timeout": 2}, limits={"max_iterations": 1}
    )
    started = time.monotonic()
    # in this process: the command's process tree is the subject, not the tool's process
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - started < 60
    left = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _holds(p, marker)]
    assert left == []


def _holds(cmdline: Path, marker: str) -> bool:
    try:
        return marker.encode() in cmdline.read_bytes()
    except OSError:
        return False
