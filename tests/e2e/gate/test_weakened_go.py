"""A weakened Go test (`if got != 5 && false`) is reported, with real gotestsum: the base
version of the edited `_test.go` file runs against the change's code, narrowed by `-run`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from eco_projects import GO_BUG, GO_FILE, GO_FIX, GOTESTSUM, STORE_TEST_GO, make_go_repo, write_spec

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (shutil.which("go") and shutil.which("gotestsum")), reason="needs go and gotestsum"
    ),
]
ADD_OLD = "\tit.Count += n\n"
ADD_BROKEN = "\tit.Count = n\n"
CHECK_OLD = "got != 5 {"


@pytest.fixture
def go_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    shared = tmp_path_factory.getbasetemp().parent / "ecosystems"
    monkeypatch.setenv("GOCACHE", str(shared / "go-build"))
    monkeypatch.setenv("GOPATH", str(shared / "gopath"))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")


def edit(path: str, old: str, new: str) -> Reply:
    return Reply(tool_calls=[call("edit_file", path=path, old_text=old, new_text=new)])


def test_go_a_weakened_test_is_reported_and_the_fix_not_proven(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    repo = make_go_repo(tmp_path)
    assert CHECK_OLD in STORE_TEST_GO
    model_env.add(
        edit(GO_FILE, GO_BUG, GO_FIX),
        edit(GO_FILE, ADD_OLD, ADD_BROKEN),
        edit("store_test.go", CHECK_OLD, "got != 5 && false {"),
        Reply("done"),
    )
    spec = write_spec(
        repo,
        task="Remove never below zero.",
        validation={"test": [GOTESTSUM], "junit": ["junit.xml"]},
    )
    out = repo.tmp / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    assert result.exit_code == 0, result.output  # preferred (the default): reported, not refused
    proof = report["proof"]
    assert proof["status"] == "unproven", proof
    assert [t["id"] for t in proof["weakened"]] == ["example.com/inventory::TestAdd"]
    assert proof["weakened"][0]["file"] == "store_test.go"
    # narrowed to the edited file's tests by a -run pattern
    log = next((out / "proof" / "logs").glob("original-*.log")).read_text()
    assert "TestAdd" in log
