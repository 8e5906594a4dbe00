"""The proof's tree on the base commit borrows the run's copy of `node_modules` (moved there
and back, never copied again), and the phases after a passing round say what they do.

The repository's tests print, in pytest's header, the inode of a file inside the worktree's
`node_modules`: the same inode in the round's run and the proof's base run is the same copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gate_repos import run_cli
from sample_repo import FIX, SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

CONFTEST = """\
import os


def pytest_report_header(config):
    found = os.stat("node_modules/pkg/index.js")
    return f"dependency inode {found.st_ino}"
"""
INODE = re.compile(r"dependency inode (\d+)")


def with_installed_dependencies(repo: SampleRepo) -> Path:
    repo.commit({".gitignore": "node_modules/\n", "conftest.py": CONFTEST}, "deps ignored")
    package = repo.path / "node_modules" / "pkg"
    package.mkdir(parents=True)
    (package / "index.js").write_text("module.exports = 1;\n")
    return package / "index.js"


def inodes(logs: Path) -> set[int]:
    return {int(m[1]) for log in logs.glob("*.log") for m in INODE.finditer(log.read_text())}


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_the_proof_borrows_the_runs_node_modules_and_the_phases_are_announced(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    sandbox: str,
) -> None:
    """Either backend: the lending happens outside the commands, the same answer for both."""
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    installed = with_installed_dependencies(sample_repo)
    before = installed.stat()
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))
    sample_repo.proof = True  # the product's default policy: the proof's tree is the point
    spec = sample_repo.write_spec(
        validation={"test": ["python -m pytest -p no:cacheprovider tests"], "timeout": 120}
    )

    code, output, out, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["proof"]["status"] == "proven", report["proof"]
    in_rounds, on_base = inodes(out / "logs"), inodes(out / "proof" / "logs")
    assert len(in_rounds) == 1 and on_base == in_rounds, (in_rounds, on_base)
    assert before.st_ino not in in_rounds  # a copy of the run's own, not the checkout's
    after = installed.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    for phase in (
        "proving: preparing a worktree on the base commit",
        "proving: the tests on the base commit",
        "proving: removing the base commit's worktree",
        "proving: measuring which changed lines the tests run",
        "cleanup: the run's worktrees",
    ):
        assert phase in output, output
