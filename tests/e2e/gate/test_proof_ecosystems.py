"""Proof with Go (gotestsum) and TypeScript (jest): the tests that fail on the base commit's
code with the change's test files applied, and pass with the change; real toolchains."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eco_projects import (
    GO_BUG,
    GO_FILE,
    GO_FIX,
    GOTESTSUM,
    STORE_TEST_GO,
    TS_BUG,
    TS_FILE,
    TS_FIX,
    TS_TASK,
    edit_turn,
    make_go_repo,
    make_ts_repo,
    npm_packages,
    write_spec,
)
from sample_repo import SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")
needs_go = pytest.mark.skipif(
    not (shutil.which("go") and shutil.which("gotestsum")), reason="needs go and gotestsum"
)
GO_PASSING_TESTS = STORE_TEST_GO.split("\nfunc TestRemoveNeverBelowZero")[0]
GO_HAS = """
// Has tells whether name is in stock.
func (s *Store) Has(name string) bool {
\treturn s.Count(name) > 0
}
"""
GO_HAS_TEST = """\
package inventory

import "testing"

func TestHas(t *testing.T) {
\ts := NewStore()
\ts.Add("nut", 1)
\tif !s.Has("nut") || s.Has("bolt") {
\t\tt.Fatal("Has is wrong")
\t}
}
"""
TS_PASSING_TEST = """\
import { expect, test } from "@jest/globals";
import { total } from "./price";

test("applies the discount", () => {
  expect(total([{ name: "pad", cents: 1000, quantity: 1 }], 10)).toBe(900);
});
"""
TS_QUANTITY_TEST = """\
import { expect, test } from "@jest/globals";
import { total } from "./price";

test("counts every unit", () => {
  expect(total([{ name: "pen", cents: 100, quantity: 2 }])).toBe(200);
});
"""


@pytest.fixture(scope="session")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_packages(tmp_path_factory.getbasetemp().parent / "ecosystems")


@pytest.fixture
def go_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    monkeypatch.setenv("GOCACHE", str(shared / "go-build"))
    monkeypatch.setenv("GOPATH", str(shared / "gopath"))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")


def run(repo: SampleRepo, spec: Path) -> tuple[int, str, dict[str, Any]]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out)]
    )
    path = out / "report.json"
    return result.exit_code, result.output, json.loads(path.read_text()) if path.exists() else {}


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[call("write_file", path=path, content=content)])


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

    code, output, report = run(repo, go_spec(repo, "Remove never below zero."))

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

    code, output, report = run(repo, go_spec(repo, "Add Store.Has."))

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    assert [(t["id"], t["on_base"]) for t in proof["fail_to_pass"]] == [
        ("example.com/inventory::TestHas", "not run")
    ]

    unproven = make_go_repo(tmp_path / "again")
    unproven.commit({"store_test.go": GO_PASSING_TESTS}, "tests that pass")
    model_env.add(*edit_turn(GO_FILE, GO_BUG, GO_FIX))
    code, output, report = run(unproven, go_spec(unproven, "Remove never below zero."))
    assert code == 0, output
    assert report["proof"]["status"] == "unproven" and report["proof"]["pass_to_pass"] >= 2


@needs_node
def test_jest_a_new_test_file_that_fails_on_the_base_proves_the_fix(
    tmp_path: Path, node_modules: Path, model_env: ScriptedModelServer
) -> None:
    repo = make_ts_repo(tmp_path, node_modules)
    repo.commit({"src/price.test.ts": TS_PASSING_TEST}, "tests that pass")
    model_env.add(
        Reply(tool_calls=[call("edit_file", path=TS_FILE, old_text=TS_BUG, new_text=TS_FIX)]),
        write("src/quantity.test.ts", TS_QUANTITY_TEST),
        Reply("done"),
    )
    spec = write_spec(
        repo, proof=True, task=TS_TASK, validation={"test": ["npm test"], "junit": ["junit.xml"]}
    )

    code, output, report = run(repo, spec)

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    (proving,) = proof["fail_to_pass"]
    assert proving["id"].endswith("counts every unit") and proving["on_base"] == "failure"
    assert (proving["file"], proving["line"]) == ("src/quantity.test.ts", 5)
    assert proof["pass_to_pass"] == 1
