"""An existing test the change weakened (`assert x == y or True`) is never proof of success:
the base commit's version of each edited test file runs against the change's code, with real
pytest, through the CLI and the scripted model (gate/original_tests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_repos import reflections, run_cli
from sample_repo import FIX, TEST_VERSION_PY, VERSION_FILE, SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = pytest.mark.e2e

TEST_FILE = "tests/test_version.py"
# The base's own suite passes: the bug (bump_minor keeps the patch) has no test yet.
PASSING_SUITE = TEST_VERSION_PY.split("\n\ndef test_bump_minor_resets_patch")[0] + "\n"
MAJOR_OLD = "return Version(self.major + 1, 0, 0)"
MAJOR_BROKEN = "return Version(self.major + 2, 0, 0)"
ASSERT_OLD = '== "4.0.0"'
# The test of the bug, which fails on the base commit: the fix is "proven" by it.
BUG_TEST = """

def test_bump_minor_resets_patch():
    assert str(Version.parse("3.4.5").bump_minor()) == "3.5.0"
"""
WEAKENED_SUITE = PASSING_SUITE.replace(ASSERT_OLD, ASSERT_OLD + " or True") + BUG_TEST
HONEST_SUITE = PASSING_SUITE + BUG_TEST
WEAKENED_ID = "tests.test_version::test_bump_major"


def weakening_turn() -> list[Reply]:
    """Fixes the bug and adds its test, but breaks bump_major and makes its test always pass."""
    return [
        Reply(tool_calls=[FIX]),
        Reply(
            tool_calls=[
                call("edit_file", path=VERSION_FILE, old_text=MAJOR_OLD, new_text=MAJOR_BROKEN)
            ]
        ),
        Reply(tool_calls=[call("write_file", path=TEST_FILE, content=WEAKENED_SUITE)]),
        Reply("Fixed bump_minor and added a test."),
    ]


# None of these is about flaky tests (test_proof_python.py's are): no re-run of a test that
# fails on the base (the proof's candidates, the weakened originals), one pytest run fewer each.
NO_RERUNS = {"reruns": 0}


def spec(repo: SampleRepo, policy: str, max_iterations: int = 3) -> Path:
    return repo.write_spec(
        validation={
            "test": ["python -m pytest -q -p no:cacheprovider tests"],
            "proof": {"tests": policy, **NO_RERUNS},
        },
        limits={"max_iterations": max_iterations},
    )


@pytest.fixture
def base(sample_repo: SampleRepo) -> SampleRepo:
    sample_repo.commit({TEST_FILE: PASSING_SUITE}, "tests that pass on the base")
    return sample_repo


def test_a_weakened_existing_test_is_reported_and_not_proven(
    base: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*weakening_turn())

    code, output, out, report = run_cli(base, spec(base, "preferred"))

    assert code == 0, output  # preferred: reported, not refused (a task may change behaviour)
    proof = report["proof"]
    assert proof["status"] == "unproven", proof
    assert [t["id"] for t in proof["weakened"]] == [WEAKENED_ID]
    weakened = proof["weakened"][0]
    assert weakened["file"] == TEST_FILE and weakened["line"] and weakened["outcome"] == "failure"
    assert "as they were on the base commit fail with this change" in proof["reason"]
    # the new test still fails on the base commit: it is named, but proves nothing alone
    assert [t["id"] for t in proof["fail_to_pass"]] == [
        "tests.test_version::test_bump_minor_resets_patch"
    ]
    assert "proof: unproven (" in output and WEAKENED_ID in output  # the terminal says it
    # the edited file ran in its base version (publish texts: tests/publish/)
    logs = sorted((out / "proof" / "logs").glob("original-*.log"))
    assert logs, list((out / "proof" / "logs").iterdir())


def test_a_weakened_test_under_required_proof_is_not_success(
    base: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """One round, the last: the weakened test makes it a failure of its own. (What an earlier
    round is told instead is read in the restored-then-proven test: its round 1 is this.)"""
    model_env.add(*weakening_turn())

    code, output, _, report = run_cli(base, spec(base, "required", max_iterations=1))

    assert code == 1, output
    assert (report["status"], report["reason"]) == ("failed", "unproven")
    assert [t["id"] for t in report["proof"]["weakened"]] == [WEAKENED_ID]


def test_required_proof_a_weakened_test_restored_then_proven(
    base: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Told which original test fails, the model restores it and undoes the breakage. Round
    2 is also the control: a new test and a right fix (the change's whole diff: the fix, the
    bug's test added to the edited file) are proven, nothing reported."""
    model_env.add(
        *weakening_turn(),
        Reply(
            tool_calls=[
                call("edit_file", path=VERSION_FILE, old_text=MAJOR_BROKEN, new_text=MAJOR_OLD)
            ]
        ),
        Reply(tool_calls=[call("write_file", path=TEST_FILE, content=HONEST_SUITE)]),
        Reply("Restored the test."),
    )

    code, output, out, report = run_cli(base, spec(base, "required"))

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 2)
    assert report["proof"]["status"] == "proven" and report["proof"]["weakened"] == []
    # the control: in round 2 too the edited file's base version ran against the change's
    # code (one run a round: round 1's failed), and passed
    originals = sorted((out / "proof" / "logs").glob("original-*.log"))
    assert len(originals) == 2 and "2 passed" in originals[-1].read_text()
    # round 1 (the weakened test under required proof): asked again, and what it was told
    first = "\n".join(m.get("content") or "" for m in model_env.tool_requests[0]["messages"])
    assert "Existing tests you edit are also run as they were on the base commit" in first
    asked = reflections(model_env)
    assert len(asked) == 1
    assert "their original versions fail with your change" in asked[0]
    assert WEAKENED_ID in asked[0] and f"{TEST_FILE}:" in asked[0]


def test_a_test_file_moved_and_weakened_is_still_reported(
    base: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Moved (`mv`, no rename git records) and edited in the same change: the base version
    runs at the new path, against the change's code, and its test still fails there. (pytest's
    ids name the module, so a moved file's tests are new ids: kept-tests refuses the move
    unless `protect_tests: false`; Go's and jest's ids keep a moved file's tests.)"""
    moved = "tests/test_versions.py"
    *breaking, _, done = weakening_turn()
    model_env.add(
        *breaking,
        Reply(tool_calls=[call("run_command", command=f"mv {TEST_FILE} {moved}")]),
        Reply(tool_calls=[call("write_file", path=moved, content=WEAKENED_SUITE)]),
        done,
    )

    moving = base.write_spec(
        validation={
            "test": ["python -m pytest -q -p no:cacheprovider tests"],
            "proof": {"tests": "preferred", **NO_RERUNS},
            "protect_tests": False,
        },
    )

    code, output, out, report = run_cli(base, moving)

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "unproven", proof
    assert [(t["id"], t["file"]) for t in proof["weakened"]] == [
        ("tests.test_versions::test_bump_major", moved)
    ]
    log = next((out / "proof" / "logs").glob("original-*.log")).read_text()
    assert moved in log or "test_versions" in log, log
