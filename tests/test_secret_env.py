"""Our own start-up environment holds no secret a model's command could read from
/proc/$PPID/environ and smuggle out in a form the redactor does not know (reversed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from codegen_ci.testing.scripted_model import ScriptedModelServer
from codegen_ci.testing.scripted_steps import Reply, call
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, SampleRepo

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc is Linux-only")


def test_parent_environment_read_by_a_command_holds_no_secret(
    sample_repo: SampleRepo, model_server: ScriptedModelServer
) -> None:
    secret = f"sk-canary-{uuid.uuid4().hex}"
    plain = f"plainvalue{uuid.uuid4().hex[:12]}"
    model_server.add(
        Reply(tool_calls=[call("run_command",
                               command="cat /proc/$PPID/environ | tr '\\0' '\\n' | rev")]),
        Reply(tool_calls=[call("edit_file", path="src/semver/version.py",
                               old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)]),
        Reply("done"),
    )  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": secret, "OPENAI_BASE_URL": model_server.base_url,
           "MY_DEPLOY_TOKEN": secret + "x", "PLAIN_SETTING": plain}  # fmt: skip
    out = sample_repo.tmp / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "codegen_ci", "run", str(sample_repo.write_spec()),
         "--repo", str(sample_repo.path), "--output-dir", str(out)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert proc.returncode == 0, proc.stdout + proc.stderr
    requests = json.dumps(model_server.requests)
    assert plain[::-1] in requests  # control: the command did read its parent's environment
    assert secret[::-1] not in requests and secret not in requests
    assert json.loads((out / "report.json").read_text())["status"] == "success"
