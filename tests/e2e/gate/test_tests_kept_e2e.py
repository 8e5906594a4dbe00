"""Existing tests are kept (`validation.protect_tests`, default `keep`), end to end on real
runners: a change that skips or deletes the failing test instead of fixing the code is not a
success and the report lists the test; a real fix passes; a change that adds a test passes; a
task that allows it (`protect_tests: false`) succeeds and the PR body says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gate_repos import reflections, run_cli
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, SampleRepo
from sample_repo import PYTEST as PYTEST_CMD

from codegen_ci.publish.report_text import pr_body
from codegen_ci.report import Report
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

BUG = "test_bump_minor_resets_patch"
BUG_ID = f"tests.test_version::{BUG}"
TEST_FILE = "tests/test_version.py"
VERSION = "src/semver/version.py"


def edit(path: str, old: str, new: str) -> Reply:
    return Reply(tool_calls=[call("edit_file", path=path, old_text=old, new_text=new)])


def give_up() -> list[Reply]:
    return [Reply("I cannot do better.")]


# --- pytest -----------------------------------------------------------------------------------


def test_pytest_skip_marker_is_refused_and_listed_beside_a_typecheck(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two cases in one run. A skip marker on the failing test is refused and listed. And a
    typecheck beside the runner leaves that check on (commander.js: `npm test` is `node --test
    && npm run check:type:ts`, two test commands whose second, tsd or tsc, writes no JUnit; the
    base run was taken as unable to tell, "it wrote no JUnit report", and the check was off:
    `describe.skip` on the failing suite passed as success). Here the typecheck is a `tsc` on
    PATH that writes nothing."""
    tsc = sample_repo.path / "bin" / "tsc"
    sample_repo.commit({"bin/tsc": "#!/bin/sh\nexit 0\n"}, "a typecheck")
    tsc.chmod(0o755)
    sample_repo.git("add", "-A")
    sample_repo.git("commit", "-q", "-m", "executable")
    model_env.add(
        edit(TEST_FILE, f"def {BUG}", f"import pytest\n\n\n@pytest.mark.skip\ndef {BUG}"),
        Reply("Skipped the failing test."),
        *give_up(),
    )
    validation = {
        "test": [f"{PYTEST_CMD} --junitxml=reports/junit.xml", "PATH=bin:$PATH tsc --noEmit"],
        "junit": ["reports/junit.xml"],
        "timeout": 120,
    }
    spec = sample_repo.write_spec(validation=validation, limits={"max_iterations": 2})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert (report["status"], report["reason"]) == ("failed", "max_iterations")
    assert report["removed_tests"] == [{"id": BUG_ID, "how": "skipped", "count": 1}]
    first = report["rounds"][0]
    assert not first["passed"] and first["tests"]["skipped"] == 1
    assert {"id": BUG_ID, "kind": "removed"}.items() <= first["failures"][0].items()
    tsc = [c for c in first["commands"] if c["command"].endswith("tsc --noEmit")]
    assert [c["exit_code"] for c in tsc] == [0]  # the typecheck ran, and wrote no JUnit
    [message] = reflections(model_env)
    assert "Existing tests removed, skipped or weakened by the change (1)" in message
    assert BUG_ID in message and "Restore them" in message
    # the rule came first, before any failed round
    task = next(m for m in model_env.tool_requests[0]["messages"] if m["role"] == "user")
    assert "Existing tests are kept" in task["content"]


def test_pytest_deleted_test_is_refused_then_restored_and_fixed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    original = sample_repo.path.joinpath(TEST_FILE).read_text()
    body = original[original.index(f"def {BUG}") :]
    model_env.add(
        edit(TEST_FILE, body, ""),
        Reply("Removed the failing test."),
        Reply(tool_calls=[call("write_file", path=TEST_FILE, content=original)]),
        edit(VERSION, FIXED_LINE_OLD, FIXED_LINE_NEW),
        Reply("Restored the test and fixed the code."),
    )

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 2)
    assert report["rounds"][0]["failures"][0]["kind"] == "removed"
    assert report["removed_tests"] == []  # as of the passing round: every test back
    assert "Existing tests removed, skipped or weakened" in reflections(model_env)[0]


