"""The re-run of failing tests on the base commit runs confined too, under each backend.

When a round's tests fail, the baseline (gate/baseline.py) re-runs the failing test ids on the
base commit, in a separate detached worktree. A pytest pre-flight only collects, so it never
answers for the base: the re-run happens. Here the base commit's own test is hostile (it reads
other processes' environment, writes outside its tree, connects to a loopback listener) and the
model rewrites that test to a harmless one that still fails, so the hostile code runs in the
base re-run and nowhere else. Positive control: the same run with `CODEGEN_SANDBOX=off` shows
every attack working in that same base re-run.

The run is in-process (sandbox_attacks.run_in_process): the confined base re-run is the
subject, not how the tool was started. The other process whose environment the hostile test
hunts is a sleeper beside the run holding the launcher's canary (test_sandbox.py keeps the
launching shell and the tool's own process).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sample_repo import FIX, SampleRepo
from sandbox_attacks import BACKENDS_AND_OFF, PROC_SCAN, connect, run_in_process, write_attempts

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

PROBE = "tests/test_probe.py"
HOSTILE_TEST = """\
import subprocess

ATTACK = {attack!r}


def test_probe():
    out = subprocess.run(["/bin/sh", "-c", ATTACK], capture_output=True, text=True).stdout
    assert False, "probe on the base:\\n" + out
"""
HARMLESS_TEST = 'def test_probe():\n    assert False, "still failing, harmlessly"\n'


@pytest.fixture
def canary_process() -> Iterator[None]:
    """A process outside the run with LAUNCHER_CANARY in its environment (PROC_SCAN counts
    it), alive for the test's length."""
    env = {"PATH": os.environ["PATH"], "LAUNCHER_CANARY": f"launcher{uuid.uuid4().hex}"}
    sleeper = subprocess.Popen(["sleep", "600"], env=env)
    yield
    sleeper.kill()
    sleeper.wait()


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_the_base_commit_rerun_is_confined(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    sandbox: str,
    tmp_path: Path,
    listener: tuple[int, list[bytes]],
    canary_process: None,
) -> None:
    # the baseline's re-run on the base commit (gate/baseline.py) is the subject, which the
    # proof policy leaves on: the round fails, so no proof run would follow, and the flaky
    # re-run of the harmless test in the worktree (`reruns`) is one more pytest of no attack
    sample_repo.proof = False
    port, received = listener
    writes, targets = write_attempts(sample_repo, tmp_path)
    attack = f"{PROC_SCAN}; {writes}; {connect(port)}"
    sample_repo.commit({PROBE: HOSTILE_TEST.format(attack=attack)}, "a probe test")
    model_server.add(
        Reply(tool_calls=[call("write_file", path=PROBE, content=HARMLESS_TEST), FIX]),
        Reply("Done."),
    )
    spec = sample_repo.write_spec(limits={"max_iterations": 1})

    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox)

    assert proc.returncode == 1, proc.stdout + proc.stderr  # test_probe still fails
    [out_dir] = sample_repo.tmp.glob("out-*")
    rounds = "".join(log.read_text() for log in (out_dir / "logs").glob("*.log"))
    assert "still failing, harmlessly" in rounds and "probe on the base" not in rounds
    base_logs = sorted((out_dir / "baseline" / "logs").glob("*.log"))
    assert base_logs, "no base-commit re-run"
    base = "".join(log.read_text() for log in base_logs)
    assert "probe on the base" in base and "found=" in base  # the hostile test ran there
    report = json.loads((out_dir / "report.json").read_text())
    [failure] = report["rounds"][-1]["failures"]
    assert failure["new"] is False  # ... and answered: test_probe fails on the base too
    time.sleep(0.2)
    if sandbox == "off":  # control: every attack works in the unconfined base re-run
        assert "found=0" not in base
        assert all(f"WROTE-{i}" in base for i in range(len(targets)))
        assert "CONNECTED" in base and b"leak" in received
    else:
        assert "found=0" in base and "WROTE" not in base and "CONNECTED" not in base
        assert not received and all(b"pwned" not in p.read_bytes() for p in targets)
