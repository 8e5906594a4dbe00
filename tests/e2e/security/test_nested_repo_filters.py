"""The tool's own git never recurses into a nested repository, under each sandbox backend.

A populated submodule (a gitlink in the index whose directory holds a repository) is asked
whether it is dirty by a plain `git status`: git runs a `git status` inside it, and that runs
the nested repository's clean filter on its modified files. The model can build such a
repository in its worktree (at the commit the base's gitlink names), with a filter of its
choosing; the filter must never run inside the git calls codegen-ci makes unconfined (status,
diff, add, commit). The filter appends to a file outside the worktree, which no confined
command can write, and records which git config it ran under (ours is a `codegen-git-*` file).
Controls: the same worktree state, built by the same script, runs the filter under plain
`git status` (and `git add`) in the test's own setup, though never under the script itself.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from sample_repo import FIX, SampleRepo, sh
from sandbox_attacks import ONE_BACKEND, proof_spec, results, run_in_process

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

BRANCH = "codegen/reset-patch-in-bump-minor"
IDENT = (
    "GIT_AUTHOR_NAME=lib GIT_AUTHOR_EMAIL=lib@example.com GIT_AUTHOR_DATE=2001-01-01T00:00:00Z "
    "GIT_COMMITTER_NAME=lib GIT_COMMITTER_EMAIL=lib@example.com "
    "GIT_COMMITTER_DATE=2001-01-01T00:00:00Z"
)
# The nested repository, at the same commit id wherever it is built (fixed identity and dates).
POPULATE = (
    f"export {IDENT} && git init -q -b main vendor/lib && echo one > vendor/lib/data.txt && "
    "git -C vendor/lib add data.txt && git -C vendor/lib commit -qm lib && "
    "echo HEAD=$(git -C vendor/lib rev-parse HEAD)"
)
GITMODULES = '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ./lib\n'
# `submodule.<name>.ignore` in `.gitmodules` overrides the `diff.ignoreSubmodules` config
IGNORE_NONE = GITMODULES + "\tignore = none\n"


def arm(marker: Path) -> str:
    """Plant the filter and modify the file it applies to, after the script's last git call:
    the script itself never runs the filter."""
    clean = f'echo "config=$GIT_CONFIG_GLOBAL" >> {shlex.quote(str(marker))}; cat'
    return (
        f"git -C vendor/lib config filter.evil.clean {shlex.quote(clean)} && "
        "echo 'data.txt filter=evil' > vendor/lib/.gitattributes && "
        "echo two > vendor/lib/data.txt && echo ARMED"
    )


def add_gitlink(repo: SampleRepo, gitmodules: str) -> str:
    """Commit a gitlink `vendor/lib` (and its `.gitmodules`) on main; returns the commit it
    names, which POPULATE rebuilds."""
    probe = repo.tmp / "probe"
    probe.mkdir()
    out = subprocess.run(
        ["/bin/sh", "-c", POPULATE], cwd=probe, check=True, capture_output=True, text=True
    ).stdout
    sha = out.split("HEAD=")[1].strip()
    (repo.path / ".gitmodules").write_text(gitmodules)
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/lib")
    repo.git("add", ".gitmodules")
    repo.git("commit", "-q", "-m", "vendor lib as a submodule")
    return sha


def naive(repo: SampleRepo, script: str, marker: Path, *git_args: str) -> str:
    """Control: a clone of the repository brought into the same state by `script` (which alone
    runs no filter), then `git *git_args` as a naive tool would; returns what the filter wrote."""
    clone = repo.tmp / f"naive-{len(list(repo.tmp.glob('naive-*')))}"
    sh(["git", "clone", "-q", str(repo.path), str(clone)], repo.tmp)
    subprocess.run(["/bin/sh", "-c", script], cwd=clone, check=True, capture_output=True)
    assert not marker.exists()
    subprocess.run(["git", *git_args], cwd=clone, check=True, capture_output=True)
    text = marker.read_text() if marker.exists() else ""
    marker.unlink(missing_ok=True)
    return text


@pytest.mark.parametrize("sandbox", ONE_BACKEND)  # our git: sandbox_attacks.py
@pytest.mark.parametrize("ignore_none", ["", "base", "model"])
def test_a_nested_repositorys_filter_never_runs_in_our_git(
    sample_repo: SampleRepo,
    model_server: ScriptedModelServer,
    tmp_path: Path,
    ignore_none: str,
    sandbox: str,
) -> None:
    """`ignore_none`: where a `.gitmodules` with `ignore = none` comes from (the repository's
    base commit, or the model), if anywhere."""
    marker = tmp_path / "filter-ran"
    sha = add_gitlink(sample_repo, IGNORE_NONE if ignore_none == "base" else GITMODULES)
    script = f"{POPULATE} && {arm(marker)}"
    if ignore_none == "model":
        script += f" && printf {shlex.quote(IGNORE_NONE)} > .gitmodules"
    # control: plain `git status` in that state runs the filter; with `ignore = none`, even a
    # git told `diff.ignoreSubmodules=all` does
    assert "config=" in naive(sample_repo, script, marker, "status")
    if ignore_none:
        assert "config=" in naive(
            sample_repo, script, marker, "-c", "diff.ignoreSubmodules=all", "status"
        )
    model_server.add(Reply(tool_calls=[call("run_command", command=script), FIX]), Reply("ok"))

    proc = run_in_process(sample_repo, model_server, proof_spec(sample_repo), sandbox=sandbox)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"HEAD={sha}" in results(model_server) and "ARMED" in results(model_server)
    assert not marker.exists(), marker.read_text()  # status, diff, add, commit: none ran it
    tree = sample_repo.git("ls-tree", "-r", BRANCH)
    assert f"160000 commit {sha}\tvendor/lib" in tree  # the gitlink is untouched
    assert "src/semver/version.py" in sample_repo.git("diff", "--name-only", "main", BRANCH)


MOVES = {
    # the worktree's index loses the gitlink: `vendor/lib/` is an untracked repository to it,
    # while the index our commit is built in (read from the base) still has the gitlink
    "unstaged": "git rm -q --cached vendor/lib",
    # a commit on the run's branch moves the gitlink, and `ignore = none` lists it as changed
    "committed": (
        "git update-index --cacheinfo 160000,$(git rev-parse HEAD),vendor/lib && "
        f"printf {shlex.quote(IGNORE_NONE)} > .gitmodules && git commit -qam 'move the gitlink'"
    ),
}


@pytest.mark.parametrize("move", sorted(MOVES))
def test_a_gitlink_path_never_reaches_our_git_add(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path, move: str
) -> None:
    """Unconfined, the model can change the worktree's index and commit on the run's branch,
    so `vendor/lib` becomes one of the changed paths; `git add` of a path at a gitlink asks the
    nested repository whether it is dirty (a `git status` in there), whatever the config."""
    marker = tmp_path / "filter-ran"
    sha = add_gitlink(sample_repo, GITMODULES)
    script = f"{POPULATE} && {MOVES[move]} && echo MOVED && {arm(marker)}"
    # control: `git add` of that path runs the filter, `diff.ignoreSubmodules=all` or not
    ran = naive(
        sample_repo,
        f"{POPULATE} && {arm(marker)}",
        marker,
        "-c",
        "diff.ignoreSubmodules=all",
        "add",
        "-A",
        "--",
        "vendor/lib",
    )
    assert "config=" in ran
    model_server.add(Reply(tool_calls=[call("run_command", command=script), FIX]), Reply("ok"))

    proc = run_in_process(sample_repo, model_server, proof_spec(sample_repo), sandbox="off")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = results(model_server)
    assert f"HEAD={sha}" in seen and "MOVED" in seen and "ARMED" in seen
    assert not marker.exists(), marker.read_text()
    tree = sample_repo.git("ls-tree", "-r", BRANCH)
    assert f"160000 commit {sha}\tvendor/lib" in tree  # the base's gitlink, untouched
    assert "src/semver/version.py" in sample_repo.git("diff", "--name-only", "main", BRANCH)
    [out_dir] = sample_repo.tmp.glob("out-*")
    refusals = json.loads((out_dir / "report.json").read_text())["refusals"]
    if move == "unstaged":  # (a moved gitlink is never listed: see the test above)
        reason = "gitlink (nested repository) refused in the commit"
        assert {"path": "vendor/lib/", "reason": reason, "tool": None} in refusals
