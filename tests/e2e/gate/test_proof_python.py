"""Proof behind a success, with pytest: the tests that fail on the base commit and pass with
the change (fail to pass), through the CLI with the scripted model and a real pytest run on
the base commit's code with the change's test files applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gate_repos import reflections, run_cli
from sample_repo import (
    FIX,
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    TEST_VERSION_PY,
    VERSION_FILE,
    VERSION_PY,
    SampleRepo,
)

from codegen_ci.gate.proof import NOT_YET_MEASURED
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# The base's own suite passes: the bug has no test yet.
PASSING_SUITE = TEST_VERSION_PY.split("\n\ndef test_bump_minor_resets_patch")[0] + "\n"
NEW_TEST_FILE = "tests/test_bump_minor.py"
PROVING_TEST = """\
from semver.version import Version


def test_bump_minor_resets_patch():
    assert str(Version.parse("1.2.3").bump_minor()) == "1.3.0"
"""
# A test that passes on the base commit too: no proof of anything the task asked.
IDLE_TEST = """\
from semver.version import Version


def test_parse_again():
    assert Version.parse("1.2.3") == Version(1, 2, 3)
"""


def without_the_bugs_test(repo: SampleRepo) -> None:
    repo.commit({"tests/test_version.py": PASSING_SUITE}, "tests that pass on the base")


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[call("write_file", path=path, content=content)])


@pytest.fixture(autouse=True)
def with_proof(sample_repo: SampleRepo) -> None:
    """The product's default proof policy where a spec names none (sample_repo.py)."""
    sample_repo.proof = True


PYTEST = "python -m pytest -q -p no:cacheprovider tests"
COMPILEALL = "python -m compileall -q src"

# Only the flaky tests below are about re-runs: the others run none (`reruns: 0`), so a test
# that fails on the base commit is not run there a second time (one pytest run fewer each).
NO_RERUNS = {"reruns": 0}


def spec(repo: SampleRepo, policy: str | None = None, *, reruns: bool = False) -> Path:
    validation: dict[str, object] = {
        "test": ["python -m pytest -q -p no:cacheprovider tests"],
        "timeout": 120,
    }
    proof: dict[str, object] = {} if reruns else dict(NO_RERUNS)
    if policy:
        proof["tests"] = policy
    if proof:
        validation["proof"] = proof
    return repo.write_spec(validation=validation)


def test_the_repositorys_own_failing_test_proves_the_fix(
    fix_and_bump_patch: tuple[int, str, Path, dict[str, Any]],
) -> None:
    """The sample repository's test of the bug fails on the base: the fix, with no test of
    its own, is proven. (The change also adds `bump_patch`, which no test runs: the run
    `test_changed_lines_no_test_runs_are_named` reads too.)"""
    code, output, _, report = fix_and_bump_patch

    assert code == 0, output
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    proving = {t["id"]: t for t in proof["fail_to_pass"]}
    test_id = "tests.test_version::test_bump_minor_resets_patch"
    assert list(proving) == [test_id]
    assert proving[test_id]["file"] == "tests/test_version.py"
    assert proving[test_id]["line"] and proving[test_id]["on_base"] == "failure"
    assert proof["pass_to_pass"] == 2


def test_a_fix_with_a_new_failing_on_base_test_is_proven_beside_a_command_without_junit(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two cases in one run. A new test that fails on the base proves the fix. And a test
    command that writes no JUnit beside the runner does not void the proof (commander.js:
    init writes `npm test`'s `node --test && npm run check:type:ts` as two test commands, the
    typecheck with no JUnit; the proof was `not_applicable`, "it wrote no JUnit report", for
    every change): a command that wrote none in the passing round names no test on the base
    either, and the runner's tests still prove the fix. (`compileall` is that command here.)"""
    without_the_bugs_test(sample_repo)
    model_env.add(Reply(tool_calls=[FIX]), write(NEW_TEST_FILE, PROVING_TEST), Reply("Done."))
    validation = {"test": [PYTEST, COMPILEALL], "timeout": 120, "proof": NO_RERUNS}

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec(validation=validation))

    assert code == 0, output
    assert [c["command"] for c in report["rounds"][0]["commands"] if c["kind"] == "test"] == [
        PYTEST,
        COMPILEALL,
    ]
    proof = report["proof"]
    assert proof["status"] == "proven", proof
    assert [t["id"] for t in proof["fail_to_pass"]] == [
        "tests.test_bump_minor::test_bump_minor_resets_patch"
    ]
    assert proof["fail_to_pass"][0]["file"] == NEW_TEST_FILE
    assert proof["pass_to_pass"] == 2 and proof["not_proof"] == []


