"""Where a run has no stable place of the repository's (workspace/slots.py: refused, or
`CODEGEN_CACHE_DIR=off`, as here), its worktrees live in a fresh private folder (mkdtemp:
ours, 0700, an unpredictable name), never at a path another local user could guess and make
first; `resume` refuses a
folder someone else owns or may write; our git names the exact directories it accepts in
`safe.directory`, never `*`.

The other user is uid 65534 (needs root to become it; a non-root run checks the rest). The
controls show the attack working where the defence is missing: that user can swap a worktree
in a folder it may write, and a folder it made at the earlier, predictable path was its own.

The interrupted runs and the resumes run in this process (click's CliRunner, the SIGTERM sent
to it as a runner sends it to the tool, TMPDIR read afresh as a process reads it at start):
where the worktree goes and what `resume` accepts are the subject, not the process. Our git's
global config is the process's own (one file for its whole life): that test starts the tool.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sample_repo import FIX, FIXED_LINE_NEW, SampleRepo, sh

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call
from codegen_ci.workspace.git import git_env

OTHER = 65534
AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="becoming another user needs root")


def as_other(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={OTHER}",
            f"--regid={OTHER}",
            "--clear-groups",
            "/bin/sh",
            "-c",
            command,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def tool_env(server: ScriptedModelServer, tmpdir: Path) -> dict[str, str]:
    """The tool's environment (beside this process's, which a process started here inherits)."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-0000",
        "CODEGEN_SANDBOX": "off",
        "TMPDIR": str(tmpdir),
        # the fresh temporary folder, not the repository's stable one (workspace/slots.py,
        # tests/workspace/test_slots.py): what a run falls back to
        "CODEGEN_CACHE_DIR": "off",
    }


