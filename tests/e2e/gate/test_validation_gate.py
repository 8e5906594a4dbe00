"""The validation gate end to end, with its targeted re-runs of the failing tests: `codegen-ci
run` through the CLI, a scripted model over HTTP, real git repositories, real pytest and ruff."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from gate_repos import (
    BUG_ID,
    HOSTILE_REPORTS,
    LEGACY_TEST,
    MANY_FAILURES_TEST,
    NOISY_CHECK,
    RUFF,
    TEST_FILE,
    VERSION,
    commands,
    commit_files,
    failure,
    full_suite_runs,
    reflections,
    run_cli,
)
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, PYTEST, TEST_VERSION_PY, SampleRepo

from codegen_ci.gate import pytest_commands
from codegen_ci.gate.junit.parse import parse_files
from codegen_ci.gate.reflection import MAX_MESSAGE_CHARS
from codegen_ci.publish.report_text import pr_body
from codegen_ci.report import Report
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

WRONG_LINE = "return Version(self.major, self.minor + 1, self.patch * 1)"
LEGACY_ID = "tests.test_legacy::test_legacy_formatting"
MAJOR_ID = "tests.test_version::test_bump_major"
AS_WRITTEN = f"echo AS-WRITTEN && {PYTEST}"  # a pytest command that cannot be rewritten
ISOLATED = PYTEST.replace(" -m pytest", " -I -m pytest")  # -I: PYTHONPATH is ignored
MAJOR_OLD, MAJOR_BROKEN = "Version(self.major + 1, 0, 0)", "Version(self.major + 2, 0, 0)"


def edit(old: str, new: str, path: str = VERSION) -> Reply:
    return Reply(tool_calls=[call("edit_file", path=path, old_text=old, new_text=new)])


def test_a_round_whose_failing_test_still_fails_stops_after_it_and_the_fix_runs_it_first(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two wrong attempts, then the fix, in one run: round 2's previously failing test still
    fails (the round stops after it), round 3's passes (then the rest of the suite, in the
    same pytest process). Round 1 and its reflection are those of any failing first round."""
    model_env.add(
        edit(FIXED_LINE_OLD, WRONG_LINE),
        Reply("First try."),
        edit(WRONG_LINE, WRONG_LINE.replace("* 1", "+ 0")),
        Reply("Second try."),
        edit(WRONG_LINE.replace("* 1", "+ 0"), FIXED_LINE_NEW),
    )

    code, output, out, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 0, output
    assert (report["status"], report["iterations"]) == ("success", 3)
    first = commands(report, 1)
    assert [(c["targeted"], c["failing_first"], c["exit_code"]) for c in first] == [
        (False, False, 1)
    ]
    assert [f["id"] for f in report["rounds"][0]["failures"]] == [BUG_ID]
    assert report["rounds"][0]["tests"] == {
        "total": 3,
        "passed": 2,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
    }
    [second] = commands(report, 2)
    assert (second["targeted"], second["failing_first"], second["exit_code"]) == (True, True, 1)
    # the suite's totals: the previously failing test ran, the other two count as last run
    assert report["rounds"][1]["tests"] == {
        "total": 3,
        "passed": 2,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
    }
    assert report["rounds"][1]["tests_carried"] == 2
    assert (
        "previously failing tests still fail" in (out / "logs" / "round-2-02-test.log").read_text()
    )
    # round 3 is one pytest process: the previously failing test, then the rest of the suite
    [third] = commands(report, 3)
    assert (third["targeted"], third["failing_first"], third["exit_code"]) == (False, True, 0)
    assert third["command"] == PYTEST
    assert report["rounds"][2]["tests"]["passed"] == 3
    assert full_suite_runs(report) == 2  # rounds 1 and 3
    # the first reflection names the failing test, where it failed, and what was expected
    first_message, second_message = reflections(model_env)
    assert first_message.startswith("Validation round 1 of 3 failed")
    assert BUG_ID in first_message and "tests/test_version.py:13" in first_message
    assert "3.5.0" in first_message and "BEGIN UNTRUSTED DATA" in first_message
    assert str(sample_repo.tmp) not in first_message
    assert (
        "Tests (only the previously failing tests were re-run; the other 2 count as in the last "
        "full run): 3 total, 2 passed, 1 failed" in second_message
    )
    assert "[only the previously failing tests]" in second_message
    # every JUnit report is copied into the output directory (pytest got --junitxml there)
    copies = sorted((out / "junit").glob("*.xml"))
    assert [p.name for p in copies] == [
        "round-1-01-test.xml",
        "round-2-02-test.xml",
        "round-3-03-test.xml",
    ]
    round_3 = parse_files(copies[2:])
    assert round_3.cases[0].key == BUG_ID and round_3.totals().passed == 3
    assert (out / "pytest_plugin" / "codegen_first.py").is_file()
    assert sample_repo.git("worktree", "list").count("\n") == 1  # baseline tree removed


