"""Node through the JUnit reader: jest + jest-junit (TypeScript via ts-jest), mocha +
mocha-junit-reporter and node's own junit reporter, as they really write (committed in
tests/fixtures/generated/node; node's runner also live here, it needs nothing from npm)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from generated_fixtures import committed_report, copy_project, live_node_test

from codegen_ci.cli import cli

CORPUS = Path(__file__).parents[1] / "fixtures" / "junit"


def junit_json(report: Path, root: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["junit", "--json", "--root", str(root), str(report)])
    assert result.exit_code == 1, result.output
    return dict(json.loads(result.stdout))


def located(summary: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {f["id"]: (f["file"], f["line"]) for f in summary["failures"]}


def check_node_test(summary: dict[str, Any]) -> None:
    """node --test-reporter=junit: every case has classname="test"; the describe nesting
    names them, so the two "of one value" tests stay apart."""
    assert located(summary) == {
        "mean > of one value": ("test/mean.test.mjs", 7),
        "median > of one value": ("test/lib.js", 3),  # innermost frame in the repository
        "top level": ("test/mean.test.mjs", 23),
    }
    assert (summary["total"], summary["passed"], summary["failed"]) == (4, 1, 3)


def test_node_test_runner_ids_follow_describe_blocks(tmp_path: Path) -> None:
    project = copy_project("node", tmp_path / "project")
    report = committed_report("node", "node-test-junit.xml", project, tmp_path)
    check_node_test(junit_json(report, project))


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (20+)")
def test_live_node_test_runner_report_reads_the_same(tmp_path: Path) -> None:
    project = copy_project("node", tmp_path / "project")
    check_node_test(junit_json(live_node_test(project), project))


def test_mocha_junit_reporter_ids_do_not_repeat_the_title(tmp_path: Path) -> None:
    project = copy_project("node", tmp_path / "project")
    report = committed_report("node", "mocha-junit-reporter.xml", project, tmp_path)
    summary = junit_json(report, project)
    # classname "of one value", name "mean of one value": once is enough.
    assert located(summary) == {
        "mean of one value": ("test/mean.spec.js", 6),
        "median of one value": ("test/lib.js", 3),
    }


def test_jest_junit_typescript_frames_point_at_the_sources(tmp_path: Path) -> None:
    project = copy_project("node", tmp_path / "project")
    report = committed_report("node", "jest-junit.xml", project, tmp_path)
    summary = junit_json(report, project)
    assert located(summary) == {
        "add sums": ("src/calc.test.ts", 8),
        "parse rejects words": ("src/calc.ts", 4),  # ts-jest maps the stack to the .ts source
    }
    assert summary["failures"][1]["message"] == "Error: not a number: x"


def test_third_party_jest_report_ids_are_unique(tmp_path: Path) -> None:
    report = CORPUS / "dorny-test-reporter" / "jest-junit.xml"
    summary = junit_json(report, tmp_path)
    ids = [f["id"] for f in summary["failures"]]
    assert len(ids) == len(set(ids))
    assert "Test 1 › Test 1.1::Failing test" in ids  # describe path :: test title


NODE_TODO_REPORT = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites>
\t<testcase name="below" time="0.000874" classname="test"/>
\t<testcase name="above" time="0.002625" classname="test" failure="5 !== 3">
\t\t<skipped type="todo" message="true"/>
\t\t<failure type="testCodeFailure" message="5 !== 3">AssertionError: 5 !== 3</failure>
\t</testcase>
</testsuites>
"""


def test_a_failing_node_todo_counts_as_skipped_as_node_counts_it(tmp_path: Path) -> None:
    # node --test writes a `test.todo` whose body fails with both children, and exits 0:
    # the failure does not count, so neither does the test (gate/kept_tests.py)
    report = tmp_path / "junit.xml"
    report.write_text(NODE_TODO_REPORT)

    result = CliRunner().invoke(cli, ["junit", "--json", str(report)])

    summary = json.loads(result.stdout)
    assert (summary["total"], summary["passed"], summary["skipped"], summary["failed"]) == (
        2,
        1,
        1,
        0,
    )
