"""The tests exercise the worktree in Node and Go too: a workspace package reached through
`node_modules` (when the dependency folder cannot be copied, a folder of links whose workspace
entries lead to the worktree, not one link to the checkout's), GOWORK naming the checkout's
`go.work` (redirected to the worktree's), and a `replace` that names the checkout by its
absolute path (the run stops before any model call, exit 2). Real npm (offline), node's test
runner, go, the scripted model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from eco_projects import edit_turn, git_repo, warm_go_cache, write_spec
from gate_repos import run_cli
from sample_repo import SampleRepo

from codegen_ci.testing.scripted_model import ScriptedModelServer

needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")
needs_go = pytest.mark.skipif(not shutil.which("go"), reason="needs go")

BUGGY, FIXED = "exports.add = (a, b) => a - b;\n", "exports.add = (a, b) => a + b;\n"
ADD_TEST = """\
const test = require("node:test");
const assert = require("node:assert");
const { add } = require("lib");

test("adds", () => assert.strictEqual(add(2, 3), 5));
"""
# `cp` as the machine's, except that copying a node_modules fails (a full disk)
NO_COPY = """#!/bin/sh
case "$*" in *node_modules*) echo "cp: error writing: No space left on device" >&2; exit 1;; esac
exec /bin/cp "$@"
"""


WORKSPACE = {
    "package.json": json.dumps({"name": "root", "private": True, "workspaces": ["packages/*"]}),
    ".gitignore": "node_modules/\n",
    "packages/lib/package.json": json.dumps({"name": "lib", "version": "1.0.0"}),
    "packages/app/package.json": json.dumps(
        {"name": "app", "version": "1.0.0", "dependencies": {"lib": "1.0.0"}}
    ),
    "packages/app/add.test.js": ADD_TEST,
}
# what npm's install wrote: the workspace's links (relative) and lock files, whatever lib's code
INSTALLED = ("node_modules", "package-lock.json")


@pytest.fixture(scope="module")
def installed_workspace() -> dict[str, Path]:
    """The workspace installed by npm once per module (per xdist worker), by the first test
    that needs it, in that test's isolated HOME: {"": its folder}."""
    return {}


