"""Proof with vitest, and changed lines run by vitest and `node --test`, through the CLI
with the scripted model: real vitest and its V8 coverage package (`@vitest/coverage-v8`),
installed from the npm registry once per session; Node's own runner. (jest's changed lines:
test_proof_ecosystems.py, in the run of its proof.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from eco_projects import (
    git_repo,
    write_spec,
)
from gate_repos import reflections, run_cli
from kept_projects import vitest_packages
from node_projects import (
    CALC_BUG,
    CALC_FILE,
    CALC_FIX,
    CALC_JS,
    CALC_TASK,
    VITEST_COVERAGE_PACKAGES,
    VITEST_JUNIT,
    make_vitest_repo,
    npm_install,
)
from sample_repo import SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")

ABOVE_TEST = """\
import { expect, it } from "vitest";
import { clamp } from "./calc.js";

it("keeps v below hi", () => expect(clamp(5, 0, 3)).toBe(3));
"""
ABOVE_ID = "src/above.test.js::keeps v below hi"
# A test that passes on the base commit too: no proof of anything the task asked.
IDLE_TEST = """\
import { expect, it } from "vitest";
import { clamp } from "./calc.js";

it("leaves v inside the range alone", () => expect(clamp(2, 0, 3)).toBe(2));
"""
IDLE_ID = "src/above.test.js::leaves v inside the range alone"
# Fails on the first run in each tree and passes after: flaky by design. Its counter lives
# beside the tests (ignored by git), so the base commit's tree keeps its own.
FLAKY_TEST = """\
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("sometimes", () => {
  const counter = fileURLToPath(new URL("../.flaky-count", import.meta.url));
  const n = existsSync(counter) ? Number(readFileSync(counter, "utf8")) + 1 : 1;
  writeFileSync(counter, String(n));
  expect(n, `run ${n}: the first run fails, by design`).toBeGreaterThan(1);
});
"""
# The fix and a function no test runs: its body is the uncovered changed lines.
WRAP = """
/** v, wrapped around into lo..hi. */
export function wrap(v, lo, hi) {
  const span = hi - lo + 1;
  return lo + ((((v - lo) % span) + span) % span);
}
"""
CALC_FIXED_WITH_WRAP = CALC_JS.replace(CALC_BUG, CALC_FIX) + WRAP
# the two lines of its body (V8 counts the closing brace as run: the function was defined)
WRAP_BODY = f"{CALC_FILE}:{len(CALC_JS.splitlines()) + 4}-{len(CALC_JS.splitlines()) + 5}"


@pytest.fixture(scope="session")
def vitest_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    # on top of the other tests' vitest install (the same vitest, its coverage package added)
    return npm_install(shared, VITEST_COVERAGE_PACKAGES, over=vitest_packages(shared))


def fix() -> Reply:
    return Reply(
        tool_calls=[call("edit_file", path=CALC_FILE, old_text=CALC_BUG, new_text=CALC_FIX)]
    )


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[call("write_file", path=path, content=content)])


# vitest started by its own script in node_modules/.bin, not through npx: npx loads npm first
# (0.7 s of CPU a start, of vitest's 1.7), and the runner is the same (runners/_node.py reads
# either). One test here runs vitest through npx as a workflow often writes it (the coverage
# flags appended after npx's words); so do test_tests_kept_ecosystems_e2e.py's vitest cases.
VITEST_BIN = VITEST_JUNIT.replace("npx vitest", "node_modules/.bin/vitest", 1)


def spec(repo: SampleRepo, command: str = VITEST_BIN, **proof: object) -> Path:
    """Proof on (the policy `proof` names, else the default), with no flaky re-runs (a vitest
    start each: a candidate for proof is re-run on the base) unless `proof` asks for them:
    only the flaky test is about them."""
    validation: dict[str, object] = {"test": [command], "junit": ["junit.xml"]}
    validation["proof"] = {"reruns": 0, **proof}
    return write_spec(repo, proof=True, task=CALC_TASK, validation=validation)


def test_vitest_a_fix_without_a_test_is_unproven_and_without_coverage_v8_says_so(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, model_env: ScriptedModelServer
) -> None:
    """Two cases of one run (the same script and spec): the proof of a fix without a test,
    and the changed lines of a repository with vitest alone, as many have it (no
    `@vitest/coverage-v8`): the proof's assertions read no changed line."""
    modules = vitest_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")
    repo = make_vitest_repo(tmp_path, modules)
    model_env.add(fix(), Reply("Fixed."))

    code, output, out, report = run_cli(repo, spec(repo))

    assert code == 0, output
    # a fix without a test: a success, unproven
    assert report["status"] == "success"
    proof = report["proof"]
    assert (proof["status"], proof["fail_to_pass"]) == ("unproven", []), "fix without a test"
    assert "adds or edits no test" in proof["reason"], "fix without a test"
    assert proof["pass_to_pass"] == 1, "fix without a test"
    assert "proof: unproven (" in output, "fix without a test"
    # the pre-flight ran vitest in full on the base commit: no run there again, no base tree
    assert not (out / "proof" / "logs").exists(), "fix without a test: no base run"
    assert "proving: preparing a worktree" not in output, "fix without a test: no base tree"
    # without its coverage package: not measured, the reason says so, nothing installed
    lines = proof["changed_lines"]
    assert not lines["measured"] and "@vitest/coverage-v8" in lines["reason"], lines
    assert "installs nothing" in lines["reason"], "without its coverage package"
    assert not (repo.path / "node_modules" / "@vitest" / "coverage-v8").exists()


