"""Existing tests are kept, in every ecosystem on its real runner: a change that skips or
deletes the failing test (a skip decorator, a deleted method, node's `{skip}`, `t.skip()` and
`.todo`, vitest's `describe.skip` and a removed test file (and `describe.skip` where vitest
writes no JUnit: its summary's counts), jest's `describe.skip`, Go's
`t.Skip` and a deleted test function, Rust's `#[ignore]` and an inline `mod tests` taken out of
`src/lib.rs`) is not a success, and the report lists each test; the real fix passes; with
`validation.protect_tests: false` the skip is a success."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from eco_projects import (
    GO_BUG,
    GO_FILE,
    GO_FIX,
    GOTESTSUM,
    JEST_JUNIT,
    go_settings,
    make_go_repo,
    make_ts_repo,
    npm_packages,
)
from gate_repos import run_cli
from kept_projects import (
    CARGO,
    NODE,
    UNITTEST,
    VITEST_NO_JUNIT,
    VITEST_PROJECT,
    Edit,
    Project,
    turn,
    vitest_packages,
)
from sample_repo import NO_PROOF, SampleRepo

from codegen_ci.testing.scripted_model import ScriptedModelServer

needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")
needs_go = pytest.mark.skipif(
    not (shutil.which("go") and shutil.which("gotestsum")), reason="needs go and gotestsum"
)


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The parent of the base temp dir is shared by all xdist workers of the session.
    return tmp_path_factory.getbasetemp().parent / "ecosystems"


@pytest.fixture
def go_env(monkeypatch: pytest.MonkeyPatch, shared: Path) -> None:
    go_settings(monkeypatch, shared)  # the session's warm build cache


@pytest.fixture(autouse=True)
def rust_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """rustup's toolchains where the machine has them (tests get a temporary HOME)."""
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    for name, folder in (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")):
        if name not in os.environ and (real_home / folder).is_dir():
            monkeypatch.setenv(name, str(real_home / folder))


def attempt(
    repo: SampleRepo, model: ScriptedModelServer, spec: dict[str, object], edits: list[Edit]
) -> tuple[int, str, dict[str, Any]]:
    model.add(*turn(edits))
    path = repo.tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    code, output, _, report = run_cli(repo, path)
    return code, output, report


def assert_refused(code: int, output: str, report: dict[str, Any], removed: list[Any]) -> None:
    assert code == 1, output
    assert (report["status"], report["reason"]) == ("failed", "max_iterations")
    assert same_ids(report["removed_tests"]) == same_ids(removed)
    in_round = [f for f in report["rounds"][-1]["failures"] if f["kind"] == "removed"]
    assert same_ids(in_round) == [dotted(r["id"]) for r in removed]


def dotted(test_id: str) -> str:
    """`module.Class::name` and `module.Class.name` alike: unittest's own lines use dots, its
    JUnit (through pytest) `::`."""
    return test_id.replace("::", ".")


def same_ids(entries: list[Any]) -> list[Any]:
    return [
        (dotted(e["id"]), e.get("how"), e.get("count")) if "how" in e else dotted(e["id"])
        for e in entries
    ]


def needs(project: Project) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not shutil.which(project.tool), reason=f"needs {project.tool}")


def modules_for(project: Project, shared: Path) -> Path | None:
    return vitest_packages(shared) if project in (VITEST_PROJECT, VITEST_NO_JUNIT) else None


PROJECTS = [UNITTEST, NODE, VITEST_PROJECT, VITEST_NO_JUNIT, CARGO]
CHEATS = [
    pytest.param(p, label, id=f"{p.name}-{label}", marks=needs(p))
    for p in PROJECTS
    for label in p.cheats
]


@pytest.mark.parametrize(("project", "label"), CHEATS)
def test_a_skipped_or_deleted_test_is_not_success(
    tmp_path: Path, model_env: ScriptedModelServer, shared: Path, project: Project, label: str
) -> None:
    repo = project.make(tmp_path, modules_for(project, shared))
    edits, removed = project.cheats[label]

    code, output, report = attempt(repo, model_env, project.spec(), edits)

    assert_refused(code, output, report, removed)


