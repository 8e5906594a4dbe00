"""A weakened Go test (`if got != 5 && false`) and a weakened jest test (`toBeDefined()`
instead of `toBe(900)`) are reported, with real gotestsum and jest: the base version of the
edited test file runs against the change's code, narrowed to that file.

No flaky re-runs (`NO_RERUNS`): the candidate for proof on the base and each weakened test would
be re-run, a whole gotestsum or jest run more each, and no test here is about flakiness
(test_proof_node.py's flaky test is)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eco_projects import (
    GO_BUG,
    GO_FILE,
    GO_FIX,
    GOTESTSUM,
    STORE_TEST_GO,
    TS_BUG,
    TS_FILE,
    TS_FIX,
    TS_PASSING_TEST,
    TS_QUANTITY_TEST,
    TS_TASK,
    edit,
    make_go_repo,
    make_ts_repo,
    needs_go,
    needs_node,
    write,
    write_spec,
)
from gate_repos import run_cli

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.e2e
ADD_OLD = "\tit.Count += n\n"
ADD_BROKEN = "\tit.Count = n\n"
CHECK_OLD = "got != 5 {"
NO_RERUNS = {"reruns": 0}  # the default policy (`tests: preferred`), no flaky re-runs


def run(command: str) -> Reply:
    return Reply(tool_calls=[call("run_command", command=command)])


@needs_go
@pytest.mark.parametrize("test_file", ["store_test.go", "inventory_test.go"])
def test_go_a_weakened_test_is_reported_and_the_fix_not_proven(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer, test_file: str
) -> None:
    """`inventory_test.go`: the test file moved (`mv`) and weakened; Go names a test by its
    package, so the move keeps every test (kept-tests lets it be), and the base version of the
    file runs at its new path."""
    repo = make_go_repo(tmp_path)
    assert CHECK_OLD in STORE_TEST_GO
    moves = [] if test_file == "store_test.go" else [run(f"mv store_test.go {test_file}")]
    model_env.add(
        edit(GO_FILE, GO_BUG, GO_FIX),
        edit(GO_FILE, ADD_OLD, ADD_BROKEN),
        *moves,
        edit(test_file, CHECK_OLD, "got != 5 && false {"),
        Reply("done"),
    )
    spec = write_spec(
        repo,
        task="Remove never below zero.",
        validation={"test": [GOTESTSUM], "junit": ["junit.xml"], "proof": NO_RERUNS},
        proof=True,
    )

    code, output, out, report = run_cli(repo, spec)

    assert code == 0, output  # preferred (the default): reported, not refused
    proof = report["proof"]
    assert proof["status"] == "unproven", proof
    assert [t["id"] for t in proof["weakened"]] == ["example.com/inventory::TestAdd"]
    assert proof["weakened"][0]["file"] == test_file
    # narrowed to the edited file's tests by a -run pattern
    log = next((out / "proof" / "logs").glob("original-*.log")).read_text()
    assert "TestAdd" in log


DISCOUNT_OLD = "discountPercent / 100"
JEST = "node_modules/.bin/jest --ci --reporters=default --reporters=jest-junit"


@needs_node
def test_jest_a_weakened_test_is_reported_and_the_fix_not_proven(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules)
    repo.commit({"src/price.test.ts": TS_PASSING_TEST}, "tests that pass")
    model_env.add(
        edit(TS_FILE, TS_BUG, TS_FIX),
        edit(TS_FILE, DISCOUNT_OLD, "discountPercent / 50"),  # breaks the discount
        edit("src/price.test.ts", "toBe(900)", "toBeDefined()"),  # and its test
        write("src/quantity.test.ts", TS_QUANTITY_TEST),
        Reply("done"),
    )
    validation = {"test": [JEST], "junit": ["junit.xml"], "proof": NO_RERUNS}
    spec = write_spec(repo, task=TS_TASK, validation=validation, proof=True)

    code, output, out, report = run_cli(repo, spec)

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "unproven", proof
    (weakened,) = proof["weakened"]
    assert (
        weakened["id"].endswith("applies the discount") and weakened["file"] == "src/price.test.ts"
    )
    assert next(t["id"] for t in proof["fail_to_pass"]).endswith("counts every unit")
    # narrowed to the edited file: the new test did not run there
    log = next((out / "proof" / "logs").glob("original-*.log")).read_text()
    assert "price.test.ts" in log and "quantity.test.ts" not in log