@pytest.fixture
def shared() -> Iterator[Path]:
    """A temporary directory every user may write (sticky, like /tmp) and reach: made in the
    system's temporary directory, since pytest keeps its own folders 0700 for the user."""
    folder = Path(tempfile.mkdtemp(prefix="codegen-test-shared-"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def in_process(
    argv: list[str], server: ScriptedModelServer, tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Result:
    """`codegen-ci *argv` in this process, with `tool_env`. `tempfile` reads TMPDIR once per
    process: told it again here, as a process started with that TMPDIR would read it. Our
    git's global config is made once per process, where TMPDIR said at the time: made before,
    it stays this process's, never in a folder a test removes."""
    git_env()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    result = CliRunner().invoke(cli, argv, env=tool_env(server, tmpdir))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def interrupted_run(
    repo: SampleRepo, server: ScriptedModelServer, tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """A run stopped by SIGTERM during a command: its worktree is kept for `resume`."""
    # where the worktree goes is the subject, with the sandbox off: no proof and coverage runs
    # after the passing resume (the security tests' default, conftest.py)
    repo.proof = False
    pid_file = repo.tmp / "sleep.pid"
    sleeper = f"echo $$ > {pid_file}; exec sleep 30"
    server.add(Reply(tool_calls=[FIX]), Reply(tool_calls=[call("run_command", command=sleeper)]))
    out = repo.tmp / "out"
    argv = ["run", str(repo.write_spec()), "--repo", str(repo.path), "--output-dir", str(out)]
    # the run's SIGTERM handler is installed on the main thread only (run/attempt.py), where
    # pytest and its xdist workers run tests; sent while the command runs, it is the run's
    assert threading.current_thread() is threading.main_thread()

    def terminate_once_the_command_runs() -> None:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text().strip()):
            if time.monotonic() > deadline:
                return  # the run's own assertions below say what happened
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_the_command_runs, daemon=True).start()
    result = in_process(argv, server, tmpdir, monkeypatch)
    assert result.exit_code == 3, result.output
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["reason"] == "interrupted" and Path(report["worktree"]).is_dir()
    return report


def resume(
    repo: SampleRepo, server: ScriptedModelServer, tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Result:
    return in_process(["resume", str(repo.tmp / "out")], server, tmpdir, monkeypatch)


def predictable_path(repo: Path, tmpdir: Path) -> Path:
    """Where worktrees used to go: `<tmp>/codegen-ci/<repo name>-<hash of its path>`."""
    resolved = repo.resolve()
    digest = hashlib.sha1(str(resolved).encode(), usedforsecurity=False).hexdigest()[:8]
    return tmpdir / "codegen-ci" / f"{resolved.name}-{digest}"


@needs_root
def test_a_folder_another_user_made_first_is_never_used(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    shared: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trap = predictable_path(sample_repo.path, shared)
    made = as_other(f"mkdir -p -m 0777 {trap} && echo planted > {trap}/planted && echo MADE")
    # control: the other user owns the folder at the predictable path and may put anything there
    assert "MADE" in made.stdout, made.stderr
    assert trap.stat().st_uid == OTHER

    report = interrupted_run(sample_repo, model_server, shared, monkeypatch)

    tree = Path(report["worktree"])
    folder = tree.parent
    assert trap not in tree.parents and folder.parent == shared
    info = folder.lstat()
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077 == 0
    assert sorted(p.name for p in trap.iterdir()) == ["planted"]
    # the other user can neither list the folder nor swap the worktree in it
    swap = as_other(f"ls {folder} || mv {tree} {tree}.gone && echo SWAPPED")
    assert "SWAPPED" not in swap.stdout and tree.is_dir()


@pytest.mark.parametrize("how", ["writable", pytest.param("owned", marks=needs_root)])
def test_resume_refuses_a_worktree_folder_others_could_swap(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    shared: Path,
    how: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = interrupted_run(sample_repo, model_server, shared, monkeypatch)
    tree = Path(report["worktree"])
    folder = tree.parent
    if how == "writable":
        folder.chmod(0o777)
    else:
        os.chown(folder, OTHER, OTHER)
    if AS_ROOT:  # control: from such a folder, the other user swaps in a copy with one more file
        swap = as_other(
            f"cp -r {tree} {folder}/copy && echo evil > {folder}/copy/evil.txt && "
            f"mv {tree} {folder}/old && mv {folder}/copy {tree} && echo SWAPPED"
        )
        assert "SWAPPED" in swap.stdout, swap.stderr
        assert (tree / "evil.txt").is_file()
    model_server.add(Reply("The fix is in place."))

    proc = resume(sample_repo, model_server, shared, monkeypatch)

    assert proc.exit_code == 2, proc.output
    why = "can be written by its group or others" if how == "writable" else f"uid {OTHER}"
    assert str(folder) in proc.stderr and why in proc.stderr and "Traceback" not in proc.stderr
    branch = report["branch"]
    assert "evil.txt" not in sample_repo.git("ls-tree", "-r", "--name-only", branch)


def test_resume_rebuilds_a_removed_worktree_in_a_new_private_folder(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    shared: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = interrupted_run(sample_repo, model_server, shared, monkeypatch)
    old = Path(report["worktree"])
    sh(["git", "worktree", "remove", "--force", str(old)], sample_repo.path)
    old.parent.rmdir()
    old.parent.mkdir(mode=0o777)  # someone made a folder of that name meanwhile
    old.parent.chmod(0o777)
    model_server.add(Reply(tool_calls=[FIX]), Reply("The fix is in place."))

    proc = resume(sample_repo, model_server, shared, monkeypatch)

    assert proc.exit_code == 0, proc.output
    state = json.loads((sample_repo.tmp / "out" / "run.json").read_text())
    new = Path(state["worktree"])
    assert new.parent != old.parent and new.name == old.name
    assert not list(old.parent.iterdir())  # nothing of the run went there
    final = json.loads((sample_repo.tmp / "out" / "report.json").read_text())
    assert final["status"] == "success", final
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{final['branch']}:src/semver/version.py")


def test_our_git_accepts_exact_directories_only(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Every global config our git ran with names directories in `safe.directory`, never `*`;
    the repository may belong to another uid (a checkout mounted into a container)."""
    log = tmp_path / "configs.log"
    recorder = tmp_path / "bin" / "git"
    recorder.parent.mkdir()
    recorder.write_text(f'#!/bin/sh\ncat "$GIT_CONFIG_GLOBAL" >> {log}\nexec /usr/bin/git "$@"\n')
    recorder.chmod(0o755)
    if AS_ROOT:
        for path in [sample_repo.path, *sample_repo.path.rglob("*")]:
            os.lchown(path, OTHER, OTHER)
        # control: git refuses a repository another uid owns, unless told to accept it
        refused = subprocess.run(
            ["git", "status"],
            cwd=sample_repo.path,
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"},
            check=False,
        )
        assert "dubious ownership" in refused.stderr
    model_server.add(Reply(tool_calls=[FIX]), Reply("ok"))
    env = {**os.environ, **tool_env(model_server, tmp_path), "CODEGEN_GIT": str(recorder)}
    env.pop("CODEGEN_SANDBOX")
    argv = [
        sys.executable,
        "-m",
        "codegen_ci",
        "run",
        str(sample_repo.write_spec()),
        "--repo",
        str(sample_repo.path),
        "--output-dir",
        str(tmp_path / "out"),
    ]

    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, check=False)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    entries = {line.strip() for line in log.read_text().splitlines() if "directory" in line}
    assert entries and not [e for e in entries if e.endswith("= *") or e.endswith('"*"')]
    named = {e.partition("=")[2].strip().strip('"') for e in entries}
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert str(sample_repo.path) in named and report["commit"]
    assert not list(tmp_path.glob("codegen-ci-*"))  # the run's private folder is gone
    assert all(Path(p) == sample_repo.path or p.startswith(str(tmp_path)) for p in named), named
