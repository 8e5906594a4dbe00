"""Rust through the gate with the real cargo and rustc (Debian's), on both sandbox backends:
plain `cargo test` writes no JUnit, but libtest's own output names each test
(runners/cargo.py's `from_output`), so the counts are known, a failing test reaches the
report and the model by its name at its panic (`tests/floor.rs:3`), and a right fix with a
new test is proven; `cargo nextest run` gives counts through the JUnit its profile in
`.config/nextest.toml` writes (runners/cargo.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from eco_projects import debians_cargo, edit_turn, make_crate, needs_debians_cargo, write_spec
from gate_repos import reflections, run_cli

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = [pytest.mark.e2e, needs_debians_cargo]
LIB_RS = """pub fn remove(stock: u32, n: u32) -> u32 {
    stock - n
}

#[cfg(test)]
mod tests {
    use super::remove;

    #[test]
    fn removes() {
        assert_eq!(remove(5, 2), 3);
    }

    #[test]
    fn never_below_zero() {
        assert_eq!(remove(1, 3), 0);
    }
}
"""
BUG = "    stock - n\n"
WRONG = "    stock.wrapping_sub(n)\n"
RIGHT = "    stock.saturating_sub(n)\n"
# the change's own test: on the base commit it panics (`attempt to subtract with overflow`)
FLOOR_RS = "#[test]\nfn empty_stays_empty() {\n    assert_eq!(stock::remove(0, 1), 0);\n}\n"


@pytest.mark.parametrize("sandbox", ["bwrap", "landlock"])
def test_plain_cargo_tests_are_named_at_their_panic_counted_and_proven(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    debians_cargo(monkeypatch)
    lib = LIB_RS.replace(
        "    #[test]\n    fn never_below_zero", "    #[test]\n    #[ignore]\n    fn slow"
    )
    repo = make_crate(tmp_path, lib)
    model_env.add(
        Reply(tool_calls=[call("write_file", path="tests/floor.rs", content=FLOOR_RS)]),
        *edit_turn("src/lib.rs", BUG, WRONG),
        *edit_turn("src/lib.rs", WRONG, RIGHT),
    )
    # the product's default proof; the flaky re-runs (a failing round's, the proof's on the
    # base: the same `cargo test` again, not this test's subject) on one backend only
    reruns = {} if sandbox == "bwrap" else {"proof": {"reruns": 0}}
    spec = write_spec(
        repo,
        task="remove() must never go below zero",
        validation={"test": ["cargo test --offline"], "timeout": 300, **reruns},
        proof=True,
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    assert report["iterations"] == 2
    first, last = report["rounds"][0], report["rounds"][-1]
    failure = {k: first["failures"][0][k] for k in ("id", "file", "line")}
    assert failure == {
        "id": "tests/floor.rs::empty_stays_empty",
        "file": "tests/floor.rs",
        "line": 3,
    }
    assert "assertion failed" in first["failures"][0]["message"]
    assert last["tests"] == {"total": 3, "passed": 2, "failed": 0, "errors": 0, "skipped": 1}
    reflection = reflections(model_env)[0]
    assert "tests/floor.rs::empty_stays_empty (tests/floor.rs:3)" in reflection
    assert "panicked at" in reflection  # the panic itself, fenced with the failure
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    assert [t["id"] for t in proof["fail_to_pass"]] == ["tests/floor.rs::empty_stays_empty"]


def test_a_failing_unit_test_does_not_hide_the_integration_tests(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cargo stops at the first failing test binary: run as written, `src/lib.rs`'s failing
    unit test would leave `tests/floor.rs` unrun, its failure and count missing. The gate runs
    `cargo test` with `--no-fail-fast` (runners/cargo.py `every_test`)."""
    debians_cargo(monkeypatch)
    repo = make_crate(tmp_path, LIB_RS, {"tests/floor.rs": FLOOR_RS})
    spec = write_spec(repo, task="t", validation={"test": ["cargo test --offline"], "timeout": 300})

    code, output, _, report = run_cli(repo, spec, "--dry-run")

    assert code == 0, output
    (preflight,) = report["rounds"]  # the dry run's pre-flight
    tests = preflight["tests"]
    assert (tests["total"], tests["passed"], tests["failed"]) == (3, 1, 2), output
    failing = sorted(f["id"] for f in preflight["failures"])
    assert failing == ["src/lib.rs::tests::never_below_zero", "tests/floor.rs::empty_stays_empty"]
    assert preflight["commands"][0]["command"] == "cargo test --offline"  # the user's words


def test_a_crate_without_tests_ran_0_tests_and_never_succeeds(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every binary says `running 0 tests`: 0 tests, not an unknown count, so "no test, no
    success" stops the run before any model call, as for a JUnit report that lists none."""
    debians_cargo(monkeypatch)
    lib = LIB_RS.split("\n#[cfg(test)]")[0] + "\n"
    repo = make_crate(tmp_path, lib)
    model_env.add(*edit_turn("src/lib.rs", BUG, RIGHT))
    spec = write_spec(repo, task="t", validation={"test": ["cargo test --offline"], "timeout": 300})

    code, output, _, report = run_cli(repo, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "ran 0 tests" in report["error"], report["error"]
    assert model_env.requests == []


NEXTEST_FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "junit"
    / "nextest-rs-nextest"
    / "fixture-project-junit.xml"
)


NEXTEST_TOML = '[profile.ci]\nfail-fast = false\n\n[profile.ci.junit]\npath = "junit.xml"\n'


def nextest_stand_in(where: Path) -> Path:
    """`cargo-nextest` is not installable offline (crates.io): a stand-in that cargo runs for
    `cargo nextest` and that writes nextest's own JUnit (its fixture project's report, from
    nextest-rs/nextest) where the profile's config says, then fails as nextest does."""
    where.mkdir()
    shutil.copy(NEXTEST_FIXTURE, where / "report.xml")
    script = where / "cargo-nextest"
    script.write_text(
        "#!/bin/sh\n"
        'profile=default; [ "$3" = "--profile" ] && profile="$4"\n'
        'mkdir -p "target/nextest/$profile"\n'
        f'cp {where}/report.xml "target/nextest/$profile/junit.xml"\n'
        "exit 100\n"
    )
    script.chmod(0o755)
    return where


@pytest.mark.parametrize("sandbox", ["bwrap", "landlock"])
def test_nextests_junit_is_read_from_the_repositorys_profile(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    stand_in = nextest_stand_in(tmp_path / "nextest")
    monkeypatch.setenv("PATH", f"{stand_in}:/usr/bin:{os.environ['PATH']}")
    repo = make_crate(tmp_path, LIB_RS, {".config/nextest.toml": NEXTEST_TOML})
    spec = write_spec(
        repo, task="t", validation={"test": ["cargo nextest run --profile ci"], "timeout": 300}
    )
    out = repo.tmp / "dry"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), "--dry-run"]
    )

    assert "tests: 3 total, 2 passed, 1 failed" in result.output, result.output
    assert "fixture-project::basic::test_failure_assert (tests/basic.rs:19)" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["junit_missing"] == []
