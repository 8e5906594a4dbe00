"""The checkout's built `target/` keeps the crate itself Fresh in the run's worktree (Debian's
cargo, offline): the worktree's files the checkout holds unchanged carry the checkout's times
(workspace/file_times.py), so cargo's fingerprints, copied with `target/`, still match and the
pre-flight compiles nothing (without them: "Compiling stock" in every worktree)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from eco_projects import debians_cargo, make_crate, needs_debians_cargo, write_spec
from gate_repos import run_cli
from sample_repo import SampleRepo

pytestmark = [pytest.mark.e2e, needs_debians_cargo]
LIB_RS = """pub fn remove(stock: u32, n: u32) -> u32 {
    stock.saturating_sub(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn removes() {
        assert_eq!(super::remove(5, 2), 3);
    }
}
"""


def preflight_log(out: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(out.rglob("*.log")))


def dry_run_on_the_built_checkout(repo: SampleRepo) -> tuple[int, str, Path, dict[str, Any]]:
    """Builds the checkout's tests into its `target/` (as a developer's earlier `cargo test`),
    then a dry run of `cargo test --offline`: its pre-flight is the one cargo run in the run's
    worktree."""
    build = ["/usr/bin/cargo", "test", "--offline", "--no-run", "-q"]
    subprocess.run(build, cwd=repo.path, check=True, capture_output=True)
    spec = write_spec(repo, task="t", validation={"test": ["cargo test --offline"], "timeout": 300})
    return run_cli(repo, spec, "--dry-run")


def test_the_preflight_compiles_nothing_the_checkouts_target_already_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    debians_cargo(monkeypatch)
    repo = make_crate(tmp_path, LIB_RS)

    code, output, out, _ = dry_run_on_the_built_checkout(repo)

    assert code == 0, output
    log = preflight_log(out)
    assert "running 1 test" in log, log
    assert "Compiling stock" not in log, log


def test_a_build_of_the_users_uncommitted_edit_is_never_taken_for_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkout's `target/` holds a build of an edit the user has not committed (a wrong
    `remove`): the worktree's `src/lib.rs` is the base's, so it keeps its new time, cargo
    compiles it, and the pre-flight's test passes on the base code."""
    debians_cargo(monkeypatch)
    repo = make_crate(tmp_path, LIB_RS)
    edited = LIB_RS.replace("stock.saturating_sub(n)", "stock.saturating_add(n)")
    (repo.path / "src/lib.rs").write_text(edited)

    code, output, out, report = dry_run_on_the_built_checkout(repo)

    assert code == 0, output
    log = preflight_log(out)
    assert "Compiling stock" in log, log
    assert report["rounds"][0]["tests"]["failed"] == 0, log