def test_a_fix_without_a_test_succeeds_unproven_when_proof_is_preferred(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    without_the_bugs_test(sample_repo)
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))

    code, output, _, report = run_cli(sample_repo, spec(sample_repo))

    assert code == 0, output
    assert report["status"] == "success"
    proof = report["proof"]
    assert proof["status"] == "unproven" and proof["fail_to_pass"] == []
    assert "adds or edits no test" in proof["reason"]
    assert "proof: unproven (" in output  # the terminal says so
    first = "\n".join(m.get("content") or "" for m in model_env.tool_requests[0]["messages"])
    assert "Where you can, add or change a test that fails without your change" in first


def test_new_tests_that_pass_on_the_base_too_are_no_proof_and_only_they_are_listed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two cases in one run (one run, not two): a new test file whose test passes on the base
    too, and a test added to a file of the base's own tests. `not_proof` lists both added
    tests, not the existing file's unchanged tests (587 of them on more-itertools, "587 of the
    tests you added pass there")."""
    without_the_bugs_test(sample_repo)
    added = PASSING_SUITE + "\n\n" + IDLE_TEST.split("\n\n\n", 1)[1]
    model_env.add(
        Reply(
            tool_calls=[
                FIX,
                call("write_file", path=NEW_TEST_FILE, content=IDLE_TEST),
                call("write_file", path="tests/test_version.py", content=added),
            ]
        ),
        Reply("Done."),
    )

    code, output, _, report = run_cli(sample_repo, spec(sample_repo))

    assert code == 0, output
    proof = report["proof"]
    # the base's 2 tests and the 2 added ones pass in both runs
    assert proof["status"] == "unproven" and proof["pass_to_pass"] == 4, proof
    assert sorted(proof["not_proof"]) == [
        "tests.test_bump_minor::test_parse_again",
        "tests.test_version::test_parse_again",
    ]
    assert "2 of them pass there" in proof["reason"]  # the tool's words: ids are the list's
    assert "proof: unproven (" in output and "pass there: tests.test_" in output


def test_required_proof_asks_for_a_failing_test_then_succeeds_proven(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    without_the_bugs_test(sample_repo)
    model_env.add(
        Reply(tool_calls=[FIX]),
        Reply("Fixed."),
        write(NEW_TEST_FILE, IDLE_TEST),  # round 2: a test, but one the base passes too
        Reply("Added a test."),
        write(NEW_TEST_FILE, PROVING_TEST),  # round 3: one that fails without the fix
        Reply("Added a real test."),
    )

    code, output, _, report = run_cli(sample_repo, spec(sample_repo, "required"))

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 3)
    assert report["proof"]["status"] == "proven"
    first = "\n".join(m.get("content") or "" for m in model_env.tool_requests[0]["messages"])
    assert "Proof is required: add or change a test that fails without your change" in first
    asked = reflections(model_env)
    assert len(asked) == 2
    assert "requires a test that fails without the change" in asked[0]
    assert "you added or changed no test" in asked[0]
    assert "none of the tests you added or changed fails there" in asked[1]
    assert "test_parse_again" in asked[1]
    # the changed lines are measured once, in the proven round: the refused rounds' changes
    # were still to change (a coverage run each, the whole suite again, for nothing kept)
    assert output.count("proving: measuring which changed lines the tests run") == 1, output
    assert report["proof"]["changed_lines"]["measured"] is True


