"""A round's totals are the suite's: when the previously failing tests run first and still
fail (the pytest plugin stops there), the tests it did not run count as they last ran, and the
report says how many."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sample_repo import FIX, FIXED_LINE_OLD, VERSION_FILE, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

NOT_A_FIX = call(
    "edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_OLD + "  # ?"
)
STILL_NOT = call("edit_file", path=VERSION_FILE, old_text="  # ?", new_text="  # ??")


def test_a_round_that_stopped_after_the_failing_tests_reports_the_suites_totals(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(
        Reply(tool_calls=[NOT_A_FIX]),
        Reply("done"),
        Reply(tool_calls=[STILL_NOT]),
        Reply("done"),
        Reply(tool_calls=[call("edit_file", path=VERSION_FILE, old_text="  # ??", new_text="")]),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )
    spec = sample_repo.write_spec(limits={"max_iterations": 3, "stuck_rounds": 3})
    out = sample_repo.tmp / "out"
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]

    result = CliRunner().invoke(cli, args)

    report = json.loads((out / "report.json").read_text())
    assert (result.exit_code, report["status"]) == (0, "success"), result.output
    first, second, third = report["rounds"]
    suite_with_one_failing = {"total": 3, "passed": 2, "failed": 1, "errors": 0, "skipped": 0}
    assert first["tests"] == suite_with_one_failing and first["tests_carried"] == 0
    # round 2 ran only the failing test (the plugin stopped after it): still the suite's totals
    [test] = second["commands"]
    assert test["targeted"] and test["junit_tests"] == 1
    assert second["tests"] == suite_with_one_failing and second["tests_carried"] == 2
    message = sample_repo.git("log", "-1", "--format=%b", report["branch"])
    assert "Round 2: failed; tests: 2/3 passed (2 as in the last full run)" in message
    assert third["tests"]["passed"] == 3 and third["tests_carried"] == 0
