"""Existing tests are kept, in every ecosystem on its real runner: a change that skips or
deletes the failing test (a skip decorator, a deleted method, node's `{skip}`, `t.skip()` and
`.todo`, vitest's `describe.skip` and a removed test file (and `describe.skip` where vitest
writes no JUnit: its summary's counts), jest's `describe.skip`, Go's
`t.Skip` and a deleted test function, Rust's `#[ignore]` and an inline `mod tests` taken out of
`src/lib.rs`) is not a success, and the report lists each test; the real fix passes; with
`validation.protect_tests: false` the skip is a success. Where cheats can share a run (each at a
failing test of its own), they are planted side by side and each asserted on its own."""

from __future__ import annotations

import os
import pwd
import shutil
from dataclasses import dataclass, replace
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
    STORE_TEST_GO,
    go_settings,
    make_go_repo,
    make_ts_repo,
    npm_packages,
)
from gate_repos import run_cli
from kept_projects import (
    CALC_TEST_MJS,
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


# vitest started by its own script in node_modules/.bin, not through npx: npx loads npm first
# (0.7 s of CPU a start, of vitest's 1.7) and the runner is the same; test_proof_node.py runs
# it through npx, as a workflow often writes it.
VITEST_BIN = replace(
    VITEST_PROJECT, test=VITEST_PROJECT.test.replace("npx vitest", "node_modules/.bin/vitest", 1)
)


def modules_for(project: Project, shared: Path) -> Path | None:
    return vitest_packages(shared) if project in (VITEST_BIN, VITEST_NO_JUNIT) else None


PROJECTS = [UNITTEST, NODE, VITEST_BIN, VITEST_NO_JUNIT, CARGO]

# Cheats planted side by side in one run (two runner starts for all, not for each): each at a
# failing test of its own, a copy of the one it cheats on in the project, so its skipped or
# removed tests are its own and asserted on their own. Not with "assertion removed" (weakened
# is looked at only when no test is missing) nor where a cheat takes every test of a file
# (cargo's inline `mod tests`). `Plant`: a cheat's label, and the renaming that makes its
# copy (in the edits' paths and texts, and in the removed tests' ids).
Cases = dict[str, tuple[list[Edit], list[dict[str, object]]]]


@dataclass(frozen=True)
class Plant:
    label: str
    old: str  # in the project's files, the cheat's edits and its removed tests' ids
    new: str


def planted(project: Project, plants: list[Plant], files: dict[str, str]) -> tuple[Project, Cases]:
    """`project` with `files` (the copies) and each plant's cheat, retargeted at its copy."""
    cases: Cases = {}
    for plant in plants:
        edits, removed = project.cheats[plant.label]

        def moved(text: str, plant: Plant = plant) -> str:
            return text.replace(plant.old, plant.new)

        cases[plant.label] = (
            [
                (moved(path), moved(old), None if new is None else moved(new))
                for path, old, new in edits
            ],
            [{**r, "id": moved(str(r["id"]))} for r in removed],
        )
    return replace(project, name=project.name, files={**project.files, **files}, cheats={}), cases


# node's test runner: three copies of "above", each skipped its own way
NODE_ABOVE = CALC_TEST_MJS[CALC_TEST_MJS.index('test("above"') :]
NODE_PLANTS = [
    Plant("skip option", "above", "above-skip-option"),
    Plant("t.skip()", "above", "above-t-skip"),
    Plant("todo", "above", "above-todo"),
]
NODE_TESTS = CALC_TEST_MJS[: CALC_TEST_MJS.index('test("above"')] + "\n".join(
    NODE_ABOVE.replace('"above"', f'"{p.new}"') for p in NODE_PLANTS
)
# vitest: one test file's `describe` skipped, another (a copy) removed
VITEST_PLANTS = [
    Plant("describe.skip", "src/calc.test.js", "src/calc.test.js"),
    Plant("test file removed", "src/calc.test.js", "src/gone.test.js"),
]
# unittest: a test skipped in one file, deleted from a copy of it
UNITTEST_PLANTS = [
    Plant("skip decorator", "test_calc", "test_calc"),
    Plant("test method deleted", "test_calc", "test_calc_again"),
]
PLANTED = [
    (UNITTEST, UNITTEST_PLANTS, {"test_calc_again.py": UNITTEST.files["test_calc.py"]}),
    (NODE, NODE_PLANTS, {"calc.test.mjs": NODE_TESTS}),
    (VITEST_BIN, VITEST_PLANTS, {"src/gone.test.js": VITEST_PROJECT.files["src/calc.test.js"]}),
]
CHEATS = [
    pytest.param(p, label, id=f"{p.name}-{label}", marks=needs(p))
    for p in PROJECTS
    for label in p.cheats
    if (p, label) not in [(q, x.label) for q, plants, _ in PLANTED for x in plants]
]


@pytest.mark.parametrize(("project", "label"), CHEATS)
def test_a_skipped_or_deleted_test_is_not_success(
    tmp_path: Path, model_env: ScriptedModelServer, shared: Path, project: Project, label: str
) -> None:
    repo = project.make(tmp_path, modules_for(project, shared))
    edits, removed = project.cheats[label]

    code, output, report = attempt(repo, model_env, project.spec(), edits)

    assert_refused(code, output, report, removed)


@pytest.mark.parametrize(
    ("project", "plants", "files"),
    [
        pytest.param(
            p, plants, files, id=f"{p.name}-" + "+".join(x.label for x in plants), marks=needs(p)
        )
        for p, plants, files in PLANTED
    ],
)
def test_skipped_or_deleted_tests_planted_side_by_side_are_each_not_success(
    tmp_path: Path,
    model_env: ScriptedModelServer,
    shared: Path,
    project: Project,
    plants: list[Plant],
    files: dict[str, str],
) -> None:
    """`test_a_skipped_or_deleted_test_is_not_success`'s cases of one project, in one run."""
    with_copies, cases = planted(project, plants, files)
    repo = with_copies.make(tmp_path, modules_for(project, shared))
    edits = [edit for case_edits, _ in cases.values() for edit in case_edits]

    code, output, report = attempt(repo, model_env, project.spec(), edits)

    assert code == 1, output
    assert (report["status"], report["reason"]) == ("failed", "max_iterations")
    in_round = [f for f in report["rounds"][-1]["failures"] if f["kind"] == "removed"]
    every: list[Any] = []
    for label, (_, removed) in cases.items():
        ids = {dotted(str(r["id"])) for r in removed}
        listed = [e for e in report["removed_tests"] if dotted(e["id"]) in ids]
        assert same_ids(listed) == same_ids(removed), label
        assert sorted(same_ids([f for f in in_round if dotted(f["id"]) in ids])) == sorted(ids), (
            label
        )
        every += removed
    # nothing else removed: each case's tests, and only theirs
    assert sorted(same_ids(report["removed_tests"])) == sorted(same_ids(every))


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


# planted side by side: t.Skip in store_test.go, the deletion in a copy of its failing test
GO_AGAIN_TEST = STORE_TEST_GO[: STORE_TEST_GO.index("func TestAdd")] + STORE_TEST_GO[
    STORE_TEST_GO.index("func TestRemoveNeverBelowZero") :
].replace("TestRemoveNeverBelowZero", "TestRemoveNeverBelowZeroAgain")
GO_DELETE_AGAIN: Edit = (
    "again_test.go",
    "func TestRemoveNeverBelowZeroAgain",
    "func removeNeverBelowZeroAgain",
)


@needs_go
def test_go_skip_or_deleted_test_is_not_success(
    tmp_path: Path, model_env: ScriptedModelServer, go_env: None
) -> None:
    """Two cases planted side by side in one run, each at a failing test of its own: `t.Skip`
    (skipped) and a deleted test function (removed)."""
    repo = make_go_repo(tmp_path)
    repo.commit({"again_test.go": GO_AGAIN_TEST}, "the failing test, again")
    spec = UNITTEST.spec(validation=GO_VALIDATION)

    code, output, report = attempt(repo, model_env, spec, [GO_SKIP, GO_DELETE_AGAIN])

    assert code == 1, output
    assert len(report["removed_tests"]) == 2, report["removed_tests"]
    removed = {r["id"]: r for r in report["removed_tests"]}
    name = "example.com/inventory::TestRemoveNeverBelowZero"
    assert removed.pop(name) == {"id": name, "how": "skipped", "count": 1}, "t.Skip"
    again = name + "Again"
    assert removed.pop(again) == {"id": again, "how": "removed", "count": 1}, "deleted"
    assert removed == {}  # nothing else


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