def test_required_proof_never_given_ends_as_a_failure_of_its_own(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    without_the_bugs_test(sample_repo)
    # one round, the last: its unproven pass is the failure (the reflection an earlier round
    # gets instead is test_required_proof_asks_for_a_failing_test_then_succeeds_proven's)
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))
    path = sample_repo.write_spec(
        validation={
            "test": ["python -m pytest -q -p no:cacheprovider tests"],
            "proof": {"tests": "required", **NO_RERUNS},
        },
        limits={"max_iterations": 1},
    )

    code, output, out, report = run_cli(sample_repo, path)

    assert code == 1, output
    assert (report["status"], report["reason"]) == ("failed", "unproven")
    assert "adds or edits no test" in report["error"]
    assert VERSION_FILE in report["files_changed"]  # the change is kept, on its branch
    # an unproven change is not measured for coverage (the suite once more), and says why
    assert report["proof"]["changed_lines"] == {
        "measured": False,
        "covered": 0,
        "total": 0,
        "uncovered": [],
        "reason": NOT_YET_MEASURED,
    }
    assert not (out / "coverage").exists()


# A test that fails on the first run in each tree and passes after: flaky by design. Its
# counter lives beside the tests (ignored by git), so the base commit's tree keeps its own;
# but each round starts without it (workspace/uncommitted.py), and the sandbox's scratch is new
# in each phase, so it counts only within one round. FLAKY_COUNTS names a folder outside the
# worktree where it survives the rounds (one file per tree; needs the sandbox off to write it).
FLAKY_TEST = """\
import os
from pathlib import Path


def test_sometimes():
    tree = Path(__file__).resolve().parent.parent
    where = os.environ.get("FLAKY_COUNTS")
    name = ".flaky-count" if not where else str(tree).strip("/").replace("/", "_")
    counter = Path(where or tree) / name
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    assert n > 1, f"run {n}: the first run fails, by design"
"""


def test_a_flaky_test_is_re_run_not_charged_to_the_model_and_never_proof(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.commit(
        {"tests/test_flaky.py": FLAKY_TEST, ".gitignore": "__pycache__/\n.flaky-count\n"},
        "a flaky test",
    )
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."))

    code, output, out, report = run_cli(sample_repo, spec(sample_repo, reruns=True))

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 1)
    assert len(model_env.tool_requests) == 2 and reflections(model_env) == []  # never charged
    proof = report["proof"]
    # flaky with the change (round 1) and on the base commit (the proof run): the repository's
    assert [(f["id"], f["where"]) for f in proof["flaky"]] == [
        ("tests.test_flaky::test_sometimes", "both")
    ]
    assert [t["id"] for t in proof["fail_to_pass"]] == [
        "tests.test_version::test_bump_minor_resets_patch"
    ]
    assert report["files_changed"] == [VERSION_FILE]
    assert (out / "reruns" / "logs" / "round-1-rerun-01.log").is_file()  # the failing test again
    assert report["rounds"][0]["passed"] and report["rounds"][0]["failures"] == []
    assert report["rounds"][0]["tests"]["passed"] == report["rounds"][0]["tests"]["total"] == 4


