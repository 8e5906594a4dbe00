"""A symlink out of the repository never reaches the commit. Reads and writes through
such a link are refused by the path guard (test_security.py); the link itself is restored to
what the base had, left out of the commit and reported in `refusals`, whoever made it. A link
that stays inside the repository is an ordinary change and is committed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_repo import FIX, QUICK_GATE, SampleRepo, sh
from sandbox_attacks import BACKENDS, ONE_BACKEND

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

VERSION = "src/semver/version.py"
ESCAPING = {
    "etc-link": "/etc",  # absolute
    "git-link": ".git",  # git internals
    "src/semver/data/up": "../../../..",  # relative, but out of the repository
    "README.md": "/etc/passwd",  # a base file replaced by a link
}
INSIDE = {"docs/readme.md": "../README.md"}


def run(repo: SampleRepo, **spec: object) -> tuple[int, str, dict[str, Any]]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli,
        ["run", str(repo.write_spec(**spec)), "--repo", str(repo.path), "--output-dir", str(out)],
    )
    return result.exit_code, result.output, json.loads((out / "report.json").read_text())


def link_commands(links: dict[str, str]) -> str:
    return " && ".join(
        f"mkdir -p $(dirname {path}) && rm -f {path} && ln -s {target} {path}"
        for path, target in links.items()
    )


# our commit and our check after each command refuse the links, whatever confined the command
# that made them (sandbox_attacks.py); the loop test below keeps both backends: its loop lies
# in the base commit, which each backend's confined proof and test commands run over
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_symlinks_out_of_the_repository_are_not_committed(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the links the model's commands make and our commit of them are the subject: no proof and
    # coverage runs after the passing round (conftest.py's default; the loop test below keeps
    # them: its loop is in the base commit, which the proof checks out and runs)
    sample_repo.proof = False
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    base = sample_repo.head()
    readme = sample_repo.git("show", "HEAD:README.md")
    model_env.add(
        Reply(tool_calls=[call("run_command", command="ln -s /etc etc-link; ln -s .git git-link")]),
        Reply(
            tool_calls=[
                call(
                    "run_command",
                    command="mkdir -p src/semver/data && cd src/semver/data && "
                    "ln -s ../../../.. up",
                ),
                call("run_command", command=link_commands({"README.md": "/etc/passwd", **INSIDE})),
            ]
        ),
        Reply(tool_calls=[FIX]),
        Reply("Fixed, and added some links."),
    )

    code, output, report = run(sample_repo, validation=QUICK_GATE)  # the gate: not the subject

    assert code == 0, output
    branch = report["branch"]
    committed = sample_repo.git("diff", "--name-only", base, branch).split()
    assert sorted(committed) == ["docs/readme.md", VERSION]
    assert sorted(report["files_changed"]) == ["docs/readme.md", VERSION]
    # the link inside the repository is committed as a link (mode 120000)
    assert sample_repo.git("ls-tree", branch, "docs/readme.md").startswith("120000 ")
    assert sample_repo.git("show", f"{branch}:docs/readme.md") == "../README.md"
    # the base's README.md is back, as a file
    assert sample_repo.git("ls-tree", branch, "README.md").startswith("100644 ")
    assert sample_repo.git("show", f"{branch}:README.md") == readme
    refused = {r["path"]: r for r in report["refusals"]}
    for path in ESCAPING:
        assert refused[path]["reason"] == "symlink pointing outside the repository; restored"
        assert refused[path]["tool"] == "run_command"
    # the model was told at once, in the command's result
    results = [m["content"] for m in model_env.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("etc-link is a symlink out of the repository" in r for r in results)
    # the scope comes from the source file changed, never from a refused link
    assert sample_repo.git("log", "-1", "--format=%s", branch).startswith("fix(semver): ")


def test_without_the_tool_git_commits_the_same_link(
    tmp_path: Path, sample_repo: SampleRepo
) -> None:
    """Positive control: the same command and a plain `git commit` do carry the link."""
    clone = tmp_path / "plain"
    sh(["git", "clone", "-q", str(sample_repo.origin), str(clone)], tmp_path)
    subprocess.run(link_commands(ESCAPING), shell=True, cwd=clone, check=True)
    sh(["git", "add", "-A"], clone)
    sh(["git", "commit", "-q", "-m", "links"], clone)
    tree = sh(["git", "ls-tree", "-r", "HEAD"], clone)
    assert "120000 blob" in tree and "\tetc-link" in tree and "\tsrc/semver/data/up" in tree


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_a_loop_of_symlinks_is_refused_not_a_crash(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    (sample_repo.path / "loop-a").symlink_to("loop-b")
    (sample_repo.path / "loop-b").symlink_to("loop-a")
    sample_repo.commit({}, "a loop in the base")
    model_env.add(
        Reply(
            tool_calls=[
                call("read_file", path="loop-a"),
                call("run_command", command="ln -s loop-d loop-c; ln -s loop-c loop-d"),
            ]
        ),
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
    )

    code, output, report = run(sample_repo)

    assert code == 0, output
    results = [m["content"] for m in model_env.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "Error: refused 'loop-a': path is a loop of symlinks."
    assert {"loop-c", "loop-d"} <= {r["path"] for r in report["refusals"]}
    assert report["files_changed"] == [VERSION]


def test_search_files_never_reads_through_a_link(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model links a file outside the repository (and a folder holding it) into the
    worktree, then searches for what the file holds: the search, run by the tool's own
    unconfined process, follows neither link; the ordinary file it also planted is found."""
    # the tool's search is the subject: no proof and coverage runs after the passing round
    # (conftest.py's default; test_base_rerun_confined is about them)
    sample_repo.proof = False
    # our search reads what a confined command left, whatever confined it: one backend
    monkeypatch.setenv("CODEGEN_SANDBOX", *ONE_BACKEND)
    secret = tmp_path / "outside" / "hosts.yml"
    secret.parent.mkdir()
    secret.write_text("oauth_token: LEAKED-TOKEN-91f3\n")
    plant = (
        f"ln -s {secret} leak.yml && ln -s {secret.parent} leakdir && "
        "echo 'LEAKED-TOKEN-91f3 is a plain line' > plain.txt"
    )
    model_env.add(
        Reply(tool_calls=[call("run_command", command=plant)]),
        Reply(tool_calls=[call("search_files", pattern="LEAKED-TOKEN")]),
        Reply(tool_calls=[FIX]),
        Reply("Done."),
    )

    run(sample_repo, validation=QUICK_GATE)  # the gate's verdict is not the subject either

    results = [m["content"] for m in model_env.requests[2]["messages"] if m["role"] == "tool"]
    searched = results[-1]
    assert "plain.txt:1:" in searched  # the search ran and found the ordinary file
    assert "oauth_token" not in searched and "hosts.yml" not in searched
    # control: an ordinary read through such a link reaches the file
    link = tmp_path / "leak.yml"
    link.symlink_to(secret)
    assert "oauth_token" in link.read_text()
