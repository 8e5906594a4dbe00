"""What the eval tests share: the real history of r1chardj0n3s/parse (a trimmed first-parent
range, tests/fixtures/history/parse.bundle and its PROVENANCE), the commits of its tasks, the
settings every eval of it runs with, and `eval` started in-process (click's runner).

In the range's last 11 first-parent commits three changed both parse.py and
tests/test_parse.py (#178 sub-second precision, #184 hyphens in field names, #221 grouping
characters); the 16-commit range adds #170 (tests moved into files of their own: nothing
failed before) and #174 (a `format` property). The `parse_repo` fixture (a fresh clone, with
settings.yml beside it) is in tests/e2e/eval/conftest.py."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from codegen_ci.cli import cli

BUNDLE = Path(__file__).parents[1] / "fixtures" / "history" / "parse.bundle"
# bundle commit ids (PROVENANCE maps them to the originals)
MOVED_TESTS = "e1f3fa0673ca32c97aa8fb221e756aa0a7ee4dd6"  # #170
FORMAT_PROPERTY = "c3aab70b91b62140a8aebefa0b9ac7288e00832d"  # #174
SUBSECONDS = "eb1d2969a0d85373da06bc1465d2bdc00e26e8ae"  # #178
HYPHENS = "d02283db5a28b4d85ce871eb0664e53797a0150a"  # #184
GROUPING = "aaa125c14d8d369c10cbd371df53f773b3a602a2"  # #221: the last task of the range
SETTINGS: dict[str, Any] = {
    "validation": {
        "test": ["python -m pytest -q -p no:cacheprovider -o addopts= tests"],
        "timeout": 120,
    },
    "limits": {"max_iterations": 1},
}
# The same without the proof run, the coverage run after a passing round and the flaky re-run
# of a failing round's tests (tests/e2e/gate's subjects): for the eval tests that do not read
# `resolved_with_proof`, two pytest runs fewer per resolved task and one per unresolved one.
NO_PROOF_SETTINGS: dict[str, Any] = {
    **SETTINGS,
    "validation": {**SETTINGS["validation"], "proof": {"tests": "off", "reruns": 0}},
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def clone_parse(tmp: Path, settings: dict[str, Any] = SETTINGS) -> Path:
    """A fresh clone of the bundle at `tmp/parse`, `tmp/settings.yml` (`settings`) beside it."""
    repo = tmp / "parse"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(repo)], check=True)
    (tmp / "settings.yml").write_text(yaml.safe_dump(settings))
    return repo


def snapshot(repo: Path) -> dict[str, Any]:
    """Everything of the user's that eval must leave alone: every file of the checkout (bytes),
    the index, HEAD, every ref, the stash and the worktree list."""
    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and not rel.startswith(".git/"):
            files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    index = (repo / ".git" / "index").read_bytes()
    return {
        "files": files,
        "index": hashlib.sha256(index).hexdigest(),
        "head": (repo / ".git" / "HEAD").read_text(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "status": git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
    }


def run_eval(repo: Path, *args: str) -> Result:
    """`codegen-ci eval --repo REPO --spec settings.yml ARGS` (the settings beside the clone)."""
    settings = repo.parent / "settings.yml"
    return CliRunner().invoke(cli, ["eval", "--repo", str(repo), "--spec", str(settings), *args])


def read(out: Path) -> dict[str, Any]:
    return json.loads((out / "eval.json").read_text())  # type: ignore[no-any-return]


def task_of(request: dict[str, Any]) -> str:
    """The task text a model request carries (its user message)."""
    return str(next(m["content"] for m in request["messages"] if m["role"] == "user"))


@dataclass(frozen=True)
class CheckedParse:
    """`eval --from-history 16 --check --concurrency 2` of a clone of its own, with
    NO_PROOF_SETTINGS: the tasks of every range the eval tests use (16, 11, 9 and 2 commits)
    checked once. Shared: read it, never write into it."""

    repo: Path
    out: Path
    exit_code: int
    output: str
    before: dict[str, Any]  # snapshot(repo) before and after the check
    after: dict[str, Any]


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder for work shared by every xdist worker of a session (the basetemp root;
    without xdist the basetemp itself)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def checked_parse(where: Path) -> CheckedParse:
    """The check, made in `where` by whichever test asks first (under a file lock, so once per
    session across xdist workers; called from a test or function fixture, in its isolated
    environment)."""
    where.mkdir(parents=True, exist_ok=True)
    record = where / "record.json"
    with (where / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            repo = clone_parse(where, NO_PROOF_SETTINGS)
            before = snapshot(repo)
            result = run_eval(
                repo,
                "--from-history",
                "16",
                "--check",
                "--output-dir",
                str(where / "out"),
                "--concurrency",
                "2",
            )
            done = {"exit_code": result.exit_code, "output": result.output}
            done |= {"before": before, "after": snapshot(repo)}
            record.write_text(json.dumps(done))
    data = json.loads(record.read_text())
    return CheckedParse(where / "parse", where / "out", **data)


def seed_check(out: Path, checked: CheckedParse, *commits: str) -> None:
    """Put the shared check of `commits` into the eval output directory `out`, as an earlier
    eval there leaves it (`tasks/<commit>/`): an eval of a clone with NO_PROOF_SETTINGS takes
    it instead of checking those tasks again (eval/store.py; the check's key is the
    model-free settings, the commit and its base, the same in every clone)."""
    for commit in commits:
        shutil.copytree(checked.out / "tasks" / commit[:12], out / "tasks" / commit[:12])