def test_without_re_runs_a_flaky_failure_is_the_models_and_proof_off_runs_nothing(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: `reruns: 0` hands the first failure to the model as a failure. And proof
    `off` runs nothing on the base."""
    # round 2 must see round 1's count: kept outside the worktree, which each round clears
    counts = sample_repo.tmp / "flaky-counts"
    counts.mkdir()
    monkeypatch.setenv("FLAKY_COUNTS", str(counts))
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the sandbox lets commands write only inside
    sample_repo.commit(
        {"tests/test_flaky.py": FLAKY_TEST, ".gitignore": "__pycache__/\n.flaky-count\n"},
        "a flaky test",
    )
    model_env.add(Reply(tool_calls=[FIX]), Reply("Fixed."), Reply("Nothing else."))
    # the rounds' re-runs are `reruns` whatever `tests` says (pipeline.py): no proof after the
    # passing round 2 (its base run and coverage run: two pytest runs this is not about)
    path = sample_repo.write_spec(
        validation={
            "test": ["python -m pytest -q -p no:cacheprovider tests"],
            "proof": {"reruns": 0, "tests": "off"},
        }
    )

    code, output, out, report = run_cli(sample_repo, path)

    assert code == 0, output
    assert report["iterations"] == 2 and "test_sometimes" in reflections(model_env)[0]
    # proof off runs nothing on the base (this run's, not a run of its own: the policy is the
    # same whatever the rounds before)
    assert report["proof"]["status"] == "not_applicable"
    assert not (out / "proof").exists()


# --- changed lines run by the tests (coverage.py, diff-cover) ---------------------------------

BUMP_PATCH = (
    '\n    def bump_patch(self) -> "Version":\n'
    "        return Version(self.major, self.minor, self.patch + 1)\n"
)
BUMP_PATCH_BODY = f"{VERSION_FILE}:{len(VERSION_PY.splitlines()) + 3}"  # the `return` line
BUMP_PATCH_TEST = """\
from semver.version import Version


def test_bump_patch():
    assert str(Version.parse("1.2.3").bump_patch()) == "1.2.4"
"""


def add_bump_patch() -> Reply:
    return Reply(
        tool_calls=[
            FIX,
            call(
                "write_file",
                path=VERSION_FILE,
                content=VERSION_PY.replace(FIXED_LINE_OLD, FIXED_LINE_NEW) + BUMP_PATCH,
            ),
        ]
    )


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, tuple[int, str, Path, dict[str, Any]]]:
    """Runs several tests only read, made once per module (per xdist worker) by the first
    test that needs one, in that test's isolated environment."""
    return {}


@pytest.fixture
def fix_and_bump_patch(
    shared_runs: dict[str, tuple[int, str, Path, dict[str, Any]]],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[int, str, Path, dict[str, Any]]:
    """The fix and a new `bump_patch` no test runs, under the default proof policy: run_cli's
    exit code, output, output directory and report (read only)."""
    if "fix_and_bump_patch" not in shared_runs:
        model_env.add(add_bump_patch(), Reply("Fixed, and added bump_patch."))
        shared_runs["fix_and_bump_patch"] = run_cli(sample_repo, spec(sample_repo))
    return shared_runs["fix_and_bump_patch"]


def test_changed_lines_no_test_runs_are_named(
    fix_and_bump_patch: tuple[int, str, Path, dict[str, Any]],
) -> None:
    code, output, out, report = fix_and_bump_patch

    assert code == 0, output
    lines = report["proof"]["changed_lines"]
    assert lines == {
        "measured": True,
        "covered": 2,  # the fixed line, and `def bump_patch` (run at import)
        "total": 3,
        "uncovered": [BUMP_PATCH_BODY],
        "reason": "",
    }
    assert (out / "coverage" / "logs" / "coverage.log").is_file()
    assert report["rounds"][0]["tests"]["total"] == 3  # the gate's own run, as it was
    assert report["files_changed"] == [VERSION_FILE]  # no `.coverage` file in the change


def test_a_coverage_threshold_asks_for_tests_of_the_lines_no_test_runs(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(
        add_bump_patch(),
        Reply("Fixed, and added bump_patch."),
        write("tests/test_bump_patch.py", BUMP_PATCH_TEST),
        Reply("Tested bump_patch."),
    )
    path = sample_repo.write_spec(
        validation={
            "test": ["python -m pytest -q -p no:cacheprovider tests"],
            "proof": {"coverage": 0.8, **NO_RERUNS},
        }
    )

    code, output, _, report = run_cli(sample_repo, path)

    assert code == 0, output
    assert report["iterations"] == 2
    (asked,) = reflections(model_env)
    assert "changed lines run by no test" in asked and f"\n{BUMP_PATCH_BODY}\n" in asked
    assert "2 of the 3 changed executable lines (67%" in asked
    assert report["proof"]["changed_lines"]["covered"] == report["proof"]["changed_lines"]["total"]
