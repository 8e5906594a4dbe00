"""A test that makes a semaphore (Python's multiprocessing) needs a writable /dev/shm:
bubblewrap gives each command its own and the run goes on; Landlock cannot (no mounts), the
semaphore is refused with an EACCES naming no path, and the run ends as an environment error
that says what to do, never as the model's failure (found on pytoolz/toolz's
test_parallel.py::test_fold, run under Landlock with the right fix: three rounds, "stuck").
Real pytest, both backends, the scripted model."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from sample_repo import FIX, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

USES_A_LOCK = """\
import multiprocessing


def test_a_lock_between_processes():
    lock = multiprocessing.Lock()
    with lock:
        assert True
"""


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            "bwrap", marks=pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bwrap")
        ),
        "landlock",
    ],
)
def test_a_semaphore_refused_by_the_sandbox_is_an_environment_error_not_the_models(
    backend: str,
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the lock the repository's own test takes is the subject, and no hostile code runs: no
    # proof and coverage runs after bubblewrap's passing round (sample_repo.py's default;
    # test_base_rerun_confined is about the confined runs on the base commit)
    sample_repo.proof = False
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    sample_repo.commit({"tests/test_lock.py": USES_A_LOCK}, "a test with a lock")
    model_env.add(Reply(tool_calls=[FIX]), Reply("fixed"), Reply("fixed"))
    spec = sample_repo.write_spec()
    out = sample_repo.tmp / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    if backend == "bwrap":  # a /dev/shm of its own: the lock is made, the fix passes
        assert result.exit_code == 0, result.output
        assert report["status"] == "success" and report["rounds"][0]["tests"]["failed"] == 0
        return
    assert result.exit_code == 3, result.output
    assert (report["status"], report["reason"]) == ("error", "environment")
    assert "/dev/shm" in report["error"] and "bubblewrap" in report["error"]
    assert "multiprocessing" in report["error"]
    # one model turn, then the run stopped: the refused lock was never handed to the model
    assert report["iterations"] == 1 and len(model_env.tool_requests) == 2
    assert not any(
        "Permission denied" in str(m.get("content"))
        for r in model_env.tool_requests
        for m in r["messages"]
        if m.get("role") == "user"
    )


SERVES_ON_LOOPBACK = """\
import socket


def test_a_server_of_its_own():
    with socket.create_server(("127.0.0.1", 0)) as server:
        assert server.getsockname()[1] > 0
"""


def test_a_socket_refused_by_landlock_is_an_environment_error_not_the_models(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a test's own server on 127.0.0.1 (mahmoud/boltons' test_socketutils.py):
    Landlock without the network refuses inet sockets, which no change can mend. (Bubblewrap
    gives the command a loopback of its own: test_sandbox.py.)"""
    sample_repo.proof = False
    monkeypatch.setenv("CODEGEN_SANDBOX", "landlock")
    sample_repo.commit({"tests/test_server.py": SERVES_ON_LOOPBACK}, "a test with a server")
    model_env.add(Reply(tool_calls=[FIX]), Reply("fixed"), Reply("fixed"))
    spec, out = sample_repo.write_spec(), sample_repo.tmp / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    assert result.exit_code == 3, result.output
    assert (report["status"], report["reason"], report["loopback"]) == (
        "error",
        "environment",
        "none",
    )
    assert "refused the command a socket" in report["error"]
    assert "validation.network: [test]" in report["error"]
    assert report["iterations"] == 1 and len(model_env.tool_requests) == 2
