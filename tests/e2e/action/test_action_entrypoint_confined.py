"""The Docker action's entrypoint, run as the container runs it (the Dockerfile's ENTRYPOINT,
`codegen-ci action`, as a process with the runner's environment: there is no Docker engine
here), on a machine where bubblewrap is not there, as in GitHub's containers: the model's
commands are confined with Landlock. The attacks: writes outside the workspace (a file-command
file, HOME, a PATH directory, the repository's git config and hooks) and reads of what the
runner keeps (a file in RUNNER_TEMP, a credential in HOME). The control is the same run with
the action's `sandbox: off` input, where every one of them works."""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_env import ActionWorld, open_world
from sample_repo import FIX, SampleRepo
from sandbox_attacks import path_without_bwrap, write_attempts

from codegen_ci.testing.scripted_model import Reply, call

# The Dockerfile's ENTRYPOINT is ["codegen-ci", "action"]: the console script of the installed
# package (the image links /usr/local/bin/codegen-ci to it).
ENTRYPOINT = [str(Path(sys.executable).parent / "codegen-ci")]


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # no proof (nor the coverage run after it): three more confined pytest runs after the
    # passing round that this test, about the model's commands, asserts nothing of; the base
    # runs confined are tests/e2e/security/test_base_rerun_confined.py's (under each backend).
    # The test command is `QUICK_GATE`'s check of the fixed line (`quick`), decided by its
    # exit code and confined as any command: what the gate finds is not the subject either (a
    # confined pytest: tests/e2e/security), two pytest starts fewer a run.
    with open_world(sample_repo, command=ENTRYPOINT, quick=True) as world:
        world.github.add_issue("Reset patch in bump_minor", "bump_minor must reset the patch to 0.")
        yield world


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_the_docker_entrypoint_confines_with_landlock_without_bubblewrap(
    world: ActionWorld, tmp_path: Path, sandbox: str
) -> None:
    assert Path(ENTRYPOINT[0]).is_file(), ENTRYPOINT
    write, targets = write_attempts(world.sample, tmp_path)
    runner_temp = world.tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    kept = f"kept{uuid.uuid4().hex}"
    (runner_temp / "kept.txt").write_text(kept)
    home = tmp_path / "runner-home"
    (home / ".config" / "gh").mkdir(parents=True)
    credential = f"gho_{uuid.uuid4().hex}"
    (home / ".config" / "gh" / "hosts.yml").write_text(f"oauth_token: {credential}\n")
    secrets = (runner_temp / "kept.txt", home / ".config" / "gh" / "hosts.yml")
    read = "; ".join(f"cat {shlex.quote(str(p))} | rev" for p in secrets)
    world.model.add(
        Reply(tool_calls=[call("run_command", command=write), call("run_command", command=read)]),
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
    )
    env = {"PATH": path_without_bwrap(tmp_path / "no-bwrap"), "HOME": str(home)}

    result = world.run("issues", world.issue_labeled(1), env=env, sandbox=sandbox)

    assert result.code == 0, result.log
    shown = "\n".join(
        m["content"] for m in world.model.requests[1]["messages"] if m["role"] == "tool"
    )
    [report_path] = runner_temp.glob("codegen/*/report.json")
    report = json.loads(report_path.read_text())
    wrote = [p for p in targets if "pwned" in p.read_text()]
    if sandbox == "off":  # the control: unconfined, every attack works
        assert report["sandbox"] == "off"
        assert wrote == targets, shown
        assert kept[::-1] in shown and credential[::-1] in shown
        return
    assert "confined with Landlock" in result.stderr, result.log
    assert report["sandbox"] == "landlock" and report["landlock_abi"] >= 1
    assert "WROTE" not in shown and wrote == [], shown
    assert kept[::-1] not in shown and credential[::-1] not in shown, shown