def test_pytest_removal_allowed_explicitly_is_success_and_the_pr_says_so(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(
        edit(TEST_FILE, f"def {BUG}", f"import pytest\n\n\n@pytest.mark.skip\ndef {BUG}"),
        Reply("Skipped the obsolete test, as asked."),
    )
    spec = sample_repo.write_spec(validation={"test": [PYTEST_CMD], "protect_tests": False})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests_allowed"] is True
    assert report["removed_tests"] == [{"id": BUG_ID, "how": "skipped", "count": 1}]
    assert f"tests removed or skipped (validation.protect_tests: false): {BUG_ID}" in output
    body = pr_body(Report.model_validate(report), task="t", issue_number=None, run_url=None)
    assert "validation.protect_tests: false" in body and BUG_ID in body


SKIPPING_TESTS = """\
import sys

import pytest


@pytest.mark.skip(reason="never ran")
def test_marked():
    assert False


def test_skips_itself():
    if sys.version_info > (3,):
        pytest.skip("skips at run time, on the base commit too")
"""


RunResult = tuple[int, str, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, RunResult]:
    """Runs several tests only read (each asserting its own case), made once per module (per
    xdist worker) by the first test that needs one, in that test's isolated environment."""
    return {}


@pytest.fixture
def fix_and_test_added_beside_skipping_tests(
    shared_runs: dict[str, RunResult], sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> RunResult:
    """Two cases in one run: tests that skip on the base commit too (a marker, a run-time
    skip) committed there; the change fixes the code and adds a test. run_cli's exit code,
    output, output directory and report (read only)."""
    if "fix_and_test_added" not in shared_runs:
        sample_repo.commit({"tests/test_skipping.py": SKIPPING_TESTS}, "tests that skip")
        added = (
            "\n\ndef test_bump_minor_of_zero_patch():\n"
            "    assert str(Version(1, 2, 0).bump_minor()) == '1.3.0'\n"
        )
        original = sample_repo.path.joinpath(TEST_FILE).read_text()
        model_env.add(
            edit(VERSION, FIXED_LINE_OLD, FIXED_LINE_NEW),
            Reply(tool_calls=[call("write_file", path=TEST_FILE, content=original + added)]),
            Reply("Fixed, with a new test."),
        )
        shared_runs["fix_and_test_added"] = run_cli(sample_repo, sample_repo.write_spec())
    return shared_runs["fix_and_test_added"]


def test_pytest_fix_that_adds_a_test_passes(
    fix_and_test_added_beside_skipping_tests: RunResult,
) -> None:
    code, output, _, report = fix_and_test_added_beside_skipping_tests

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests"] == []
    # the sample's 3 tests, the one added, and test_skipping.py's 2 (the other case here)
    assert report["rounds"][-1]["tests"]["total"] == 4 + 2


def test_tests_the_base_commit_skips_too_are_not_counted_against_the_change(
    fix_and_test_added_beside_skipping_tests: RunResult,
) -> None:
    code, output, out, report = fix_and_test_added_beside_skipping_tests

    assert code == 0, output
    assert report["status"] == "success" and report["removed_tests"] == []
    assert report["rounds"][-1]["tests"]["skipped"] == 2
    # the marker's skip was known from the pre-flight's collection; the run-time one ran on
    # the base commit, alone, once
    [log] = (out / "baseline" / "logs").glob("*.log")
    assert "1 skipped" in log.read_text() and "deselected" in log.read_text()


def test_under_xdist_a_deleted_test_is_known_from_the_pre_flight_alone(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")  # pytest-xdist, loaded as users have it
    original = sample_repo.path.joinpath(TEST_FILE).read_text()
    model_env.add(
        edit(TEST_FILE, original[original.index(f"def {BUG}") :], ""), Reply("Removed it.")
    )
    validation = {"test": [PYTEST_CMD + " -n 2"]}
    spec = sample_repo.write_spec(validation=validation, limits={"max_iterations": 1})

    code, output, out, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["removed_tests"] == [{"id": BUG_ID, "how": "removed", "count": 1}]
    assert not (out / "baseline").exists()  # the pre-flight's collection listed it
