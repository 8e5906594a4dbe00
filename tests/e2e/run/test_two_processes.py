"""Two `codegen-ci run` processes on one checkout at once (a user running two tasks, a batch
beside a run) leave each other's branches alone: neither's ref guard takes the other's new
branch for a ref its command moved."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sample_repo import FIX, FIXED_LINE_NEW, SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

ALPHA, BETA = "codegen/alpha-task", "codegen/beta-task"
VERSION = "src/semver/version.py"


def start(repo: SampleRepo, name: str, out: Path) -> subprocess.Popen[str]:
    spec = repo.write_spec(
        f"{name}.yaml",
        title=f"{name.title()} task",
        task=f"{name}: {FIXED_LINE_NEW}",
        model={"name": name},
        # what the gate finds is not this test's subject: a check of the fixed line
        validation={
            "test": [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION}"],
            "allow_no_tests": True,
        },
    )
    argv = [sys.executable, "-m", "codegen_ci", "run", str(spec), "--repo", str(repo.path)]
    return subprocess.Popen(
        [*argv, "--output-dir", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline and (proc is None or proc.poll() is None), path
        time.sleep(0.05)


def test_two_runs_at_once_each_keep_their_own_branch(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    out_a, out_b = sample_repo.tmp / "out-alpha", sample_repo.tmp / "out-beta"
    # alpha's command runs while beta makes its branch (it waits for it, in the sandbox, with
    # the git directory read-only); beta goes on only once alpha has finished
    waits = (
        "touch .started; for i in $(seq 1200); do "
        f"git rev-parse -q --verify refs/heads/{BETA} >/dev/null && break; sleep 0.05; done; "
        "rm .started"
    )
    model_env.add_for(
        "alpha", Reply(tool_calls=[call("run_command", command=waits)]), Reply(tool_calls=[FIX])
    )

    def after_alpha(request: dict[str, Any]) -> Reply:
        wait_for(out_a / "report.json")
        return Reply(tool_calls=[FIX])

    model_env.add_for("beta", after_alpha)

    alpha = start(sample_repo, "alpha", out_a)
    try:
        wait_for(out_a / "run.json", alpha)
        tree = Path(json.loads((out_a / "run.json").read_text())["worktree"])
        wait_for(tree / ".started", alpha)
        beta = start(sample_repo, "beta", out_b)
        try:
            output_b, _ = beta.communicate(timeout=120)
        finally:
            beta.kill()
        output_a, _ = alpha.communicate(timeout=120)
    finally:
        alpha.kill()

    assert (alpha.returncode, beta.returncode) == (0, 0), output_a + output_b
    reports = [json.loads((out / "report.json").read_text()) for out in (out_a, out_b)]
    for report, branch in zip(reports, (ALPHA, BETA), strict=True):
        assert report["status"] == "success" and report["branch"] == branch
        assert sample_repo.git("rev-parse", branch).strip() == report["commit"]
        assert FIXED_LINE_NEW in sample_repo.git("show", f"{branch}:{VERSION}")
        assert report["refusals"] == []  # no ref of the other run "moved by a command"