@pytest.mark.parametrize("project", [pytest.param(p, id=p.name, marks=needs(p)) for p in PROJECTS])
def test_the_real_fix_passes(
    tmp_path: Path, model_env: ScriptedModelServer, shared: Path, project: Project
) -> None:
    repo = project.make(tmp_path, modules_for(project, shared))

    code, output, report = attempt(repo, model_env, project.spec(), [project.fix])

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests"] == []


@needs(CARGO)
def test_ignore_allowed_explicitly_is_success(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = CARGO.make(tmp_path)
    edits, removed = CARGO.cheats["#[ignore]"]
    spec = CARGO.spec(protect_tests=False)

    code, output, report = attempt(repo, model_env, spec, edits)

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests_allowed"] is True
    assert report["removed_tests"] == removed


# --- jest and Go: the projects of eco_projects.py --------------------------------------------


@needs_node
def test_jest_describe_skip_is_not_success(
    tmp_path: Path, model_env: ScriptedModelServer, shared: Path
) -> None:
    repo = make_ts_repo(tmp_path, npm_packages(shared))
    spec = UNITTEST.spec(
        validation={
            "test": [JEST_JUNIT.replace("jest", "npx jest", 1)],
            "junit": ["junit.xml"],
            "proof": NO_PROOF,
        }
    )
    edit: Edit = ("src/price.test.ts", 'describe("total"', 'describe.skip("total"')

    code, output, report = attempt(repo, model_env, spec, [edit])

    assert code == 1, output
    assert [
        (r["id"].endswith(("by quantity", "the discount")), r["how"])
        for r in report["removed_tests"]
    ] == [
        (True, "skipped"),
        (True, "skipped"),
    ]


# as Project.spec's: no proof run, no flaky re-runs (a gotestsum run each)
GO_VALIDATION = {"test": [GOTESTSUM], "junit": ["junit.xml"], "proof": NO_PROOF}
GO_SKIP: Edit = (
    "store_test.go",
    "func TestRemoveNeverBelowZero(t *testing.T) {\n",
    'func TestRemoveNeverBelowZero(t *testing.T) {\n\tt.Skip("later")\n',
)
GO_DELETE: Edit = (
    "store_test.go",
    "func TestRemoveNeverBelowZero",
    "func removeNeverBelowZero",
)


@needs_go
@pytest.mark.parametrize(
    ("edit", "how"), [(GO_SKIP, "skipped"), (GO_DELETE, "removed")], ids=["t.Skip", "deleted"]
)
def test_go_skip_or_deleted_test_is_not_success(
    tmp_path: Path, model_env: ScriptedModelServer, go_env: None, edit: Edit, how: str
) -> None:
    repo = make_go_repo(tmp_path)
    spec = UNITTEST.spec(validation=GO_VALIDATION)

    code, output, report = attempt(repo, model_env, spec, [edit])

    assert code == 1, output
    assert report["removed_tests"] == [
        {"id": "example.com/inventory::TestRemoveNeverBelowZero", "how": how, "count": 1}
    ]


@needs_go
def test_go_fix_that_adds_a_test_passes(
    tmp_path: Path, model_env: ScriptedModelServer, go_env: None
) -> None:
    repo = make_go_repo(tmp_path)
    spec = UNITTEST.spec(validation=GO_VALIDATION)
    added: Edit = (
        "store_test.go",
        "func TestAdd(",
        'func TestCountMissing(t *testing.T) {\n\tif NewStore().Count("x") != 0 {\n'
        '\t\tt.Fatal("want 0")\n\t}\n}\n\nfunc TestAdd(',
    )

    code, output, report = attempt(repo, model_env, spec, [(GO_FILE, GO_BUG, GO_FIX), added])

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests"] == []
    assert report["rounds"][-1]["tests"]["total"] == 4
