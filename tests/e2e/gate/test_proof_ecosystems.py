"""Proof with Go (gotestsum) and TypeScript (jest): the tests that fail on the base commit's
code with the change's test files applied, and pass with the change; real toolchains."""

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
    edit,
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


def go_spec(repo: SampleRepo, task: str) -> Path:
    return write_spec(
        repo, proof=True, task=task, validation={"test": [GOTESTSUM], "junit": ["junit.xml"]}
    )


@needs_go
def test_go_the_repositorys_failing_test_proves_the_fix(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    repo = make_go_repo(tmp_path)
    model_env.add(*edit_turn(GO_FILE, GO_BUG, GO_FIX))

    code, output, _, report = run_cli(repo, go_spec(repo, "Remove never below zero."))

    assert code == 0, output
    # gotestsum's JUnit read in the pre-flight and the round; one round, only the fix committed
    assert report["iterations"] == 1 and report["preflight"]["tests"]["failed"] == 1
    assert report["rounds"][0]["tests"]["passed"] == report["rounds"][0]["tests"]["total"] >= 3
    base = repo.git("rev-parse", "main").strip()
    assert repo.git("diff", "--name-only", base, report["branch"]).split() == [GO_FILE]
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    assert [t["id"] for t in proof["fail_to_pass"]] == [
        "example.com/inventory::TestRemoveNeverBelowZero"
    ]
    assert proof["fail_to_pass"][0]["file"] == "store_test.go"
    assert proof["pass_to_pass"] >= 2


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
def test_jest_a_new_test_file_that_fails_on_the_base_proves_the_fix(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules)
    repo.commit({"src/price.test.ts": TS_PASSING_TEST}, "tests that pass")
    model_env.add(
        edit(TS_FILE, TS_BUG, TS_FIX),
        write("src/quantity.test.ts", TS_QUANTITY_TEST),
        Reply("done"),
    )
    spec = write_spec(
        repo, proof=True, task=TS_TASK, validation={"test": ["npm test"], "junit": ["junit.xml"]}
    )

    code, output, _, report = run_cli(repo, spec)

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    (proving,) = proof["fail_to_pass"]
    assert proving["id"].endswith("counts every unit") and proving["on_base"] == "failure"
    assert (proving["file"], proving["line"]) == ("src/quantity.test.ts", 5)
    assert proof["pass_to_pass"] == 1
