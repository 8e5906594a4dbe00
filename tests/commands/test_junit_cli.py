"""`codegen-ci junit FILE... [--json]` end to end through click."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from codegen_ci.cli import cli

CORPUS = Path(__file__).parents[1] / "fixtures" / "junit"
DATA = Path(__file__).parents[1] / "data" / "junit"
ENRICOMI = CORPUS / "EnricoMi-publish-unit-test-result-action" / "junit-xml"
PASSING = ENRICOMI / "pytest" / "junit.mpi.integration.xml"
FAILING = CORPUS / "dorny-test-reporter/python-xunit-pytest.xml"


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["junit", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_json_all_passing_exits_0() -> None:
    code, out, err = _run("--json", PASSING)
    assert code == 0, err
    assert json.loads(out) == {
        "total": 3,
        "passed": 3,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "failures": [],
        "problems": [],
    }
    assert err == ""


def test_json_with_failures_exits_1_and_lists_them() -> None:
    code, out, _ = _run("--json", FAILING, PASSING)
    assert code == 1
    summary = json.loads(out)
    assert summary["total"] == 13 and summary["failed"] + summary["errors"] == 2
    assert len(summary["failures"]) == 2
    for failure in summary["failures"]:
        assert set(failure) == {"id", "message", "file", "line"}
        assert failure["id"] and failure["message"]


def test_json_broken_file_exits_2_and_still_reports_what_parsed(tmp_path: Path) -> None:
    missing = tmp_path / "missing.xml"
    code, out, err = _run("--json", FAILING, DATA / "billion-laughs.xml", missing)
    assert code == 2
    summary = json.loads(out)
    assert summary["total"] == 10  # the good report still counts
    assert [p.split(": ")[0] for p in summary["problems"]] == [
        str(DATA / "billion-laughs.xml"),
        str(missing),
    ]
    assert f"codegen-ci: error: {missing}: cannot read file" in err


def test_text_output_shows_totals_and_failures() -> None:
    code, out, _ = _run(FAILING)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "10 tests: 6 passed, 2 failed, 0 errors, 2 skipped (1 file)"
    assert any(line.startswith(("FAILURE ", "ERROR ")) for line in lines[1:])


def test_text_output_passing_exits_0() -> None:
    code, out, _ = _run(PASSING)
    assert code == 0
    assert out == "3 tests: 3 passed, 0 failed, 0 errors, 0 skipped (1 file)\n"


def test_text_output_empty_file_exits_2_naming_it() -> None:
    code, out, _ = _run(DATA / "empty.xml")
    assert code == 2
    assert out.splitlines()[-2:] == ["Problems:", f"  {DATA / 'empty.xml'}: file is empty"]


def test_no_files_is_a_usage_error() -> None:
    code, _, err = _run()
    assert code == 2
    assert "Missing argument" in err
