"""A round that fails anyway also says which existing tests the change removed, skipped or
weakened (gate/kept_tests.py `noticed`), in-process: the deterministic model drives
`pipeline.execute()` on a temporary git repository whose own pytest suite is the gate.

The removal is told in the very reflection on the failing round (before, it was named only a
round later, once the failures were gone), from what the base runs already told: the
pre-flight's pytest collection here, no run of the base commit started for it. The verdict,
the stuck signature and the report's `removed_tests` are unchanged.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.in_process import InProcessRun, run_in_process
from tests.helpers.in_process import sample_spec as product_spec
from tests.helpers.sample_repo import NO_PROOF, PYTEST, TEST_VERSION_PY, VERSION_FILE, SampleRepo

from codegen_ci.report import Reason, Status
from codegen_ci.security.untrusted import outside_fences
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import call, step

TEST_FILE = "tests/test_version.py"
BUG = "test_bump_minor_resets_patch"
BUG_ID = f"tests.test_version::{BUG}"
BROKEN_ID = "tests.test_version::test_bump_major"
NOTICED = "Also, existing tests removed, skipped or weakened by the change"
REFUSED = "Existing tests removed, skipped or weakened by the change"
# The model breaks a test that passes on the base commit: a new failure of the change's.
BREAK_MAJOR = call(
    "edit_file",
    path=VERSION_FILE,
    old_text="return Version(self.major + 1, 0, 0)",
    new_text="return Version(self.major + 2, 0, 0)",
)
DELETE_BUG = call(
    "edit_file",
    path=TEST_FILE,
    old_text=TEST_VERSION_PY[TEST_VERSION_PY.index(f"def {BUG}") :],
    new_text="",
)
ADD_TEST = call(
    "edit_file",
    path=TEST_FILE,
    old_text="def test_bump_major():",
    new_text=(
        "def test_str():\n    assert str(Version(1, 2, 3)) == '1.2.3'\n\n\ndef test_bump_major():"
    ),
)


def spec(**limits: int) -> Spec:
    """The sample's spec, no proof run and no flaky re-run (each one more pytest process)."""
    validation = {"test": [PYTEST], "timeout": 120, "proof": NO_PROOF}
    return product_spec(validation=validation, limits={"max_iterations": 2, **limits})


def reflections(run: InProcessRun) -> list[str]:
    """The reflections the model was sent, in order (the last request holds them all)."""
    return [
        str(m["content"])
        for m in run.model.requests[-1]
        if m["role"] == "user" and str(m["content"]).startswith("Validation round ")
    ]


def base_runs(out: Path) -> list[Path]:
    """The runs on the base commit (gate/baseline.py): one log each."""
    return sorted((out / "baseline" / "logs").glob("*.log"))


def test_a_failing_round_that_deleted_the_failing_test_is_told_so_at_once(
    sample_repo: SampleRepo,
) -> None:
    """Round 1 deletes the failing test and breaks another: its reflection names both, the
    deletion in a section of its own. No base-commit run starts for it: the one base run is
    the baseline's of the broken test (new or pre-existing?), which a failing round pays
    without a removal too (the control below). And `stuck`: round 2 changes nothing, so its
    failures are round 1's; the removal round 1 also made buys no round (`stuck_rounds: 2`
    stops the run there: had the removal counted in round 1's failures, a third round
    would have run)."""
    script = [step(None, DELETE_BUG, BREAK_MAJOR), step("Done."), step("No idea.")]

    run = run_in_process(sample_repo, spec(max_iterations=3, stuck_rounds=2), script)

    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.STUCK), run.log
    assert report.iterations == 2
    [message] = reflections(run)
    assert NOTICED + " (1)" in message, message
    section = message[message.index(NOTICED) :]
    fenced = section[: section.index("Failing tests")]
    assert f"- {BUG_ID}: removed" in fenced and "Restore them" in fenced
    assert BUG_ID not in outside_fences(fenced)  # data, fenced as the failing tests' ids are
    assert "test_bump_major" in message[message.index("Failing tests") :]
    # the verdict is the failures': no `removed` failure, the report's list as before
    for rnd in report.rounds:
        assert [f.key for f in rnd.failures] == [BROKEN_ID] and rnd.removed_tests == []
    assert report.removed_tests == []
    assert [p.name for p in base_runs(run.output_dir)] == ["baseline-01.log"]
    assert "1 passed, 2 deselected" in base_runs(run.output_dir)[0].read_text()  # that test alone


def test_a_failing_round_that_removed_nothing_has_no_such_section(
    sample_repo: SampleRepo,
) -> None:
    """The control: round 1 breaks a test and adds one (a test file edited, no test removed):
    no section. Then round 2 puts a skip marker on the failing test while the broken one still
    fails: the round stops after those two (gate/validation.py's targeted re-run), and they
    alone are compared; the base run of round 1's failures said the failing test runs on the
    base commit, so the skip is the change's, named with no base run added."""
    skip_bug = call(
        "edit_file",
        path=TEST_FILE,
        old_text=f"def {BUG}",
        new_text=f"import pytest\n\n\n@pytest.mark.skip\ndef {BUG}",
    )
    script = [
        step(None, BREAK_MAJOR, ADD_TEST),
        step("Done."),
        step(None, skip_bug),
        step("Done again."),
        step("No idea."),
    ]

    run = run_in_process(sample_repo, spec(max_iterations=3), script)

    report = run.report
    assert (report.status, report.reason) == (Status.FAILED, Reason.MAX_ITERATIONS), run.log
    first, second = reflections(run)
    assert "test_bump_major" in first and "test_str" not in first
    assert NOTICED not in first and REFUSED not in first
    assert report.rounds[1].commands[0].targeted  # it stopped after the previously failing
    assert NOTICED + " (1)" in second and f"- {BUG_ID}: skipped" in second, second
    assert [f.key for f in report.rounds[1].failures] == [BROKEN_ID]
    assert not report.removed_tests
    assert [p.name for p in base_runs(run.output_dir)] == ["baseline-01.log"]
