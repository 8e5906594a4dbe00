"""Proof with Go (gotestsum) and TypeScript (jest): the tests that fail on the base commit's
code with the change's test files applied, and pass with the change; real toolchains. (The
proof by the Go repository's own failing test: test_coverage_runners.py, in the run of its
changed lines; jest's changed lines are measured here, in the run of its proof.)

No flaky re-runs (`NO_RERUNS`): a candidate for proof is re-run on the base, a whole gotestsum
or jest run more, and no test here is about flakiness (test_proof_node.py's flaky test is)."""

from __future__ import annotations

from pathlib import Path

from eco_projects import (
    GO_BUG,
    GO_FILE,
    GO_FIX,
    GO_HAS,
    GO_HAS_TEST,
    GOTESTSUM,
    STORE_TEST_GO,
    TS_BUG,
    TS_FILE,
    TS_FIX,
    TS_PASSING_TEST,
    TS_QUANTITY_TEST,
    TS_TASK,
    edit_turn,
    make_go_repo,
    make_ts_repo,
    needs_go,
    needs_node,
    write,
    write_spec,
)
from gate_repos import run_cli
from sample_repo import SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

GO_PASSING_TESTS = STORE_TEST_GO.split("\nfunc TestRemoveNeverBelowZero")[0]


NO_RERUNS = {"reruns": 0}  # the default policy (`tests: preferred`), no flaky re-runs


def go_spec(repo: SampleRepo, task: str) -> Path:
    validation = {"test": [GOTESTSUM], "junit": ["junit.xml"], "proof": NO_RERUNS}
    return write_spec(repo, proof=True, task=task, validation=validation)


@needs_go
def test_go_a_new_function_and_its_test_are_proof_a_fix_without_a_test_is_not(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    """The new test cannot even build on the base (its function is not there): `not run`."""
    repo = make_go_repo(tmp_path)
    repo.commit({"store_test.go": GO_PASSING_TESTS}, "tests that pass")
    store = (repo.path / GO_FILE).read_text()
    model_env.add(write(GO_FILE, store + GO_HAS), write("has_test.go", GO_HAS_TEST), Reply("ok"))

    code, output, _, report = run_cli(repo, go_spec(repo, "Add Store.Has."))

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    assert [(t["id"], t["on_base"]) for t in proof["fail_to_pass"]] == [
        ("example.com/inventory::TestHas", "not run")
    ]

    unproven = make_go_repo(tmp_path / "again")
    unproven.commit({"store_test.go": GO_PASSING_TESTS}, "tests that pass")
    model_env.add(*edit_turn(GO_FILE, GO_BUG, GO_FIX))
    code, output, _, report = run_cli(unproven, go_spec(unproven, "Remove never below zero."))
    assert code == 0, output
    assert report["proof"]["status"] == "unproven" and report["proof"]["pass_to_pass"] >= 2


@needs_node
def test_jest_a_new_test_file_that_fails_on_the_base_proves_the_fix_changed_lines_named(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    """Two cases of one run: the proof (a new test file failing on the base), and the changed
    lines no test runs (jest's own coverage, `free()`'s body), each asserted on its own."""
    repo = make_ts_repo(tmp_path, node_modules)
    repo.commit({"src/price.test.ts": TS_PASSING_TEST}, "tests that pass")
    price = (repo.path / TS_FILE).read_text().replace(TS_BUG, TS_FIX)
    unused = "\nexport function free(cents: number): boolean {\n  return cents === 0;\n}\n"
    body = f"{TS_FILE}:{len(price.splitlines()) + 3}"  # `return cents === 0;`
    model_env.add(
        write(TS_FILE, price + unused),  # the fix, and a function no test runs
        write("src/quantity.test.ts", TS_QUANTITY_TEST),
        Reply("done"),
    )
    validation = {"test": ["npm test"], "junit": ["junit.xml"], "proof": NO_RERUNS}
    spec = write_spec(repo, proof=True, task=TS_TASK, validation=validation)

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    # the proof: the new test file fails on the base
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    (proving,) = proof["fail_to_pass"]
    assert proving["id"].endswith("counts every unit") and proving["on_base"] == "failure"
    assert (proving["file"], proving["line"]) == ("src/quantity.test.ts", 5)
    assert proof["pass_to_pass"] == 1
    # the changed lines: `free()`'s body, run by no test, named
    lines = proof["changed_lines"]
    assert lines["measured"] and lines["reason"] == "", lines
    assert lines["uncovered"] == [body], lines
    assert lines["total"] - lines["covered"] == 1, lines
