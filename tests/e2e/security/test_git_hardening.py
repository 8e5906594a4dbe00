"""Our own git runs the system's binary with our config only, keeps the push
token off every command line, and commits nothing that reaches a protected path or another
repository. Each attack has a control: the same step run with plain `git` shows it working."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sample_repo import FIX, QUICK_GATE, SampleRepo, sh
from sandbox_attacks import ONE_BACKEND, run_args, run_in_process, tool_env

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

BRANCH = "codegen/reset-patch-in-bump-minor"


def start_tool(
    repo: SampleRepo, server: ScriptedModelServer, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`codegen-ci run` as a process, with `env` added to its environment: for the test of the
    git binary, which the tool resolves once, at its start (workspace/git.py `git_binary`).
    The other tests run in-process (sandbox_attacks.run_in_process): our git's config and
    what it commits and pushes are their subject, not the process's start."""
    argv = [sys.executable, "-m", "codegen_ci", *run_args(repo, repo.write_spec(), args)]
    full = {**os.environ, **tool_env(server, extra=env)}
    return subprocess.run(argv, env=full, capture_output=True, text=True, timeout=180, check=False)


def recorder(folder: Path, log: Path) -> Path:
    """A `git` that records its argv and whether it got config through the environment."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s " "$@" >> {log}; echo " ENV:${{GIT_CONFIG_VALUE_0:-}}" >> {log}\n'
        'exec /usr/bin/git "$@"\n'
    )
    script.chmod(0o755)
    return script


def test_push_ignores_a_planted_git_and_keeps_the_token_off_argv(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    token = f"ghs_{uuid.uuid4().hex}"
    planted_log, real_log = tmp_path / "planted.log", tmp_path / "real.log"
    planted = recorder(tmp_path / "planted", planted_log)
    real = recorder(tmp_path / "real", real_log)
    env = {
        "PATH": f"{planted.parent}:{os.environ['PATH']}",
        "GITHUB_TOKEN": token,
        "CODEGEN_GIT": str(real),
    }
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))

    proc = start_tool(sample_repo, model_server, "--push", env=env)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sh(["git", "rev-parse", "--verify", BRANCH], sample_repo.origin)  # pushed
    assert not planted_log.exists()  # the git planted in PATH never ran
    pushes = [line for line in real_log.read_text().splitlines() if " push " in f" {line}"]
    assert pushes, real_log.read_text()  # the push went through the binary we named
    header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    argv = [line.partition(" ENV:")[0] for line in pushes]
    assert not [a for a in argv if token in a or header in a]  # never on a command line
    assert any(header in line.partition(" ENV:")[2] for line in pushes)  # in its environment
    # control: that PATH does find the planted git for anyone who looks it up by name
    subprocess.run(["git", "--version"], env={**os.environ, **env}, check=True, capture_output=True)
    assert planted_log.exists()


SNEAK = (
    "base=$(git rev-parse HEAD) && mkdir -p .github/workflows && "
    "printf 'on: push\\n' > .github/workflows/evil.yml && git add .github && "
    "git -c user.name=m -c user.email=m@x commit -qm wf && git replace HEAD $base && "
    "git diff --name-only $base HEAD && echo HIDDEN"
)


@dataclass(frozen=True)
class PushedRun:
    """The run two attacks on our git's commit and push were planted in (read only)."""

    repo: SampleRepo
    proc: subprocess.CompletedProcess[str]
    requests: list[dict[str, Any]]  # what the model was sent
    evil: Path  # the bare repository the global config's insteadOf sends origin to
    gitconfig: Path  # that global config


