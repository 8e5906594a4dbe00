"""HOME is an allowlist: a confined command sees none of the credential files a developer or a
runner keeps in HOME, whatever their name, under either backend, while the toolchains kept
there (pyenv, cargo's `bin`, a virtualenv on PATH) still run. Positive control: the same
hostile command with the sandbox off reads every one of them."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import BACKENDS_AND_OFF, results_each, run_in_process

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# Where well-known tools keep credentials in HOME (and one name nobody would list).
CREDENTIAL_FILES = (
    ".gitconfig",
    ".config/git/credentials",
    ".git-credentials",
    ".netrc",
    ".config/pip/pip.conf",
    ".pypirc",
    ".npmrc",
    ".yarnrc.yml",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".config/hub",
    ".bundle/config",
    ".config/composer/auth.json",
    ".cargo/credentials.toml",
    ".nuget/NuGet/NuGet.Config",
    ".docker/config.json",
    ".aws/credentials",
    ".config/gh/hosts.yml",
    f".cache/x{uuid.uuid4().hex[:6]}/session-token",
)


def plant(home: Path) -> str:
    """A secret in each credential file (the .gitconfig's as an insteadOf token); returns it."""
    secret = f"tok{uuid.uuid4().hex}"
    for name in CREDENTIAL_FILES:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\ntoken = {secret}\n")
    (home / ".gitconfig").write_text(
        "# .gitconfig\n[user]\n\tname = Test User\n\temail = test@example.com\n"
        f'[url "https://x-access-token:{secret}@github.com/"]\n\tinsteadOf = https://github.com/\n'
    )
    return secret


def toolchains(home: Path) -> list[Path]:
    """A pyenv-style interpreter and a cargo-installed tool in HOME; their `bin` on PATH."""
    dirs = [home / ".pyenv" / "versions" / "9.9" / "bin", home / ".cargo" / "bin"]
    for folder in dirs:
        folder.mkdir(parents=True)
        tool = folder / f"probe-{folder.parent.name}"
        tool.write_text(f"#!/bin/sh\necho TOOLCHAIN-{folder.parent.name}-OK\n")
        tool.chmod(0o755)
    return dirs


def runner_work(work: Path) -> tuple[str, Path]:
    """A runner's work directory: other actions' code and state (`_actions`, `_temp`, `_diag`)
    holding a secret, beside the tool cache (`_tool`) with a program; (the secret, its bin)."""
    secret = f"act{uuid.uuid4().hex}"
    for name in (
        "_actions/some/action/state.json",
        "_diag/Worker.log",
        "_temp/_runner_file_commands/set_env",
    ):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(f"{secret}\n")
    tool = work / "_tool" / "node" / "20.0.0" / "x64" / "bin"
    tool.mkdir(parents=True)
    (tool / "probe-tool-cache").write_text("#!/bin/sh\necho TOOL-CACHE-OK\n")
    (tool / "probe-tool-cache").chmod(0o755)
    return secret, tool


@pytest.mark.parametrize("sandbox", BACKENDS_AND_OFF)
def test_no_credential_file_in_home_nor_runner_state_is_readable_but_toolchains_run(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    sandbox: str,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Two attacks in one run, each a command of its own, each asserted on its own result:
    the credential files in HOME (while the toolchains there run), and a runner's work
    directory, of which commands get the tool cache (`_tool`) only."""
    # the model's commands are the attacks, not the repository's tests: no proof and coverage
    # runs after the passing round (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    home = tmp_path / "home"
    secret = plant(home)
    bins = toolchains(home)
    reads = " ; ".join(f'rev < "{home / name}"' for name in CREDENTIAL_FILES)
    hunt = f"grep -rh {secret[:8]} {home} 2>/dev/null | rev"  # whatever the name
    in_home = f"probe-9.9; probe-.cargo; {reads}; {hunt}; echo DONE"
    # outside tmp_path, which is on PATH below (the work directory is not under it on a runner)
    work = tmp_path_factory.mktemp("runner") / "_work"
    work_secret, tool = runner_work(work)
    files = f"{work}/_actions/some/action/state.json {work}/_diag/Worker.log"
    in_work = f"probe-tool-cache; cat {files} | rev; echo DONE"
    model_server.add(
        Reply(
            tool_calls=[
                call("run_command", command=in_home),
                call("run_command", command=in_work),
                FIX,
            ]
        ),
        Reply("ok"),
    )
    # HOME and a folder above it on PATH too: neither may bring HOME back whole
    path = [*map(str, bins), str(home), str(tmp_path), str(tool), os.environ["PATH"]]
    extra = {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "PATH": os.pathsep.join(path),
        "RUNNER_WORKSPACE": str(work / "repo"),
        "RUNNER_TOOL_CACHE": str(work / "_tool"),
    }
    # in-process: what the model's commands reach in HOME is the subject, not how the tool was
    # started (test_secret_env keeps the process)
    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    proc = run_in_process(sample_repo, model_server, spec, sandbox=sandbox, extra=extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen, seen_work, _fix = results_each(model_server)

    # HOME: no credential file, whatever its name, while the toolchains kept there run
    assert "DONE" in seen and "TOOLCHAIN-9.9-OK" in seen and "TOOLCHAIN-.cargo-OK" in seen, seen
    read = [name for name in CREDENTIAL_FILES if f"# {name}"[::-1] in seen]
    if sandbox == "off":  # control: every one of them is there to read
        assert read == list(CREDENTIAL_FILES)
    else:
        assert read == [] and secret[::-1] not in seen

    # the runner's work directory: the tool cache only
    assert "DONE" in seen_work and "TOOL-CACHE-OK" in seen_work, seen_work
    assert seen_work.count(work_secret[::-1]) == (2 if sandbox == "off" else 0), seen_work