def workspace_repo(tmp: Path, lib: str, installed: dict[str, Path]) -> SampleRepo:
    """An npm workspace (packages/lib, packages/app whose test requires `lib`), installed
    offline: node_modules/lib is npm's link to ../packages/lib. npm installs the first
    workspace of the module; the others get a copy of what it wrote (`cp -a`: the same links)."""
    files = {**WORKSPACE, "packages/lib/index.js": lib}
    repo = git_repo(tmp, files)
    if "" not in installed:
        subprocess.run(
            ["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=repo.path,
            check=True,
            capture_output=True,
            timeout=300,
        )
        installed[""] = repo.path
    else:
        sources = [str(installed[""] / name) for name in INSTALLED]
        subprocess.run(["cp", "-a", *sources, str(repo.path)], check=True)
    assert (repo.path / "node_modules" / "lib").readlink() == Path("../packages/lib")
    return repo


def no_copies(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp / "no-copy-bin"
    bin_dir.mkdir()
    (bin_dir / "cp").write_text(NO_COPY)
    (bin_dir / "cp").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@needs_node
@pytest.mark.parametrize(
    ("base", "edit", "code"),
    [(BUGGY, (BUGGY, FIXED), 0), (FIXED, (FIXED, BUGGY), 1)],
    ids=["fix-passes", "break-fails"],
)
def test_a_workspace_package_linked_through_node_modules_is_the_worktrees(
    tmp_path: Path,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    installed_workspace: dict[str, Path],
    base: str,
    edit: tuple[str, str],
    code: int,
) -> None:
    repo = workspace_repo(tmp_path, base, installed_workspace)
    no_copies(tmp_path, monkeypatch)
    model_env.add(*edit_turn("packages/lib/index.js", *edit))
    spec = write_spec(
        repo,
        task="add() must add.",
        validation={"test": ["node --test packages/"], "timeout": 120},
        limits={"max_iterations": 1},
    )

    got, output, _, report = run_cli(repo, spec)

    assert "could not copy" in output  # the folder of links, not a copy
    assert got == code, output
    assert report["status"] == ("success" if code == 0 else "failed")
    assert (repo.path / "packages/lib/index.js").read_text() == base  # the checkout as was


GO_WORK = "go 1.21\n\nuse (\n\t./app\n\t./lib\n)\n"
LIB_GO = "package lib\n\nfunc Add(a, b int) int { return a - b }\n"
APP_TEST = """\
package app

import (
\t"testing"

\t"example.com/lib"
)

func TestAdd(t *testing.T) {
\tif got := lib.Add(2, 3); got != 5 {
\t\tt.Fatalf("Add(2, 3) = %d", got)
\t}
}
"""


@pytest.fixture
def go_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's build cache warm, as a user's machine has it (eco_projects.warm_go_cache, shared by
    the session): each phase's `go test` links from it instead of compiling the standard
    library's testing packages again (each test has its own HOME, so its own cold cache)."""
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    monkeypatch.setenv("GOCACHE", str(warm_go_cache(shared)))


def go_workspace(tmp: Path, extra: dict[str, str] | None = None) -> SampleRepo:
    files = {
        "go.work": GO_WORK,
        "lib/go.mod": "module example.com/lib\n\ngo 1.21\n",
        "lib/lib.go": LIB_GO,
        "app/go.mod": "module example.com/app\n\ngo 1.21\n\nrequire example.com/lib v0.0.0\n",
        "app/app_test.go": APP_TEST,
        **(extra or {}),
    }
    return git_repo(tmp, files)


@needs_go
@pytest.mark.usefixtures("go_cache")
def test_gowork_naming_the_checkouts_workspace_is_redirected_to_the_worktrees(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = go_workspace(tmp_path)
    monkeypatch.setenv("GOWORK", str(repo.path / "go.work"))
    monkeypatch.setenv("GOPROXY", "off")
    model_env.add(*edit_turn("lib/lib.go", "a - b", "a + b"))
    spec = write_spec(
        repo,
        task="Add must add.",
        validation={"test": ["go test ./app/..."], "timeout": 300},
        limits={"max_iterations": 1},
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output  # without the redirect the checkout's lib, still buggy, fails
    assert any("GOWORK" in line for line in report["imports"])


@needs_go
def test_a_replace_naming_the_checkout_stops_the_run_before_the_model(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = go_workspace(tmp_path)
    absolute = f"module example.com/app\n\ngo 1.21\n\nreplace example.com/lib => {repo.path}/lib\n"
    repo.commit({"app/go.mod": absolute}, "replace by absolute path")
    model_env.add(*edit_turn("lib/lib.go", "a - b", "a + b"))
    spec = write_spec(repo, task="Add must add.", validation={"test": ["go test ./app/..."]})

    code, output, _, report = run_cli(repo, spec)

    assert code == 2, output
    assert report["reason"] == "config" and model_env.requests == []
    assert f"app/go.mod: replace example.com/lib => {repo.path}/lib" in report["error"]


@needs_go
@pytest.mark.usefixtures("go_cache")
def test_the_base_commits_answer_comes_from_the_base_code_not_the_checkout_gowork_names(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which failures the base commit had (here the pre-flight's full run answers it, the
    base-commit re-runs get the same redirect) comes from the base code, not the checkout's
    (whose lib is broken by uncommitted work): the failure the change made is known to be
    new, never "also fails on the base commit", which allow_preexisting_failures accepts."""
    repo = go_workspace(tmp_path, {"lib/lib.go": LIB_GO.replace("a - b", "a + b")})
    (repo.path / "lib" / "lib.go").write_text(LIB_GO)  # the user's work in progress, broken
    monkeypatch.setenv("GOWORK", str(repo.path / "go.work"))
    monkeypatch.setenv("GOPROXY", "off")
    model_env.add(*edit_turn("lib/lib.go", "a + b", "a * b"))
    spec = write_spec(
        repo,
        task="Add must add.",
        validation={
            "test": ["go test ./app/..."],
            "timeout": 300,
            "allow_preexisting_failures": True,
        },
        limits={"max_iterations": 1},
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 1, output
    failures = report["rounds"][-1]["failures"]
    assert failures and all(f["new"] is True for f in failures), failures