def test_pytest_that_cannot_load_the_plugin_falls_back_to_rewritten_commands(
    isolated_run: tuple[SampleRepo, RunResult],
) -> None:
    _, (code, output, _, report) = isolated_run

    assert code == 0, output
    second = commands(report, 2)
    assert [(c["targeted"], c["failing_first"], c["exit_code"]) for c in second] == [
        (True, False, 0),
        (False, False, 0),
    ]
    # the previously failing tests named on the command line, then the suite as written
    targeted = second[0]["command"]
    assert targeted.startswith(ISOLATED) and targeted.endswith(
        "tests/test_version.py::test_bump_minor_resets_patch"
    )
    assert "tests/test_version.py::test_bump_major " in targeted
    assert second[1]["command"] == ISOLATED


def test_a_model_that_repeats_itself_is_stopped_as_stuck(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(limits={"max_iterations": 5, "stuck_rounds": 3})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 1
    assert (report["status"], report["reason"], report["iterations"]) == ("failed", "stuck", 3)
    assert "3 rounds" in report["error"]
    assert "stuck" in output and f"FAIL {BUG_ID}" in output
    assert [f["id"] for f in report["rounds"][-1]["failures"]] == [BUG_ID]
    assert len(model_env.tool_requests) == 3
    # one full suite; rounds 2 and 3 ran the failing test first and stopped after it
    assert full_suite_runs(report) == 1
    later = commands(report, 2) + commands(report, 3)
    assert [(c["targeted"], c["failing_first"]) for c in later] == [(True, True), (True, True)]
    assert [r["tests"]["total"] for r in report["rounds"]] == [3, 3, 3]  # the suite's
    assert [r["tests_carried"] for r in report["rounds"]] == [0, 2, 2]


@pytest.mark.parametrize(
    ("allow", "break_major", "status"),
    [(False, False, "failed"), (True, False, "success"), (True, True, "failed")],
    ids=["strict", "allowed", "allowed-but-new-failure"],
)
def test_baseline_tells_preexisting_failures_from_new_ones(
    request: pytest.FixtureRequest, allow: bool, break_major: bool, status: str
) -> None:
    if break_major:  # the run test_a_failing_test_the_change_added_... reads too
        repo, (code, output, out, report) = request.getfixturevalue("new_failures_run")
    else:
        repo = request.getfixturevalue("sample_repo")
        model_env = request.getfixturevalue("model_env")
        commit_files(repo, {"tests/test_legacy.py": LEGACY_TEST}, "a test broken long ago")
        model_env.add(edit(FIXED_LINE_OLD, FIXED_LINE_NEW))
        validation = {"test": [PYTEST], "allow_preexisting_failures": allow}
        spec = repo.write_spec(validation=validation, limits={"max_iterations": 1})
        code, output, out, report = run_cli(repo, spec)

    assert report["status"] == status, output
    assert code == (0 if status == "success" else 1)
    assert failure(report, LEGACY_ID)["new"] is False
    if break_major:
        assert failure(report, MAJOR_ID)["new"] is True
    else:
        assert [f["id"] for f in report["rounds"][0]["failures"]] == [LEGACY_ID]
    # one targeted run on the base commit, in its own worktree, since removed
    assert len(list((out / "baseline" / "logs").glob("*.log"))) == 1
    on_base = parse_files((out / "baseline" / "junit").glob("*.xml"))
    expected = {LEGACY_ID, MAJOR_ID} if break_major else {LEGACY_ID}
    assert {c.key for c in on_base.cases} == expected
    assert not (out / "baseline" / "tree").exists()
    assert repo.git("worktree", "list").count("\n") == 1


def test_baseline_reruns_only_the_failing_tests_through_the_plugin(
    new_failures_run: tuple[SampleRepo, RunResult],
) -> None:
    _, (code, output, out, report) = new_failures_run  # its command: AS_WRITTEN

    assert (code, report["status"]) == (1, "failed"), output
    assert failure(report, LEGACY_ID)["new"] is False
    assert failure(report, MAJOR_ID)["new"] is True
    on_base = parse_files((out / "baseline" / "junit").glob("*.xml"))
    assert {c.key for c in on_base.cases} == {LEGACY_ID, MAJOR_ID}
    logs = sorted((out / "baseline" / "logs").glob("*.log"))
    assert len(logs) == 1
    status = pytest_commands.read_status(
        out / "baseline" / "pytest_plugin" / "baseline-01-status.jsonl"
    )
    # the command ran as written (`&&` cannot be rewritten), the plugin deselecting the rest
    assert "AS-WRITTEN" in logs[0].read_text() and "2 deselected" in logs[0].read_text()
    assert (status.loaded, status.matched) == (True, 2)


def test_a_baseline_whose_pytest_cannot_load_the_plugin_reruns_rewritten_commands(
    isolated_run: tuple[SampleRepo, RunResult],
) -> None:
    """Round 1's two failures, one the base commit has and one it has not, told apart by a
    base run of just those two: the plugin refused (`-I`), their ids on the command line."""
    _, (code, output, out, report) = isolated_run

    assert code == 0, output
    assert failure(report, BUG_ID, 0)["new"] is False
    assert failure(report, MAJOR_ID, 0)["new"] is True
    # the plugin's try, the rewritten command; then (round 2 passes) the whole suite, which
    # the kept-tests check lists (test_tests_kept_e2e.py)
    logs = sorted((out / "baseline" / "logs").glob("*.log"))
    assert [p.name for p in logs] == ["baseline-01.log", "baseline-02.log", "baseline-03.log"]
    on_base = parse_files([out / "baseline" / "junit" / "baseline-02.xml"])
    assert {c.key for c in on_base.cases} == {BUG_ID, MAJOR_ID}
    status = pytest_commands.read_status(
        out / "baseline" / "pytest_plugin" / "baseline-01-status.jsonl"
    )
    assert not status.loaded and 'plugin "codegen_first"' in logs[0].read_text()


RunResult = tuple[int, str, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, tuple[SampleRepo, RunResult]]:
    """Runs several tests only read (each asserting its own case), made once per module (per
    xdist worker) by the first test that needs one, in that test's isolated environment."""
    return {}


@pytest.fixture
def fix_and_weakened_test_run(
    shared_runs: dict[str, tuple[SampleRepo, RunResult]],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[SampleRepo, RunResult]:
    """The default spec; the change fixes the bug and weakens another test (bump_major's
    assertion made always true): its first round passes. The repository and run_cli's exit
    code, output, output directory and report (read only)."""
    if "fix_and_weakened_test" not in shared_runs:
        model_env.add(
            edit(FIXED_LINE_OLD, FIXED_LINE_NEW),
            edit('== "4.0.0"', '== "4.0.0" or True', path=TEST_FILE),  # passes, weakened
        )
        run = run_cli(sample_repo, sample_repo.write_spec())
        shared_runs["fix_and_weakened_test"] = (sample_repo, run)
    return shared_runs["fix_and_weakened_test"]


@pytest.fixture
def new_failures_run(
    shared_runs: dict[str, tuple[SampleRepo, RunResult]],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[SampleRepo, RunResult]:
    """A test broken long ago committed on the base, `allow_preexisting_failures`, one round:
    the change fixes the bug but breaks bump_major (an existing test now failing: new) and adds
    a test that fails (one the base does not have: new by definition). The test command is
    pytest behind an `echo` (`&&` cannot be rewritten: the plugin deselects on the base). Read
    only."""
    if "new_failures" not in shared_runs:
        new_test = "def test_added_by_the_change():\n    assert 1 == 2\n"
        model_env.add(
            edit(FIXED_LINE_OLD, FIXED_LINE_NEW),
            edit(MAJOR_OLD, MAJOR_BROKEN),
            Reply(tool_calls=[call("write_file", path="tests/test_added.py", content=new_test)]),
            Reply("done"),
        )
        commit_files(sample_repo, {"tests/test_legacy.py": LEGACY_TEST}, "a test broken long ago")
        spec = sample_repo.write_spec(
            validation={"test": [AS_WRITTEN], "allow_preexisting_failures": True},
            limits={"max_iterations": 1},
        )
        shared_runs["new_failures"] = (sample_repo, run_cli(sample_repo, spec))
    return shared_runs["new_failures"]


@pytest.fixture
def isolated_run(
    shared_runs: dict[str, tuple[SampleRepo, RunResult]],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[SampleRepo, RunResult]:
    """A pytest that cannot load the plugin (`-I`: PYTHONPATH is ignored), the default spec
    otherwise: round 1 gets the bug's fix wrong (its test fails, as on the base) and breaks
    bump_major (a failure the base has not); round 2 fixes both. Read only."""
    if "isolated" not in shared_runs:
        model_env.add(
            edit(FIXED_LINE_OLD, WRONG_LINE),
            edit(MAJOR_OLD, MAJOR_BROKEN),
            Reply("First try."),
            edit(WRONG_LINE, FIXED_LINE_NEW),
            edit(MAJOR_BROKEN, MAJOR_OLD),
            Reply("Fixed."),
        )
        spec = sample_repo.write_spec(validation={"test": [ISOLATED]})
        shared_runs["isolated"] = (sample_repo, run_cli(sample_repo, spec))
    return shared_runs["isolated"]


def test_a_run_that_passes_its_first_round_pays_nothing_extra(
    fix_and_weakened_test_run: tuple[SampleRepo, RunResult],
) -> None:
    _, (code, output, out, report) = fix_and_weakened_test_run

    assert code == 0, output
    assert [c["kind"] for c in commands(report, 1)] == ["test"]
    assert not (out / "baseline").exists()
    # besides the round, only the pre-flight's pytest collection (no test ran there)
    logs = sorted(p.name for p in (out / "logs").iterdir())
    assert logs == ["preflight-01-test.log", "round-1-01-test.log"]
    assert [c["collect_only"] for c in report["preflight"]["commands"]] == [True]
    assert parse_files((out / "junit").glob("*.xml")).totals().passed == 3


class ProtectedRun(NamedTuple):
    """A shared run and what the model received in it (its server is the first test's)."""

    repo: SampleRepo
    run: RunResult
    reflections: list[str]
    tool_results: list[str]  # the tool messages of the last request, in order


@pytest.fixture(scope="module")
def shared_protected_run() -> dict[str, ProtectedRun]:
    return {}


@pytest.fixture
def lint_and_protected_tests_run(
    shared_protected_run: dict[str, ProtectedRun],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> ProtectedRun:
    """A lint command before the tests, and `protect_tests`: the model first edits a test
    file (refused) and appends to it by a command (undone), then fixes the bug and adds an
    unused import (round 1's lint fails), and removes the import in round 2. Two tests read
    it, each its own part: the protected tests, the lint failure. Read only."""
    if "run" not in shared_protected_run:
        header = '"""Semantic versions."""\n'
        model_env.add(
            edit('"3.5.0"', '"3.5.5"', path=TEST_FILE),
            Reply(tool_calls=[call("run_command", command=f"echo '# sneaky' >> {TEST_FILE}")]),
            edit(FIXED_LINE_OLD, FIXED_LINE_NEW),
            edit(header, header + "\nimport os\n"),
            Reply("Done."),
            edit(header + "\nimport os\n", header),
        )
        validation = {
            "lint": [f"{RUFF} check --no-cache --select F src"],
            "test": [PYTEST],
            "protect_tests": True,
        }
        run = run_cli(sample_repo, sample_repo.write_spec(validation=validation))
        last = model_env.tool_requests[-1]["messages"]
        tool_results = [m["content"] for m in last if m["role"] == "tool"]
        shared_protected_run["run"] = ProtectedRun(
            sample_repo, run, reflections(model_env), tool_results
        )
    return shared_protected_run["run"]


def test_a_lint_failure_skips_the_tests_and_is_reflected(
    lint_and_protected_tests_run: ProtectedRun,
) -> None:
    code, output, out, report = lint_and_protected_tests_run.run

    assert code == 0, output
    assert report["iterations"] == 2
    lint, test = commands(report, 1)
    assert (lint["kind"], lint["exit_code"]) == ("lint", 1)
    assert (test["kind"], test["skipped"], test["exit_code"]) == ("test", True, None)
    [lint_failure] = report["rounds"][0]["failures"]
    assert lint_failure["kind"] == "lint"
    assert lint_failure["id"].startswith("src/semver/version.py:3: F401")
    [message] = lint_and_protected_tests_run.reflections
    assert "Lint errors (1):" in message and "F401" in message
    assert "skipped (a lint command failed)" in message
    assert not (out / "baseline").exists()  # a lint failure needs no baseline
    assert [(c["kind"], c["exit_code"]) for c in commands(report, 2)] == [("lint", 0), ("test", 0)]


def test_a_failing_command_without_junit_is_reflected_by_head_and_tail(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    commit_files(sample_repo, {"check.py": NOISY_CHECK})
    command = f"{sys.executable} check.py"
    spec = sample_repo.write_spec(validation={"test": [command]}, limits={"max_iterations": 2})

    code, _, out, report = run_cli(sample_repo, spec)

    assert code == 1
    [only] = report["rounds"][0]["failures"]
    assert (only["id"], only["kind"]) == (f"test: {command}", "command")
    assert only["message"] == "TAIL-MARKER 7 problems found"
    assert only["new"] is False  # the check fails on the base commit too
    [message] = reflections(model_env)
    assert "HEAD-MARKER" in message and "TAIL-MARKER" in message
    assert "characters cut" in message and len(message) < MAX_MESSAGE_CHARS
    assert "check starting in <repo>" in message and str(sample_repo.tmp) not in message
    assert "took <duration>" in message and "took 0.93s" not in message
    # not pytest: round 2 runs the command as it is
    [again] = commands(report, 2)
    assert (again["command"], again["targeted"], again["failing_first"]) == (command, False, False)
    assert not (out / "pytest_plugin").exists()


def test_reflection_stays_bounded_for_hundreds_of_failures(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    many = "tests/test_many.py"
    model_env.add(
        Reply(tool_calls=[call("write_file", path=many, content=MANY_FAILURES_TEST)]),
        Reply("Added coverage."),
        # Round 2 only needs to receive the reflection: a huge usage report ends the run on
        # its budget before the 500-failure suite would run again.
        Reply(tool_calls=[call("list_files")], prompt_tokens=10**7),
    )
    # --tb=line: each failure's long message is in its JUnit all the same; pytest's 500 long
    # tracebacks were a third of the run's CPU and no part of what is bounded here
    spec = sample_repo.write_spec(
        validation={"test": [f"{PYTEST} --tb=line"]}, limits={"max_iterations": 2}
    )

    code, _, _, report = run_cli(sample_repo, spec)

    assert (code, report["reason"], report["iterations"]) == (1, "budget", 1)
    assert report["rounds"][0]["tests"]["failed"] == 501
    [message] = reflections(model_env)
    last_user = [m for m in model_env.tool_requests[2]["messages"] if m["role"] == "user"][-1]
    assert last_user["content"] == message
    assert len(message) < MAX_MESSAGE_CHARS
    assert "Tests: 503 total, 2 passed, 501 failed, 0 errors, 0 skipped." in message
    assert "Failing tests introduced by the change: 500 (showing " in message
    assert "more not shown" in message and "tests.test_many::test_many[0]" in message
    # the bug the task is about fails on the base too: listed, after the new failures
    assert message.index("tests.test_many::test_many[0]") < message.index(BUG_ID)


def test_protect_tests_refuses_edits_and_undoes_commands(
    lint_and_protected_tests_run: ProtectedRun,
) -> None:
    sample_repo, (code, output, _, report), _, tool_results = lint_and_protected_tests_run

    assert code == 0, output
    refused = {(r["path"], r["tool"]) for r in report["refusals"]}
    assert refused == {(TEST_FILE, "edit_file"), (TEST_FILE, "run_command")}
    assert tool_results[0].startswith(f"Error: refused '{TEST_FILE}'")
    assert "the change was undone" in tool_results[1]
    assert report["files_changed"] == [VERSION] and report["tests_touched"] == []
    assert sample_repo.git("show", f"{report['branch']}:{TEST_FILE}") == TEST_VERSION_PY


def test_edited_tests_are_recorded_in_report_and_pr_body(
    fix_and_weakened_test_run: tuple[SampleRepo, RunResult],
) -> None:
    _, (code, output, _, report) = fix_and_weakened_test_run  # a test weakened, as it passes

    assert code == 0, output
    assert report["tests_touched"] == [TEST_FILE]
    body = pr_body(Report.model_validate(report), task="t", issue_number=None, run_url=None)
    assert "Test files or test configuration were edited" in body and f"`{TEST_FILE}`" in body


def test_hostile_and_broken_junit_become_parse_problems(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    commit_files(sample_repo, {"make_reports.py": HOSTILE_REPORTS})
    validation = {"test": [f"{sys.executable} make_reports.py"], "junit": ["reports/*.xml"]}
    spec = sample_repo.write_spec(validation=validation, limits={"max_iterations": 2})

    code, output, out, report = run_cli(sample_repo, spec)

    assert code == 1, output
    first = report["rounds"][0]
    problems = first["parse_problems"]
    assert len(problems) == 2
    assert "DTD or entities" in problems[0] and "ends early" in problems[1]
    assert first["tests"]["failed"] == 1
    assert [f["id"] for f in first["failures"]] == ["checks::test_real"]
    assert len(list((out / "junit").glob("round-1-*.xml"))) == 3
    [message] = reflections(model_env)
    assert "JUnit reports that could not be read" in message
    assert report["files_changed"] == []  # the reports are artifacts, never the change


def test_a_failing_test_the_change_added_needs_no_full_suite_on_the_base(
    new_failures_run: tuple[SampleRepo, RunResult],
) -> None:
    """The base run of just the failing ids collects the whole base suite: an id it does
    not know is a test the change added, new by definition, without a second, full run."""
    _, (code, output, out, report) = new_failures_run

    assert (code, report["status"]) == (1, "failed"), output
    assert failure(report, LEGACY_ID)["new"] is False
    assert failure(report, "tests.test_added::test_added_by_the_change")["new"] is True
    assert len(list((out / "baseline" / "logs").glob("*.log"))) == 1  # no full-suite run