def test_vitest_a_new_test_that_passes_on_the_base_too_is_no_proof_and_unrun_lines_are_named(
    tmp_path: Path, vitest_modules: Path, model_env: ScriptedModelServer
) -> None:
    """Two cases of one run (vitest through npx): a new test that passes on the base commit
    too is no proof, and the changed lines no test runs (`wrap()`'s body) are named."""
    repo = make_vitest_repo(tmp_path, vitest_modules)
    model_env.add(
        write(CALC_FILE, CALC_FIXED_WITH_WRAP),
        write("src/above.test.js", IDLE_TEST),
        Reply("Fixed, and added wrap."),
    )

    code, output, out, report = run_cli(repo, spec(repo, VITEST_JUNIT))  # through npx

    assert code == 0, output
    proof = report["proof"]
    # a new test that passes on the base commit too: no proof
    assert proof["status"] == "unproven", proof
    assert proof["not_proof"] == [IDLE_ID]
    # the changed lines: wrap()'s body, run by no test, named
    lines = proof["changed_lines"]
    assert lines["measured"] and lines["reason"] == "", lines
    assert lines["uncovered"] == [WRAP_BODY], lines
    assert lines["covered"] == lines["total"] - 2
    assert (out / "coverage" / "logs" / "coverage.log").is_file()
    assert sorted(report["files_changed"]) == ["src/above.test.js", CALC_FILE]  # no coverage files
    assert report["rounds"][0]["tests"]["total"] == 2  # the gate's own run, as it was


def test_vitest_required_proof_asks_for_a_failing_test_then_succeeds_proven(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, model_env: ScriptedModelServer
) -> None:
    """With vitest alone (no `@vitest/coverage-v8`): the changed lines, not this test's
    subject, are then not measured, a vitest run less after each passing round."""
    modules = vitest_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")
    repo = make_vitest_repo(tmp_path, modules)
    model_env.add(
        fix(),
        Reply("Fixed."),
        write("src/above.test.js", ABOVE_TEST),  # round 2: a test that fails without the fix
        Reply("Added a test."),
    )

    code, output, _, report = run_cli(repo, spec(repo, tests="required"))

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 2)
    assert report["proof"]["status"] == "proven"
    assert [t["id"] for t in report["proof"]["fail_to_pass"]] == [ABOVE_ID]
    (asked,) = reflections(model_env)
    assert "requires a test that fails without the change" in asked
    assert "you added or changed no test" in asked


def test_vitest_a_flaky_test_is_re_run_not_charged_to_the_model_and_never_proof(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, model_env: ScriptedModelServer
) -> None:
    """With vitest alone (no `@vitest/coverage-v8`): the changed lines, not this test's
    subject, are then not measured, a vitest run less."""
    modules = vitest_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")
    repo = make_vitest_repo(tmp_path, modules, {"src/flaky.test.js": FLAKY_TEST})
    model_env.add(fix(), write("src/above.test.js", ABOVE_TEST), Reply("done"))

    code, output, _, report = run_cli(repo, spec(repo, reruns=1))  # the default

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 1)
    assert reflections(model_env) == []  # never charged
    proof = report["proof"]
    # flaky with the change (round 1) and on the base commit (the proof run): the repository's
    assert [(f["id"], f["where"]) for f in proof["flaky"]] == [
        ("src/flaky.test.js::sometimes", "both")
    ]
    # the new test fails on the base commit (flaky there? re-run: no): it proves the fix
    assert proof["status"] == "proven", proof
    (proving,) = proof["fail_to_pass"]
    assert (proving["id"], proving["on_base"]) == (ABOVE_ID, "failure")
    assert (proving["file"], proving["line"]) == ("src/above.test.js", 4)
    assert proof["pass_to_pass"] == 1  # calc's own test; the flaky one is neither
    assert report["rounds"][0]["passed"] and report["rounds"][0]["failures"] == []
    # the re-runs on the base say so (a passing round is followed by phases of its own)
    assert "proving: re-running 2 test(s) on the base (flaky?)" in output, output


NODE_LIB = """\
export function half(n) {
  return n / 2;
}
"""
NODE_TEST = """\
import { test } from "node:test";
import assert from "node:assert";
import { half } from "./lib.mjs";

test("halves", () => assert.equal(half(4), 2));
"""
NODE_RUNNER = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination=junit.xml"
)


def test_node_test_changed_lines_no_test_runs_are_named(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = git_repo(
        tmp_path,
        {
            "package.json": '{"name": "half", "private": true, "type": "module"}\n',
            ".gitignore": "junit.xml\n",
            "lib.mjs": NODE_LIB,
            "lib.test.mjs": NODE_TEST,
        },
    )
    double = "\nexport function double(n) {\n  const twice = n * 2;\n  return twice;\n}\n"
    model_env.add(write("lib.mjs", NODE_LIB + double), Reply("Added double()."))

    code, output, _, report = run_cli(
        repo,
        write_spec(
            repo,
            proof=True,
            task="Add double().",
            validation={"test": [NODE_RUNNER], "junit": ["junit.xml"]},
        ),
    )

    assert code == 0, output
    lines = report["proof"]["changed_lines"]
    assert lines["measured"] and lines["reason"] == "", lines
    assert lines["uncovered"] == ["lib.mjs:6-8"], lines
