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
    STORE_GO,
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


# A second test file of the package, moved and weakened in the same run as store_test.go is
# weakened in place: each case its own test, its own break of the code, asserted on its own.
COUNT_TEST_GO = """\
package inventory

import "testing"

func TestCountMissing(t *testing.T) {
\tif got := NewStore().Count("ghost"); got != 0 {
\t\tt.Fatalf("Count = %d, want 0", got)
\t}
}
"""
COUNT_OLD = "it.Count\n\t}\n\treturn 0\n"
COUNT_BROKEN = "it.Count\n\t}\n\treturn 1\n"
COUNT_CHECK_OLD = "got != 0 {"


@needs_go
def test_go_a_weakened_test_is_reported_and_the_fix_not_proven(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    """Two cases of one run: `store_test.go` weakened in place (`TestAdd`, Add broken), and
    `count_test.go` moved (`mv`) to `inventory_test.go` and weakened (`TestCountMissing`, Count
    broken); Go names a test by its package, so the move keeps every test (kept-tests lets it
    be), and the base version of the moved file runs at its new path."""
    repo = make_go_repo(tmp_path)
    repo.commit({"count_test.go": COUNT_TEST_GO}, "Count's test")
    assert CHECK_OLD in STORE_TEST_GO and COUNT_OLD in STORE_GO
    model_env.add(
        edit(GO_FILE, GO_BUG, GO_FIX),
        edit(GO_FILE, ADD_OLD, ADD_BROKEN),  # in place: Add broken, its test weakened
        edit("store_test.go", CHECK_OLD, "got != 5 && false {"),
        edit(GO_FILE, COUNT_OLD, COUNT_BROKEN),  # moved: Count broken, its test moved, weakened
        run("mv count_test.go inventory_test.go"),
        edit("inventory_test.go", COUNT_CHECK_OLD, "got != 0 && false {"),
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
    weakened = {t["file"]: t["id"] for t in proof["weakened"]}
    assert weakened.get("store_test.go") == "example.com/inventory::TestAdd", "in place"
    assert weakened.get("inventory_test.go") == "example.com/inventory::TestCountMissing", "moved"
    assert len(proof["weakened"]) == 2, proof["weakened"]
    # narrowed to the edited files' tests by a -run pattern
    log = next((out / "proof" / "logs").glob("original-*.log")).read_text()
    assert "TestAdd" in log, "in place"
    assert "TestCountMissing" in log, "moved"


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
