"""Commands that run repository code are confined (security/sandbox.py), under each backend.

Each attack runs as a real `codegen-ci run` process, launched from a real shell that holds a
secret of its own, with the scripted model over HTTP, once with bubblewrap and once with
Landlock. Each has a positive control: the same run with `CODEGEN_SANDBOX=off` (the documented
opt-out) shows the attack working.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest
from sample_repo import FIX, SampleRepo
from sandbox_attacks import (
    BACKENDS,
    BACKENDS_AND_OFF,
    PROC_SCAN,
    connect,
    launch,
    results,
    without_landlock,
    write_attempts,
)

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_run_command_cannot_read_other_processes_environment(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    model_server.add(Reply(tool_calls=[call("run_command", command=PROC_SCAN), FIX]), Reply("ok"))
    proc = launch(sample_repo, model_server, sample_repo.write_spec(), sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    if sandbox == "off":  # control: the launching shell and the tool are readable
        assert "found=0" not in seen and "found=" in seen
    else:
        assert "found=0" in seen


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_run_command_cannot_write_outside_the_worktree(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    command, targets = write_attempts(sample_repo, tmp_path)
    model_server.add(Reply(tool_calls=[call("run_command", command=command), FIX]), Reply("ok"))
    extra = {
        "GITHUB_ENV": str(targets[0]),
        "HOME": str(tmp_path / "home"),
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
    }
    proc = launch(sample_repo, model_server, sample_repo.write_spec(), sandbox=sandbox, extra=extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    wrote = [i for i in range(len(targets)) if f"WROTE-{i}" in seen]
    if sandbox == "off":  # control: every one of them is writable without the sandbox
        assert wrote == list(range(len(targets)))
    else:
        assert wrote == []
        assert all(b"pwned" not in p.read_bytes() for p in targets)


NETWORK_CASES = [
    *((b, [], False) for b in BACKENDS),
    *((b, ["run_command"], True) for b in BACKENDS),
    ("off", [], True),
]


@pytest.mark.parametrize(
    ("sandbox", "network", "reached"),
    NETWORK_CASES,
)
def test_run_command_has_no_network_unless_the_spec_allows_it(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    listener: tuple[int, list[bytes]],
    sandbox: str,
    network: list[str],
    reached: bool,
) -> None:
    port, received = listener
    model_server.add(
        Reply(tool_calls=[call("run_command", command=connect(port)), FIX]), Reply("ok")
    )
    spec = sample_repo.write_spec(
        validation={"test": [f"{sys.executable} -m pytest -q tests"], "network": network}
    )
    proc = launch(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(0.2)
    assert (b"leak" in received) is reached
    assert ("CONNECTED" in results(model_server)) is reached


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_a_test_command_is_confined_too(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    sandbox: str,
    tmp_path: Path,
    listener: tuple[int, list[bytes]],
) -> None:
    port, received = listener
    writes, targets = write_attempts(sample_repo, tmp_path)
    # the refused writes' messages are silenced: printed, they would make the gate stop at the
    # pre-flight with an environment error (exit 3), before the round this test also watches
    hostile = f"{PROC_SCAN}; ( {writes} ) 2>/dev/null; {connect(port)}; exit 1"
    model_server.add(Reply("Nothing to do."))
    spec = sample_repo.write_spec(validation={"test": [hostile]}, limits={"max_iterations": 1})
    proc = launch(sample_repo, model_server, spec, sandbox=sandbox)
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


def test_without_bubblewrap_auto_confines_with_landlock(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """No bwrap (and one that cannot create namespaces, as under AppArmor or Docker's seccomp
    profile): `auto` confines with Landlock, says so, and the report names it and its ABI."""
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    for bwrap in (tmp_path / "no-such-bwrap", broken):
        model_server.add(
            Reply(tool_calls=[call("run_command", command=PROC_SCAN), FIX]), Reply("ok")
        )
        proc = launch(
            sample_repo, model_server, sample_repo.write_spec(), extra={"CODEGEN_BWRAP": str(bwrap)}
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
    missing = {"CODEGEN_BWRAP": str(tmp_path / "no-such-bwrap")}
    no_landlock = [str(without_landlock(tmp_path))]
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    proc = launch(
        sample_repo, model_server, sample_repo.write_spec(), extra=missing, through=no_landlock
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "bubblewrap" in proc.stderr and "no Landlock" in proc.stderr
    assert "apt-get install bubblewrap" in proc.stderr and "lsm=landlock" in proc.stderr
    assert "CODEGEN_SANDBOX=off" in proc.stderr
    assert "Traceback" not in proc.stderr and not model_server.requests  # no model call
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = json.loads((out_dir / "report.json").read_text())
    assert (report["status"], report["reason"]) == ("error", "sandbox")
    assert "codegen/" not in sample_repo.git("branch", "--list")  # nothing left behind

    # asking for one backend by name: no falling back to the other
    proc = launch(
        sample_repo, model_server, sample_repo.write_spec(), sandbox="bwrap", extra=missing
    )
    assert proc.returncode == 3 and "bubblewrap" in proc.stderr, proc.stdout + proc.stderr
    proc = launch(
        sample_repo, model_server, sample_repo.write_spec(), sandbox="landlock", through=no_landlock
    )
    assert proc.returncode == 3 and "no Landlock" in proc.stderr, proc.stdout + proc.stderr

    # the retired user mode is an unknown value (exit 2), never a silent fallback
    proc = launch(sample_repo, model_server, sample_repo.write_spec(), sandbox="user")
    assert proc.returncode == 2 and "landlock" in proc.stderr, proc.stdout + proc.stderr

    # the explicit opt-out runs anyway, and says so
    proc = launch(
        sample_repo,
        model_server,
        sample_repo.write_spec(),
        sandbox="off",
        extra=missing,
        through=no_landlock,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "UNCONFINED" in proc.stderr
    # ... and so does the action's `sandbox: off` input
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    proc = launch(
        sample_repo,
        model_server,
        sample_repo.write_spec(),
        extra={**missing, "INPUT_SANDBOX": "off"},
        through=no_landlock,
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
    proc = launch(sample_repo, model_server, spec, sandbox=sandbox)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - started < 60
    left = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _holds(p, marker)]
    assert left == []


def _holds(cmdline: Path, marker: str) -> bool:
    try:
        return marker.encode() in cmdline.read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_credentials_in_the_repository_config_are_out_of_reach(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    """actions/checkout's auth header and a token in another remote's URL: a command reads
    the config reversed (no redactor recognises that); the sandbox shows it without them."""
    url_token, header_token = f"url{uuid.uuid4().hex}", f"hdr{uuid.uuid4().hex}"
    sample_repo.git(
        "remote", "add", "upstream", f"https://x-access-token:{url_token}@github.com/o/r.git"
    )
    sample_repo.git(
        "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: bearer {header_token}"
    )
    read = 'rev < "$(git rev-parse --git-common-dir)/config"'
    model_server.add(Reply(tool_calls=[call("run_command", command=read), FIX]), Reply("ok"))
    proc = launch(sample_repo, model_server, sample_repo.write_spec(), sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    if sandbox == "landlock":  # it cannot show another file in its place: it keeps it whole
        assert "Permission denied" in seen
    else:
        assert "r/o/moc.buhtig" in seen  # the config was read (reversed)
    leaked = [t for t in (url_token, header_token) if t[::-1] in seen]
    assert leaked == ([url_token, header_token] if sandbox == "off" else [])


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_the_runners_own_credentials_are_hidden(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str, tmp_path: Path
) -> None:
    """A self-hosted runner keeps what it authenticates to GitHub with beside its programs
    (`.credentials`, `.credentials_rsaparams`, `.runner`); the tool finds that directory among
    its ancestors (here a shell installed as `bin/Runner.Worker`) and keeps it whole."""
    runner = tmp_path / "actions-runner"
    (runner / "bin").mkdir(parents=True)
    worker = runner / "bin" / "Runner.Worker"
    shutil.copy(Path("/bin/sh").resolve(), worker)
    secret = f"rsa{uuid.uuid4().hex}"
    for name in (".credentials", ".credentials_rsaparams", ".runner"):
        (runner / name).write_text(f'{{"{name}": "{secret}"}}\n')
    read = f"cat {runner}/.credentials* {runner}/.runner | rev; ls {runner}/bin"
    model_server.add(Reply(tool_calls=[call("run_command", command=read), FIX]), Reply("ok"))
    proc = launch(
        sample_repo, model_server, sample_repo.write_spec(), sandbox=sandbox, shell=str(worker)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert ("Runner.Worker" in seen) is (sandbox == "off")  # the runner's own files: none
    assert seen.count(secret[::-1]) == (3 if sandbox == "off" else 0)


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_the_runs_own_output_directory_is_out_of_reach(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    """The output directory holds the transcript and the pre-flight's logs while commands run:
    nothing of it is visible to them (bubblewrap shows it empty, Landlock refuses it)."""
    look = f"ls -R {sample_repo.tmp}/out-* 2>&1; echo LOOKED"
    model_server.add(Reply(tool_calls=[call("run_command", command=look), FIX]), Reply("ok"))
    proc = launch(sample_repo, model_server, sample_repo.write_spec(), sandbox=sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert "LOOKED" in seen
    assert (".log" in seen) is (sandbox == "off"), seen
