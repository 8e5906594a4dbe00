"""End to end with other ecosystems' own runners: a TypeScript project under jest (ts-jest,
jest-junit) and a Go module under gotestsum, fixed by the scripted model through real HTTP,
in real worktrees, with the real toolchains (.ci/run installs them). The Go module's bug fixed
in one round is test_coverage_runners.py's
test_go_changed_lines_come_from_the_cover_profile_the_failing_test_proves_the_fix (the same
run, its proof too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eco_projects import (
    GO_FILE,
    GO_PANIC_NEW,
    GO_PANIC_OLD,
    GO_RIGHT,
    GO_TASK,
    GOTESTSUM,
    JEST_JUNIT,
    TS_BUG,
    TS_FILE,
    TS_FIX,
    TS_TASK,
    edit_turn,
    make_go_repo,
    make_ts_repo,
    needs_go,
    needs_node,
    write_spec,
)
from gate_repos import reflections, run_cli
from sample_repo import SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

JEST_BIN = f"node_modules/.bin/{JEST_JUNIT}"  # the project's `npm test` script, run directly


def committed(repo: SampleRepo, report: dict[str, Any]) -> list[str]:
    base = repo.git("rev-parse", "main").strip()
    return repo.git("diff", "--name-only", base, report["branch"]).split()


# --- TypeScript / jest ----------------------------------------------------------------------


@needs_node
def test_jest_finds_the_tests_and_the_bug_is_fixed_in_one_round(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules)
    status_before = repo.git("status", "--porcelain", "--ignored")
    model_env.add(*edit_turn(TS_FILE, TS_BUG, TS_FIX))
    spec = write_spec(
        repo,
        task=TS_TASK,
        context=[TS_FILE],
        validation={"test": ["npm test"], "junit": ["junit.xml"]},
    )

    code, output, out, report = run_cli(repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["iterations"] == 1
    # jest found the tests in the agent's worktree (none under /.git/) and in the pre-flight
    assert report["preflight"]["tests"]["total"] == 2
    first = report["preflight"]["failures"][0]
    assert first["id"].endswith("multiplies cents by quantity")
    assert (first["file"], first["line"]) == ("src/price.test.ts", 6)  # from jest's stack
    assert report["rounds"][0]["tests"] == {
        "total": 2,
        "passed": 2,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
    }
    run_state = json.loads((out / "run.json").read_text())
    assert "/.git/" not in run_state["worktree"] + "/"
    # node_modules came from the checkout: linked, never committed, checkout untouched
    assert committed(repo, report) == [TS_FILE] == report["files_changed"]
    assert repo.git("status", "--porcelain", "--ignored") == status_before
    assert not Path(run_state["worktree"]).exists()
    assert (node_modules / "jest").is_dir()  # the shared install is still there
    message = repo.git("log", "-1", "--format=%B", report["branch"])
    assert "tests: 2/2 passed" in message


@needs_node
def test_preexisting_jest_failure_with_the_output_outside_the_repository(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules, legacy=True)
    model_env.add(*edit_turn(TS_FILE, TS_BUG, TS_FIX))
    spec = write_spec(
        repo,
        task=TS_TASK,
        context=[TS_FILE],
        validation={
            # jest by its own script, not through npm (npm loads first: ~0.6 CPU-s a start,
            # two starts here); `npm test` is the test above's and the one without JUnit's
            "test": [JEST_BIN],
            "junit": ["junit.xml"],
            "allow_preexisting_failures": True,
        },
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    assert report["status"] == "success"
    last = report["rounds"][-1]
    assert last["baseline_unavailable"] is None
    assert [(f["id"].strip(), f["new"]) for f in last["failures"]] == [
        ("legacy rounding was never right", False)
    ]
    assert committed(repo, report) == [TS_FILE]


@needs_node
def test_jest_without_junit_is_flagged_with_how_to_get_it(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules, test_script="jest --ci")
    spec = write_spec(repo, task=TS_TASK, context=[TS_FILE], validation={"test": ["npm test"]})

    dry_out = str(tmp_path / "dry")
    args = ["run", str(spec), "--repo", str(repo.path), "--output-dir", dry_out, "--dry-run"]
    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 0, result.output
    assert "tests: unknown (no JUnit report)" in result.output
    assert "no JUnit from `npm test`" in result.output and "jest-junit" in result.output

    model_env.add(*edit_turn(TS_FILE, TS_BUG, TS_FIX))
    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    assert [m["command"] for m in report["junit_missing"]] == ["npm test"]
    assert "--reporters=jest-junit" in report["junit_missing"][0]["hint"]
    message = repo.git("log", "-1", "--format=%B", report["branch"])
    assert "tests: unknown (no JUnit)" in message and "0/0" not in message


@pytest.fixture(scope="module")
def config_error_checkout(tmp_path_factory: pytest.TempPathFactory, node_modules: Path) -> Path:
    """One TypeScript checkout for the jest commands that cannot run (a git repository and a
    hard-linked node_modules of 5,700 files each: built once a worker, not once a case). A
    run stopped by a config error leaves the checkout as it was (each case checks it), so the
    cases do not see each other; each writes its spec and output in its own folder."""
    return make_ts_repo(tmp_path_factory.mktemp("jest-config-errors"), node_modules).path


@needs_node
@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("npm run test:unit", "Missing script"),
        # jest's own script, not `npm test --` (npm is the case above's subject, not this one's)
        ("node_modules/.bin/jest --ci --testPathPattern=no-such-file", "No tests found"),
        # a reporter the workflow did not install: jest cannot start, nothing to fix in code
        (
            "npx jest --ci --reporters=default --reporters=jest-junit-not-installed",
            "a test reporter is not installed",
        ),
    ],
)
def test_jest_that_cannot_run_is_a_config_error_before_any_model_call(
    tmp_path: Path,
    config_error_checkout: Path,
    model_env: ScriptedModelServer,
    command: str,
    shown: str,
) -> None:
    shared = SampleRepo(
        config_error_checkout, config_error_checkout.parent / "origin.git", tmp_path
    )
    status_before = shared.git("status", "--porcelain", "--ignored")
    branches_before = shared.git("branch", "--list")
    spec = write_spec(shared, task=TS_TASK, validation={"test": [command], "junit": ["junit.xml"]})

    code, output, _, report = run_cli(shared, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert command in report["error"] and shown in report["error"]
    assert model_env.requests == []
    # the checkout the next case runs in is as it was
    assert shared.git("status", "--porcelain", "--ignored") == status_before
    assert shared.git("branch", "--list") == branches_before


@needs_node
def test_init_on_the_typescript_project(tmp_path: Path, node_modules: Path) -> None:
    repo = make_ts_repo(tmp_path, node_modules)
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path)])
    assert result.exit_code == 0, result.output
    config = repo.path / ".codegen.yml"
    assert "test" in config.read_text()
    assert CliRunner().invoke(cli, ["validate", str(config)]).exit_code == 0


# --- Go / gotestsum -------------------------------------------------------------------------


@needs_go
def test_go_nil_pointer_panic_then_the_right_fix(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    repo = make_go_repo(tmp_path)
    model_env.add(
        *edit_turn(GO_FILE, GO_PANIC_OLD, GO_PANIC_NEW), *edit_turn(GO_FILE, GO_PANIC_NEW, GO_RIGHT)
    )
    spec = write_spec(
        repo,
        task=GO_TASK,
        context=[GO_FILE],
        validation={"test": [GOTESTSUM], "junit": ["junit.xml"]},
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    assert report["iterations"] == 2
    assert report["rounds"][0]["passed"] is False
    # the reflection (the first request of round 2) carries the panic
    reflection = reflections(model_env)[0]
    assert "nil pointer dereference" in reflection
    second_turn = model_env.tool_requests[2]["messages"]
    assert any("nil pointer dereference" in (m.get("content") or "") for m in second_turn)
    assert committed(repo, report) == [GO_FILE]


@needs_go
def test_go_packages_without_tests_are_a_config_error(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    repo = make_go_repo(tmp_path)
    spec = write_spec(repo, task=GO_TASK, validation={"test": ["go test ./units/..."]})

    code, output, _, report = run_cli(repo, spec, "--dry-run")

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "no test files" in report["error"]
    assert model_env.requests == []


@needs_go
def test_go_test_without_junit_gets_the_gotestsum_hint_in_the_dry_run(
    tmp_path: Path, go_env: None
) -> None:
    repo = make_go_repo(tmp_path)
    spec = write_spec(repo, task=GO_TASK, validation={"test": ["go test ./..."]})

    code, output, _, report = run_cli(repo, spec, "--dry-run")

    assert code == 0, output
    assert "tests: unknown (no JUnit report)" in output
    assert "gotestsum --junitfile junit.xml" in output
    assert report["junit_missing"][0]["command"] == "go test ./..."


@needs_go
def test_init_on_the_go_module(tmp_path: Path) -> None:
    repo = make_go_repo(tmp_path)
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path)])
    assert result.exit_code == 0, result.output
    config = repo.path / ".codegen.yml"
    assert "go" in config.read_text()
    assert CliRunner().invoke(cli, ["validate", str(config)]).exit_code == 0


@needs_go
def test_a_round_whose_go_tests_were_emptied_is_not_a_success(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    """The model empties the test file: `go test` passes with nothing to run and gotestsum's
    JUnit lists no test. No test, no success."""
    repo = make_go_repo(tmp_path)
    emptied = call("write_file", path="store_test.go", content="package inventory\n")
    model_env.add(Reply(tool_calls=[emptied]), Reply("Removed the failing test."))
    spec = write_spec(
        repo,
        task=GO_TASK,
        limits={"max_iterations": 1},
        validation={"test": [GOTESTSUM], "junit": ["junit.xml"]},
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 1, output
    rnd = report["rounds"][0]
    assert rnd["commands"][0]["exit_code"] == 0 and rnd["tests"]["total"] == 0
    assert any("ran no test" in f["message"] for f in rnd["failures"])
