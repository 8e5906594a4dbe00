"""Our own start-up environment holds no secret a model's command could read from the
`/proc/<pid>/environ` of its ancestors and smuggle out in a form the redactor does not know
(reversed).

The layer under test is `sandbox: off` (SECURITY.md, "What it does not guarantee"), where
codegen-ci is one of the command's ancestors and its environment is readable (the control).
Under each backend the same command must not find the secret either (bubblewrap: its parent is
inside the sandbox; Landlock: codegen-ci is outside the domain, its `environ` unreadable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, QUICK_GATE, SampleRepo
from sandbox_attacks import ANCESTORS_ENVIRON, BACKENDS_AND_OFF

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc is Linux-only")


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_parent_environment_read_by_a_command_holds_no_secret(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, sandbox: str
) -> None:
    # the model's command is the attack, not the repository's tests: no proof and coverage runs
    # after the passing round (conftest.py's default; test_base_rerun_confined is about them),
    # and the gate is a grep of the fixed line (no pytest starts in the pre-flight nor the round)
    sample_repo.proof = False
    secret = f"sk-canary-{uuid.uuid4().hex}"
    plain = f"plainvalue{uuid.uuid4().hex[:12]}"
    model_server.add(
        Reply(tool_calls=[call("run_command", command=f"({ANCESTORS_ENVIRON}) | rev")]),
        Reply(
            tool_calls=[
                call(
                    "edit_file",
                    path="src/semver/version.py",
                    old_text=FIXED_LINE_OLD,
                    new_text=FIXED_LINE_NEW,
                )
            ]
        ),
        Reply("done"),
    )
    env = {
        **os.environ,
        "OPENAI_API_KEY": secret,
        "OPENAI_BASE_URL": model_server.base_url,
        "MY_DEPLOY_TOKEN": secret + "x",
        "PLAIN_SETTING": plain,
        "CODEGEN_SANDBOX": sandbox,
    }
    out = sample_repo.tmp / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegen_ci",
            "run",
            str(sample_repo.write_spec(validation=QUICK_GATE)),
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    requests = json.dumps(model_server.requests)
    if sandbox == "off":  # control: the command did read its parent's (codegen-ci's) environment
        assert plain[::-1] in requests
    assert secret[::-1] not in requests and secret not in requests
    assert json.loads((out / "report.json").read_text())["status"] == "success"
