"""Go through the gate: gotestsum's JUnit and `go vet`, as real Go 1.19 and gotestsum write
them (committed in tests/fixtures/generated/go, and regenerated live here)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from eco_projects import warm_go_cache
from generated_fixtures import GENERATED, GO_TEST, committed_report, copy_project, live_gotestsum
from sample_repo import sh

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

pytestmark = pytest.mark.skipif(
    shutil.which("go") is None or shutil.which("gotestsum") is None,
    reason="needs Go and gotestsum (installed by .ci/run)",
)


@pytest.fixture(scope="session")
def go_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # eco_projects.go_env's, warm: the parent of the base temp dir is shared by all workers
    return warm_go_cache(tmp_path_factory.getbasetemp().parent / "ecosystems")


@pytest.fixture(autouse=True)
def shared_go_cache(go_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One build cache for the session's Go tests (each test has its own HOME), warm: the
    packages are compiled once, not once per worker that runs this module."""
    monkeypatch.setenv("GOCACHE", str(go_cache))


PANIC = "panic: runtime error: invalid memory address or nil pointer dereference"


def junit_json(report: Path, root: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["junit", "--json", "--root", str(root), str(report)])
    assert result.exit_code == 1, result.output
    return dict(json.loads(result.stdout))


def check_go_report(summary: dict[str, Any]) -> None:
    """What both the committed and the live gotestsum report must read as."""
    failures = {f["id"]: f for f in summary["failures"]}
    # The parent TestUpper failed only because TestUpper/word did: not a second failure.
    assert sorted(failures) == [
        "example.com/demo/calc::TestDoubleNil",
        "example.com/demo/internal/store::TestUpper/word",
    ]
    assert (summary["total"], summary["failed"]) == (5, 2)
    panic = failures["example.com/demo/calc::TestDoubleNil"]
    # The innermost frame in the repository, not GOROOT's testing.go, and repo-relative.
    assert (panic["file"], panic["line"]) == ("calc/calc.go", 6)
    assert panic["message"].startswith(PANIC)
    assert "2 of 4 tests in example.com/demo/calc did not run" in panic["message"]
    assert "TestAfterPanic1, TestAfterPanic2" in panic["message"]
    sub = failures["example.com/demo/internal/store::TestUpper/word"]
    # The log names `store_test.go` only; the package path says which directory.
    assert (sub["file"], sub["line"]) == ("internal/store/store_test.go", 13)
    assert sub["message"] == 'Upper("go") = "go", want "GO"'


def test_committed_gotestsum_report(tmp_path: Path) -> None:
    module = copy_project("go", tmp_path / "module")
    report = committed_report("go", "gotestsum.xml", module, tmp_path)
    check_go_report(junit_json(report, module))


def test_live_gotestsum_report_reads_the_same(tmp_path: Path) -> None:
    module = copy_project("go", tmp_path / "module")
    check_go_report(junit_json(live_gotestsum(module), module))


def git_repo(tmp_path: Path) -> Path:
    repo = copy_project("go", tmp_path / "repo")
    (repo / ".gitignore").write_text("reports/\n")
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "initial"], repo)
    return repo


def run(repo: Path, validation: dict[str, Any], *args: str) -> tuple[int, str, dict[str, Any]]:
    spec = repo.parent / f"spec-{uuid.uuid4().hex[:6]}.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "task": "Fix the failing tests.",
                "validation": {"timeout": 300, **validation},
            }
        )
    )
    out = repo.parent / f"out-{uuid.uuid4().hex[:6]}"
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo), "--output-dir", str(out), *args]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output, json.loads((out / "report.json").read_text())


def test_gate_counts_go_build_failures_as_errors_at_the_compiler_location(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path)
    test = {"test": [GO_TEST], "junit": ["reports/*.xml"]}
    code, output, report = run(repo, test, "--dry-run")

    assert code == 0, output
    (first,) = report["rounds"]
    # gotestsum's JUnit has no case for a package that did not compile (root errors="2").
    assert first["tests"] == {"total": 7, "passed": 3, "failed": 2, "errors": 2, "skipped": 0}
    errors = {f["id"]: f for f in first["failures"] if f["kind"] == "error"}
    assert errors["example.com/demo/broken::[build failed]"]["message"] == (
        "cannot use Half(4) (value of type int) as type string in variable declaration"
    )
    assert (
        errors["example.com/demo/broken::[build failed]"]["file"],
        errors["example.com/demo/broken::[build failed]"]["line"],
    ) == ("broken/broken_test.go", 6)
    assert errors["example.com/demo/vetfind::[build failed]"]["file"] == "vetfind/v.go"
    panic = next(f for f in first["failures"] if f["id"].endswith("TestDoubleNil"))
    assert (panic["file"], panic["line"]) == ("calc/calc.go", 6)


def test_go_vet_compile_errors_and_findings_are_lint_errors(tmp_path: Path) -> None:
    repo = git_repo(tmp_path)
    # The committed output goes into the repository: the sandbox shows a command nothing of
    # the host's /tmp (SECURITY.md), where a checkout running these tests may live.
    shutil.copyfile(GENERATED / "go" / "go-vet.out", repo / "go-vet.out")
    sh(["git", "add", "go-vet.out"], repo)
    sh(["git", "commit", "-q", "-m", "go vet's committed output"], repo)
    for lint in (["go vet ./..."], ["cat go-vet.out; exit 1"]):
        code, output, report = run(repo, {"lint": lint, "test": ["true"]}, "--dry-run")

        assert code == 0, output
        lint_errors = [f["id"] for f in report["rounds"][0]["failures"] if f["kind"] == "lint"]
        assert sorted(lint_errors) == [
            # `vet: broken/broken_test.go:6:17: cannot use ...`, a type-check error
            "broken/broken_test.go:6: cannot use Half(4) (value of type int) as string value "
            "in variable declaration",
            "vetfind/v.go:6: fmt.Sprintf format %s has arg n of wrong type int",
        ], lint


def test_the_model_is_shown_paths_it_can_read(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = git_repo(tmp_path)
    model_env.add(Reply("I looked and changed nothing."), Reply("Still nothing."))
    # no flaky re-run of each failing round's tests (a gotestsum run each): not about them
    test = {"test": [GO_TEST], "junit": ["reports/*.xml"], "proof": {"reruns": 0}}

    run(repo, test, "--max-iterations", "2")

    reflection = model_env.tool_requests[1]["messages"][-1]["content"]
    assert "(calc/calc.go:6)" in reflection
    assert "\tcalc/calc_test.go:13" in reflection  # the goroutine frames too
    assert "(internal/store/store_test.go:13)" in reflection
    assert "<repo>" not in reflection and str(tmp_path) not in reflection
