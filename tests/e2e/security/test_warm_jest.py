"""jest's cache is warm in every phase after the pre-flight, on both backends
(security/warm_caches.py, `TMPDIR_CACHES`), with real jest 29 and ts-jest: TMPDIR is fresh in
each phase, so without the kept cache every round transformed every file again. The user's own
jest cache (under their TMPDIR) is never written."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from eco_projects import JEST_CONFIG, git_repo, npm_packages
from sandbox_attacks import run_inside

from codegen_ci.security.sandbox import open_sandbox
from codegen_ci.workspace.worktree import attach_worktree

pytestmark = pytest.mark.e2e
JEST = "node node_modules/jest/bin/jest.js --ci 2>&1"
MODULE = "export const twice = (n: number): number => n * {k};\n"
TEST = 'import {{ twice }} from "./m{i}";\n\ntest("twice", () => expect(twice(2)).toBe({v}));\n'


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")


def transformed(tmp: Path) -> dict[str, int]:
    """jest's transform cache files under a TMPDIR, with their modification times."""
    return {
        str(p.relative_to(tmp)): p.stat().st_mtime_ns
        for p in tmp.glob("jest_*/jest-transform-cache-*/**/*")
        if p.is_file()
    }


def project_files() -> dict[str, str]:
    """Three TypeScript modules and their tests, for jest with ts-jest."""
    files = {
        "package.json": json.dumps({"name": "w", "private": True, "jest": JEST_CONFIG}) + "\n",
        ".gitignore": "node_modules/\n",
        "tsconfig.json": '{"compilerOptions": {"strict": true, "esModuleInterop": true}}\n',
    }
    for i in range(1, 4):
        files[f"src/m{i}.ts"] = MODULE.format(k=i)
        files[f"src/m{i}.test.ts"] = TEST.format(i=i, v=2 * i)
    return files


@pytest.fixture(scope="session")
def users_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's own TMPDIR, jest's cache in it warm from a run outside any sandbox (in a
    copy of the project), made once per session (a file lock for xdist workers): the tests
    only read it, each asserting its sandbox wrote nothing there."""
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    root = shared / "warm-jest-users-tmp"
    root.mkdir(parents=True, exist_ok=True)
    user_tmp = root / "user-tmp"
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "warmed").exists():
            shutil.rmtree(root / "project", ignore_errors=True)
            shutil.rmtree(user_tmp, ignore_errors=True)
            for rel, text in project_files().items():
                (root / "project" / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / "project" / rel).write_text(text)
            node_modules = npm_packages(shared)
            subprocess.run(
                ["cp", "-al", str(node_modules), str(root / "project" / "node_modules")],
                check=True,
            )
            user_tmp.mkdir()
            outside = subprocess.run(
                JEST,
                shell=True,
                cwd=root / "project",
                env={**os.environ, "TMPDIR": str(user_tmp)},
                check=False,
                capture_output=True,
            )
            assert outside.returncode == 0, outside.stdout
            (root / "warmed").write_text("ok\n")
    return user_tmp


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_jests_transform_cache_from_the_preflight_is_reused_in_the_next_phase(
    backend: str,
    node_modules: Path,
    users_tmp: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    repo = git_repo(tmp_path / "project", project_files())
    # the user's own TMPDIR, warm from a run outside (once per session: `users_tmp`)
    user_tmp = users_tmp
    users, entries = transformed(user_tmp), sorted(p.name for p in user_tmp.iterdir())
    assert users
    (tmp_path / "wt").mkdir(mode=0o700)
    tree, _ = attach_worktree(repo.path, tmp_path / "wt" / "tree", commit="HEAD")
    # node_modules linked into the tree itself, not into the checkout: the worktree would copy
    # a checkout's (workspace/dependency_links.py: 47 MB, ~1 CPU-s a copy, and its removal),
    # which is not what this test is about; jest only reads it, the cache goes to TMPDIR
    subprocess.run(["cp", "-al", str(node_modules), str(tree / "node_modules")], check=True)
    monkeypatch.setenv("TMPDIR", str(user_tmp))
    sandbox = open_sandbox(os.environ, git_dir=repo.path / ".git", checkout=repo.path)
    try:
        sandbox.new_phase()  # the pre-flight
        first = run_inside(sandbox, tree, JEST)
        assert first.returncode == 0, first.stdout
        made = transformed(sandbox.scratch / "tmp")
        assert len(made) >= 6, made  # each module and test, transformed by ts-jest
        sandbox.keep_caches()
        sandbox.new_phase()  # a round: a fresh TMPDIR, started from the pre-flight's cache
        before = transformed(sandbox.scratch / "tmp")
        assert before.keys() == made.keys()
        again = run_inside(sandbox, tree, JEST)
        assert again.returncode == 0, again.stdout
        # a hit reads each file and writes none: a miss would write new ones (new times)
        assert transformed(sandbox.scratch / "tmp") == before
    finally:
        sandbox.close()
    assert transformed(user_tmp) == users  # the user's cache: not one file written
    assert sorted(p.name for p in user_tmp.iterdir()) == entries


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_the_repositorys_kept_cache_is_what_the_preflight_wrote_never_a_rounds(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caches kept for the repository (workspace/slots.py) take what the pre-flight's
    commands left in TMPDIR, and seed the next run's pre-flight; what a round writes there
    goes with its phase, and commands cannot reach the kept folder itself."""
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    repo = git_repo(tmp_path / "project", {"a.txt": "a\n"})
    (tmp_path / "wt").mkdir(mode=0o700)
    tree, _ = attach_worktree(repo.path, tmp_path / "wt" / "tree", commit="HEAD")
    kept = tmp_path / "repo-folder" / "caches"
    kept.parent.mkdir(mode=0o700)
    write = 'mkdir -p "$TMPDIR/jest_0" && echo {text} > "$TMPDIR/jest_0/{name}"'

    def one_run(*scripts: str) -> list[str]:
        sandbox = open_sandbox(
            os.environ, git_dir=repo.path / ".git", private=(kept.parent,), caches=kept
        )
        try:
            seen = []
            for n, script in enumerate(scripts):
                sandbox.new_phase()
                proc = run_inside(sandbox, tree, f"cat $TMPDIR/jest_0/* 2>&1; {script}")
                assert proc.returncode == 0, proc.stdout + proc.stderr
                seen.append(proc.stdout)
                if n == 0:  # the pre-flight
                    sandbox.keep_caches()
            return seen
        finally:
            sandbox.close()

    first = one_run(
        write.format(text="preflight", name="f"),
        write.format(text="round", name="f") + " && " + write.format(text="round", name="g"),
        f"ls {kept} || echo HIDDEN",
    )
    assert first[1] == "preflight\n"  # the round started from the pre-flight's
    assert "HIDDEN" in first[2] and "preflight" in first[2]
    assert sorted(p.name for p in (kept / "jest_0").iterdir()) == ["f"]
    assert (kept / "jest_0" / "f").read_text() == "preflight\n"

    second = one_run("true")

    assert second == ["preflight\n"]  # the next run's pre-flight: warm from the first
