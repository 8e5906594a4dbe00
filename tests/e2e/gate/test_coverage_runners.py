"""Changed lines run by the tests beyond `python -m pytest`: a unittest suite and a bare
`pytest` (coverage.py, runners/_python.py) and Go (`gotestsum -- -coverprofile`,
runners/go.py), through the CLI with the scripted model and the real runners; and, in the run
of Go's changed lines, the proof by the repository's own failing Go test.

No flaky re-runs (`NO_RERUNS`): a candidate for proof is re-run on the base, a test run more,
and no test here is about flakiness (test_proof_node.py's flaky test is)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from eco_projects import (
    CALC_OPS_FIXED,
    GO_BUG,
    GO_FILE,
    GO_FIX,
    GO_HAS,
    GO_HAS_TEST,
    GOTESTSUM,
    calc_repo,
    make_go_repo,
    needs_go,
    write_spec,
)
from gate_repos import reflections, run_cli
from sample_repo import SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# A test file that does not import calc: run by the coverage run too (only coverage.py's C
# tracer, where slipcover cannot load, leaves it out).
TEST_OTHER = """\
import unittest


class OtherTest(unittest.TestCase):
    def test_other(self):
        self.assertTrue(True)
"""
UNCOVERED_PY = {
    "measured": True,
    "covered": 2,  # `return a + b`, and `def sub` (run at import)
    "total": 4,
    "uncovered": ["calc/ops.py:6-7"],
    "reason": "",
}


def slipcover_said(log: str) -> bool:
    """The coverage run recorded with slipcover on CPython 3.10/3.11 (gate/codegen_cov_run.py),
    with coverage.py elsewhere."""
    said = "codegen-ci coverage: slipcover" in log
    return said if (3, 10) <= sys.version_info[:2] < (3, 12) else not said


def coverage_repo(tmp: Path) -> SampleRepo:
    return calc_repo(tmp, {"tests/test_other.py": TEST_OTHER})


def fix_and_add_sub() -> list[Reply]:
    write = call("write_file", path="calc/ops.py", content=CALC_OPS_FIXED)
    return [Reply(tool_calls=[write]), Reply("Fixed add, added sub.")]


NO_RERUNS = {"reruns": 0}  # the default policy (`tests: preferred`), no flaky re-runs


def python_spec(repo: SampleRepo, command: str) -> Path:
    validation = {"test": [command], "timeout": 120, "proof": NO_RERUNS}
    return write_spec(repo, proof=True, task="add must add.", validation=validation)


def test_a_unittest_suites_changed_lines_name_the_line_no_test_runs(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    repo = coverage_repo(tmp_path)
    model_env.add(*fix_and_add_sub())
    command = f"{sys.executable} -m unittest discover -s tests -t ."

    code, output, out, report = run_cli(repo, python_spec(repo, command))

    assert code == 0, output
    assert report["proof"]["status"] == "proven", report["proof"]
    assert report["proof"]["changed_lines"] == UNCOVERED_PY
    assert report["rounds"][-1]["tests"]["total"] == 2  # the gate's own run, with its JUnit
    log = (out / "coverage" / "logs" / "coverage.log").read_text()
    # every test ran: no tracer to spare them from (slipcover before 3.12, sys.monitoring after)
    assert "Ran 2 tests" in log and slipcover_said(log), log
    assert report["files_changed"] == ["calc/ops.py"]


def test_a_bare_pytest_runs_under_its_scripts_interpreter(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "pytest").is_file()
    monkeypatch.setenv("PATH", f"{venv_bin}:{Path('/usr/bin')}:{Path('/bin')}")
    repo = coverage_repo(tmp_path)
    model_env.add(*fix_and_add_sub())

    code, output, out, report = run_cli(repo, python_spec(repo, "pytest -p no:cacheprovider"))

    assert code == 0, output
    assert report["proof"]["changed_lines"] == UNCOVERED_PY
    log = (out / "coverage" / "logs" / "coverage.log").read_text()
    assert "2 passed" in log and slipcover_said(log), log


def test_pytest_covs_own_measurement_leaves_the_changed_lines_to_ours(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    """A repository that measures coverage itself (`--cov`, as pytest-cov users write it in the
    command or in addopts): its coverage.py in the same process took the data from ours where
    coverage.py records ("No data was collected"; the report said "is coverage.py installed?"),
    and where slipcover records, its tracer made the run cost 2x (the tests not importing the
    change were left out, as under any tracer). Off in the coverage run: every test runs."""
    repo = coverage_repo(tmp_path)
    model_env.add(*fix_and_add_sub())
    command = f"{sys.executable} -m pytest -p pytest_cov --cov=calc -p no:cacheprovider"

    code, output, out, report = run_cli(repo, python_spec(repo, command))

    assert code == 0, output
    assert report["proof"]["changed_lines"] == UNCOVERED_PY, report["proof"]
    log = (out / "coverage" / "logs" / "coverage.log").read_text()
    assert "2 passed" in log and slipcover_said(log), log


# --- Go ---------------------------------------------------------------------------------------


def go_fix_and_has(repo: SampleRepo) -> tuple[Reply, str]:
    """The fix (run by the repository's test) and Store.Has (run by none); Has's lines."""
    store = (repo.path / GO_FILE).read_text().replace(GO_BUG, GO_FIX) + GO_HAS
    first = len(store.splitlines()) - 2  # `func (s *Store) Has`, its `return` and `}`
    write = call("write_file", path=GO_FILE, content=store)
    return Reply(tool_calls=[write]), f"{GO_FILE}:{first}-{first + 2}"


def go_spec(repo: SampleRepo, **validation: object) -> Path:
    return write_spec(
        repo,
        proof=True,
        task="Remove never below zero; add Store.Has.",
        validation={"test": [GOTESTSUM], "junit": ["junit.xml"], "proof": NO_RERUNS, **validation},
    )


@needs_go
def test_go_changed_lines_come_from_the_cover_profile_the_failing_test_proves_the_fix(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    """Two cases of one run: the changed lines from Go's cover profile, and the proof by the
    repository's own failing test (Store.Has, run by no test, changes neither)."""
    repo = make_go_repo(tmp_path)
    edit, has_lines = go_fix_and_has(repo)
    model_env.add(edit, Reply("done"))

    code, output, out, report = run_cli(repo, go_spec(repo))

    assert code == 0, output
    # the proof: gotestsum's JUnit read in the pre-flight and the round; one round, only the
    # fix committed; the repository's failing test proves it
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
    # no test file changed: the pre-flight's run of the suite on the base commit is the proof's
    # (the base tree made only for where the proving test is defined), not run there again
    assert not (out / "proof" / "logs").exists(), list((out / "proof" / "logs").iterdir())
    assert "proving: the pre-flight's run on the base commit answers" in output, output
    # the changed lines
    assert report["proof"]["changed_lines"] == {
        "measured": True,
        "covered": 3,  # the fix's `if`, its body and `}`
        "total": 6,
        "uncovered": [has_lines],
        "reason": "",
    }
    assert "coverage: " in (out / "coverage" / "logs" / "coverage.log").read_text()
    assert report["files_changed"] == [GO_FILE]  # no profile, no junit.xml in the change


@needs_go
def test_go_a_coverage_threshold_asks_for_a_test_of_the_lines_no_test_runs(
    tmp_path: Path, go_env: None, model_env: ScriptedModelServer
) -> None:
    repo = make_go_repo(tmp_path)
    edit, has_lines = go_fix_and_has(repo)
    model_env.add(
        edit,
        Reply("done"),
        Reply(tool_calls=[call("write_file", path="has_test.go", content=GO_HAS_TEST)]),
        Reply("Tested Has."),
    )

    code, output, _, report = run_cli(repo, go_spec(repo, proof={**NO_RERUNS, "coverage": 0.8}))

    assert code == 0, output
    assert report["iterations"] == 2
    (asked,) = reflections(model_env)
    assert "changed lines run by no test" in asked and f"\n{has_lines}\n" in asked
    assert "3 of the 6 changed executable lines (50%" in asked
    lines = report["proof"]["changed_lines"]
    assert (lines["covered"], lines["total"], lines["uncovered"]) == (6, 6, [])