@pytest.fixture
def pushed_run(
    shared_runs: dict[str, Any],
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    tmp_path: Path,
) -> PushedRun:
    """A run with `--push` in which the user's global git config sends origin to another
    repository (insteadOf) and the model's command commits a workflow hidden behind a replace
    ref (SNEAK); each test asserts on its own attack. The model writes git's own state, which
    only an unconfined command can: git's layer, the sandbox off. Our git's commit and push
    are the subject, not the proof: no proof and coverage runs after the passing round
    (conftest.py's default; the planted-git test above keeps them: every git command of a
    run must be ours)."""
    if "pushed" not in shared_runs:
        sample_repo.proof = False
        evil = tmp_path / "evil.git"
        sh(["git", "init", "-q", "--bare", str(evil)], tmp_path)
        gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
        with gitconfig.open("a") as config:
            config.write(f'[url "{evil}"]\n\tinsteadOf = {sample_repo.origin}\n')
        model_server.add(Reply(tool_calls=[call("run_command", command=SNEAK), FIX]), Reply("ok"))
        # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor round
        spec = sample_repo.write_spec(validation=QUICK_GATE)
        proc = run_in_process(sample_repo, model_server, spec, "--push", sandbox="off")
        shared_runs["pushed"] = PushedRun(sample_repo, proc, model_server.requests, evil, gitconfig)
    return shared_runs["pushed"]


def test_insteadof_in_global_config_does_not_redirect_our_git(pushed_run: PushedRun) -> None:
    repo, proc = pushed_run.repo, pushed_run.proc

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sh(["git", "rev-parse", "--verify", BRANCH], repo.origin)
    assert sh(["git", "for-each-ref"], pushed_run.evil) == ""
    # control: a git that reads the global config is redirected
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(pushed_run.gitconfig)}
    url = subprocess.run(
        ["git", "ls-remote", "--get-url", "origin"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert url.stdout.strip() == str(pushed_run.evil)


def test_replace_refs_do_not_hide_a_committed_workflow(pushed_run: PushedRun) -> None:
    repo, proc = pushed_run.repo, pushed_run.proc

    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = pushed_run.requests[-1]["messages"]
    shown = next(m["content"] for m in last if m["role"] == "tool").partition("[harness")
    # control: to a git that honours replace refs, the commit changed nothing
    assert "HIDDEN" in shown[0] and "evil.yml" not in shown[0]
    assert "evil.yml is protected" in shown[2]  # ours saw it, and undid it
    files = sh(["git", "--no-replace-objects", "ls-tree", "-r", "--name-only", BRANCH], repo.origin)
    assert "src/semver/version.py" in files and ".github/workflows/evil.yml" not in files


# our git refuses what it commits and pushes, whatever confined the planting: sandbox_attacks.py
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_gitlinks_and_symlinks_into_protected_paths_are_refused(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path, sandbox: str
) -> None:
    # our git's commit is the subject, not the proof: no proof and coverage runs after the
    # passing round (conftest.py's default; the planted-git test above keeps them: every git
    # command of a run must be ours)
    sample_repo.proof = False
    plant = (
        "mkdir -p ci .github vendor && printf 'on: push\\n' > ci/deploy.yml && "
        "ln -s ../ci .github/workflows && ln -s ci docs-link && "
        "git init -q vendor/lib && echo x > vendor/lib/f && git -C vendor/lib add f && "
        "git -C vendor/lib -c user.name=m -c user.email=m@x commit -qm x"
    )
    model_server.add(Reply(tool_calls=[call("run_command", command=plant), FIX]), Reply("ok"))

    # the gate: a grep of the fixed line (QUICK_GATE), no pytest in the pre-flight nor the round
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    proc = run_in_process(sample_repo, model_server, spec, "--push", sandbox=sandbox)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    tree = sh(["git", "ls-tree", "-r", BRANCH], sample_repo.origin)
    assert "ci/deploy.yml" in tree and "120000 blob" in tree and "docs-link" in tree  # control
    assert ".github" not in tree and "vendor/lib" not in tree and "160000" not in tree
    [out_dir] = sample_repo.tmp.glob("out-*")
    report = (out_dir / "report.json").read_text()
    assert ".github/workflows" in report and "vendor/lib" in report  # listed as refused
    # control: plain `git add -A` of the same tree stages both
    copy = tmp_path / "copy"
    sh(["git", "init", "-q", str(copy)], tmp_path)
    subprocess.run(["/bin/sh", "-c", plant], cwd=copy, check=True, capture_output=True)
    sh(["git", "add", "-A"], copy)
    staged = sh(["git", "ls-files", "-s"], copy)
    assert "160000" in staged and ".github/workflows" in staged
