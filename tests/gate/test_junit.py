"""The JUnit parser against real reports (tests/fixtures/junit, checked against what each
source project itself states) and against hostile or broken files of our own (tests/data/junit).
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from codegen_ci.gate.junit.capture import junit_hint
from codegen_ci.gate.junit.cases import locate
from codegen_ci.gate.junit.parse import (
    JUnitResult,
    parse_file,
    parse_files,
    render_text,
    summary_json,
)
from codegen_ci.report import Failure, TestTotals
from codegen_ci.security.untrusted import Untrusted

CORPUS = Path(__file__).parents[1] / "fixtures" / "junit"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "EXPECTED.json").read_text())
DATA = Path(__file__).parents[1] / "data" / "junit"
CORPUS_FILES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.xml"))


def text(said: Untrusted) -> str:
    """A case's words, read raw to check them (a test: no reader)."""
    return said.raw_for("matching")


def _totals(result: JUnitResult) -> dict[str, int]:
    return result.totals().model_dump()


# --- the shared corpus, file by file ------------------------------------------------------

# Where our rule (one count per <testcase> element, by its worst child) legitimately differs
# from the numbers a source states, the comparison is replaced here, with the reason.
OVERRIDES: dict[str, tuple[dict[str, int], str]] = {
    "EnricoMi-publish-unit-test-result-action/junit-xml/junit.multiresult.xml": (
        {"total": 4, "passed": 1, "failed": 1, "errors": 1, "skipped": 1},
        "EnricoMi's runs_* count every result element (one testcase holds skipped, failure "
        "and error, so runs_passed is -2); we count each testcase once by its worst child, "
        "which equals EnricoMi's per-test counts here because all four names are unique.",
    ),
    "EnricoMi-publish-unit-test-result-action/junit-xml/no-cases-but-tests.xml": (
        {"total": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0},
        "The suite claims tests=6 but holds no <testcase>; EnricoMi falls back to the suite "
        "attributes, we count elements only (there is nothing to show the model).",
    ),
    "jstemmer-go-junit-report/012-report.xml": (
        {"total": 9, "passed": 6, "failed": 2, "errors": 0, "skipped": 1},
        "go-junit-report fails TestSubtests and TestFailingSubtestWithNestedSubtest with an "
        "empty <failure> because a subtest failed: folded into that subtest (runners/go.py's "
        "`refine`).",
    ),
    "jstemmer-go-junit-report/103-report.xml": (
        {"total": 3, "passed": 2, "failed": 1, "errors": 0, "skipped": 0},
        "TestMultiple failed only because TestMultiple/Single did: folded (runners/go.py's "
        "`refine`).",
    ),
    "gotestyourself-gotestsum/junitxml-report.golden.xml": (
        {"total": 58, "passed": 42, "failed": 11, "errors": 0, "skipped": 5},
        "gotestsum adds a synthetic TestMain <testcase> with a <failure> for a package whose "
        "test binary exited early, but leaves it out of tests= (59) and counts it as the "
        "root's errors=1; as an element it is a 60th case, and a failure, not an error. Two "
        "parents (TestNestedParallelFailures, TestNestedWithFailure) failed only because their "
        "subtests did: folded into them, not counted again (runners/go.py's `refine`).",
    ),
}


def _golden(rel: str) -> dict[str, int]:
    """A generator's own golden file: the root's counts where it states them, else the sum
    over leaf suites (a suite containing suites repeats its children's numbers)."""
    root = ET.parse(CORPUS / rel).getroot()
    leaves = [s for s in root.iter("testsuite") if s.find("testsuite") is None]

    def count(attr: str) -> int:
        if root.get(attr) is not None:
            return int(root.get(attr, "0"))
        return sum(int(s.get(attr, "0")) for s in leaves)

    tests, failed, errors, skipped = (count(a) for a in ("tests", "failures", "errors", "skipped"))
    return {
        "total": tests,
        "passed": tests - failed - errors - skipped,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
    }


def _enricomi(stated: dict[str, int]) -> dict[str, int]:
    """EnricoMi: tests = unique names, runs = testcase elements; we count elements."""
    return {
        "total": stated["runs"],
        "passed": stated["runs_passed"],
        "failed": stated["runs_failures"],
        "errors": stated["runs_errors"],
        "skipped": stated["runs_skipped"],
    }


def _dorny(counts: dict[str, Any], ours: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """dorny folds errors into `failed` and states no error count: compare on its terms."""
    keys = [k for k in ("tests", "passed", "failed", "skipped") if k in counts]
    folded = {**ours, "tests": ours["total"], "failed": ours["failed"] + ours["errors"]}
    return {k: folded[k] for k in keys}, {k: counts[k] for k in keys}


@pytest.mark.parametrize("rel", CORPUS_FILES)
def test_corpus_file_parses_without_raising(rel: str) -> None:
    result = parse_file(CORPUS / rel)
    totals = result.totals()
    assert result.files == [str(CORPUS / rel)]
    assert totals.total == totals.passed + totals.failed + totals.errors + totals.skipped
    if result.problems:
        assert result.cases == []
        assert all(p.startswith(f"{CORPUS / rel}: ") for p in result.problems)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_corpus_matches_what_its_source_states(rel: str) -> None:
    entry = EXPECTED[rel]
    result = parse_file(CORPUS / rel)
    ours = _totals(result)
    if "source_stated_exception" in entry:
        assert result.problems and result.cases == []
        return
    assert result.problems == []
    if rel in OVERRIDES:
        assert ours == OVERRIDES[rel][0], OVERRIDES[rel][1]
        return
    if entry.get("golden"):
        assert ours == _golden(rel)
        return
    stated = entry.get("source_stated", {})
    asserted = entry.get("source_asserts", {})
    if "runs" in stated:
        assert ours == _enricomi(stated)
    elif stated:
        got, want = _dorny(stated, ours)
        assert got == want
    _check_asserts(rel, asserted, result)


def _check_asserts(rel: str, asserted: dict[str, Any], result: JUnitResult) -> None:
    ours = _totals(result)
    outcomes = [c.outcome for c in result.cases]
    if asserted.get("semantics") == "dorny test assert" or {"passed", "failed"} & set(asserted):
        got, want = _dorny(asserted, ours)
        assert got == want
    if asserted.get("result") == "success":
        assert result.failing() == []
    for key in ("total", "cases"):
        if key in asserted:
            assert ours["total"] == asserted[key]
    if "leaf_suites" in asserted:  # each leaf holds one case; one leaf's only a suite error
        assert ours["total"] == asserted["leaf_suites"] * asserted["cases_per_leaf"]
    if "suite2_tests" in asserted:  # the first suite of these files is empty
        assert ours["total"] == asserted["suite2_tests"]
    results = asserted.get("results") or asserted.get("suite2_results")
    if results:
        assert outcomes == [{"pass": "passed"}.get(r, r) for r in results]
    if "tests" in asserted and "semantics" not in asserted:
        assert ours["total"] == asserted["tests"], rel


def test_corpus_flaky_surefire_report_counts_the_rerun_pass() -> None:
    flaky = parse_file(CORPUS / "jenkinsci-junit-plugin/gh-237/TEST-io.olamy.FlakyTest.xml")
    always = parse_file(CORPUS / "jenkinsci-junit-plugin/gh-237/TEST-io.olamy.AlwaysFailTest.xml")
    assert [(c.outcome, c.flaky) for c in flaky.cases] == [("passed", True)]
    assert [(c.outcome, c.flaky) for c in always.cases] == [("failure", True)]
    assert always.cases[0].message == Untrusted("built to fail")
    assert "AlwaysFailTest.java:23" in text(always.cases[0].details)


def test_corpus_xxe_files_are_refused() -> None:
    for name in ("testXxe-xxe.xml", "testXxe-oob.xml"):
        result = parse_file(CORPUS / "jenkinsci-junit-plugin" / name)
        assert len(result.problems) == 1 and result.cases == []


def test_corpus_bad_duration_gives_no_time_rather_than_an_error() -> None:
    result = parse_file(CORPUS / "jenkinsci-junit-plugin/junit-report-bad-duration.xml")
    assert result.problems == [] and len(result.cases) == 2


# --- hostile input ------------------------------------------------------------------------


def test_entity_bomb_is_refused_fast() -> None:
    start = time.perf_counter()
    result = parse_file(DATA / "billion-laughs.xml")
    assert time.perf_counter() - start < 10  # refused, not expanded (expanding takes minutes)
    assert result.cases == []
    assert result.problems == [f"{DATA / 'billion-laughs.xml'}: " + _REFUSED]


_REFUSED = "refused: the file declares a DTD or entities, which a JUnit report never needs"


@pytest.mark.parametrize("name", ["xxe-passwd.xml", "xxe-parameter-entity.xml"])
def test_external_entities_are_refused(name: str) -> None:
    result = parse_file(DATA / name)
    assert result.cases == [] and result.problems == [f"{DATA / name}: {_REFUSED}"]


def test_external_entity_never_reads_the_target_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    report = tmp_path / "report.xml"
    report.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY x SYSTEM "{secret.as_uri()}">]>\n'
        '<testsuite name="s"><testcase name="t"><failure message="&x;">&x;</failure>'
        "</testcase></testsuite>\n"
    )
    result = parse_file(report)
    assert "TOP-SECRET-VALUE" not in json.dumps(summary_json(result))
    assert "TOP-SECRET-VALUE" not in render_text(result)
    assert result.problems and result.cases == []


def test_size_cap_refuses_oversized_files(tmp_path: Path) -> None:
    report = tmp_path / "big.xml"
    report.write_text(_generated_report(200))
    result = parse_file(report, max_bytes=1000)
    assert result.cases == []
    assert result.problems == [f"{report}: file is larger than the limit of 1000 bytes"]
    assert parse_file(report).totals().total == 200


# --- broken files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.xml", "file is empty"),
        ("whitespace-only.xml", "file is empty"),
        ("truncated.xml", "XML ends early (truncated file?) at line 7, column 0"),
        ("unescaped-lt.xml", "not well-formed XML: not well-formed (invalid token): line 3"),
        ("not-xml.xml", "not well-formed XML: syntax error: line 1, column 0"),
        (
            "not-junit.xml",
            "not a JUnit report: the root element is <html>, expected <testsuites> or <testsuite>",
        ),
    ],
)
def test_broken_files_give_a_problem_naming_the_file(name: str, message: str) -> None:
    result = parse_file(DATA / name)
    assert result.cases == []
    assert len(result.problems) == 1
    assert result.problems[0].startswith(f"{DATA / name}: {message}")


def test_missing_file_and_directory_are_problems(tmp_path: Path) -> None:
    result = parse_files([tmp_path / "nope.xml", tmp_path, DATA / "cdata.xml"])
    assert result.problems == [
        f"{tmp_path / 'nope.xml'}: cannot read file: No such file or directory",
        f"{tmp_path}: cannot read file: Is a directory",
    ]
    assert result.totals().total == 2  # the good file still counts


# --- encodings, CDATA, structure ------------------------------------------------------------


@pytest.mark.parametrize("name", ["utf16-bom.xml", "utf8-bom.xml", "latin1.xml"])
def test_encodings_and_byte_order_marks(name: str) -> None:
    result = parse_file(DATA / name)
    assert result.problems == []
    assert [c.key for c in result.cases] == [
        "tests.test_ünï::test_ok_ü",
        "tests.test_ünï::test_fails_ß",
    ]
    assert text(result.failing()[0].message).startswith("expected 'ü' got 'u'")
    assert result.cases[0].time == 0.5


def test_cdata_details_are_kept_verbatim_and_locate_the_failure() -> None:
    result = parse_file(DATA / "cdata.xml")
    (case,) = result.failing()
    assert case.message == Untrusted("AssertionError: assert '<b>' == '<i>'")
    assert 'assert render("<b>") == "<i>" and 1 < 2 && True' in text(case.details)
    assert text(case.details).endswith("tests/test_parse.py:11: AssertionError")
    assert (case.file, case.line) == ("tests/test_parse.py", 11)  # the failing line, not def
    passed = result.cases[1]
    assert (passed.file, passed.line, passed.outcome) == ("tests/test_parse.py", 14, "passed")


def test_flaky_reruns_pass_unless_a_final_failure_remains() -> None:
    result = parse_file(DATA / "flaky-rerun.xml")
    assert [(c.name, c.outcome, c.flaky) for c in result.cases] == [
        ("passesOnRetry", "passed", True),
        ("errorsThenPasses", "passed", True),
        ("alwaysFails", "failure", True),
        ("alwaysErrors", "error", True),
        ("stable", "passed", False),
    ]
    assert result.totals() == TestTotals(total=5, passed=3, failed=1, errors=1, skipped=0)


def test_same_name_in_three_browsers_is_three_cases() -> None:
    result = parse_file(DATA / "three-browsers.xml")
    assert [c.key for c in result.cases] == ["login.spec.ts::login works"] * 3
    assert [c.outcome for c in result.cases] == ["passed", "failure", "passed"]
    (failing,) = result.failing()
    assert (failing.file, failing.line) == ("/repo/tests/login.spec.ts", 14)


def test_nested_suites_in_document_order_with_suite_level_error() -> None:
    result = parse_file(DATA / "nested-suites.xml")
    assert [(c.key, c.outcome) for c in result.cases] == [
        ("outer::first", "passed"),
        ("middle::second", "skipped"),
        ("inner::third", "error"),
        ("outer::fourth", "failure"),
        ("setup.BrokenSuite", "error"),
    ]
    fourth = result.cases[3]
    assert fourth.message == Untrusted("assert 1 == 2")  # first line when the attribute is missing
    assert fourth.details == Untrusted("assert 1 == 2\nsecond line")
    assert result.cases[1].message == Untrusted("not on linux")


def test_each_case_counts_once_by_its_worst_child() -> None:
    result = parse_file(DATA / "worst-child.xml")
    assert [(c.name, c.outcome, text(c.message)) for c in result.cases] == [
        ("skip_then_fail", "failure", "f"),
        ("fail_then_error", "error", "e"),
        ("two_failures", "failure", "first"),
        ("only_skip", "skipped", "why"),
    ]


def test_namespaced_report() -> None:
    result = parse_file(DATA / "namespaced.xml")
    assert [(c.key, c.outcome) for c in result.cases] == [("a", "passed"), ("b", "failure")]


def test_case_ids(tmp_path: Path) -> None:
    report = tmp_path / "ids.xml"
    report.write_text(
        '<testsuite name="s"><testcase classname="pkg.mod" name="test_a"/>'
        '<testcase classname="same" name="same"/><testcase name="bare"/>'
        '<testcase classname="only.class"/></testsuite>'
    )
    ids = [c.key for c in parse_file(report).cases]
    assert ids == ["pkg.mod::test_a", "same", "bare", "only.class"]


def test_location_prefers_project_frames_without_a_file_attribute(tmp_path: Path) -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "src/app/core.py", line 40, in run\n    helper()\n'
        '  File "/usr/lib/python3/site-packages/lib.py", line 7, in helper\n    raise X\n'
        "X: bad\n"
    )
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuite name="s"><testcase classname="c" name="t">'
        f'<error message="X: bad"><![CDATA[{traceback}]]></error></testcase></testsuite>'
    )
    (case,) = parse_file(report).cases
    assert (case.file, case.line, text(case.message)) == ("src/app/core.py", 40, "X: bad")


# --- results, JSON and text -----------------------------------------------------------------


def test_failures_merge_and_summary_json() -> None:
    merged = parse_file(DATA / "nested-suites.xml").merge(parse_file(DATA / "empty.xml"))
    assert merged.files == [str(DATA / "nested-suites.xml"), str(DATA / "empty.xml")]
    assert merged.failures()[0] == Failure(id="inner::third", message="boom", kind="error")
    assert [f.kind for f in merged.failures()] == ["error", "failure", "error"]
    summary = summary_json(merged)
    assert list(summary) == [
        "total",
        "passed",
        "failed",
        "errors",
        "skipped",
        "failures",
        "problems",
    ]
    assert summary["total"] == 5 and summary["failed"] == 1 and summary["errors"] == 2
    assert summary["failures"][1] == {
        "id": "outer::fourth",
        "message": "assert 1 == 2",
        "file": None,
        "line": None,
    }
    assert summary["problems"] == [f"{DATA / 'empty.xml'}: file is empty"]
    json.dumps(summary)


def test_render_text_lists_totals_failures_and_problems() -> None:
    result = parse_files([DATA / "cdata.xml", DATA / "truncated.xml"])
    text = render_text(result)
    lines = text.splitlines()
    assert lines[0] == "2 tests: 1 passed, 1 failed, 0 errors, 0 skipped (2 files)"
    assert lines[1] == (
        "FAILURE tests.test_parse::test_markup (tests/test_parse.py:11): "
        "AssertionError: assert '<b>' == '<i>'"
    )
    assert "    tests/test_parse.py:11: AssertionError" in lines
    assert lines[-2:] == ["Problems:", f"  {DATA / 'truncated.xml'}: " + _TRUNCATED]


_TRUNCATED = "XML ends early (truncated file?) at line 7, column 0"


def test_render_text_is_bounded(tmp_path: Path) -> None:
    report = tmp_path / "many.xml"
    report.write_text(_generated_report(100, fail_every=1, traceback_lines=200))
    text = render_text(parse_file(report), max_failures=3)
    assert text.count("\nFAILURE ") == 3
    assert "... and 97 more failing tests" in text
    assert "[... 176 lines omitted]" in text
    assert len(text) < 10_000


# --- size ---------------------------------------------------------------------------------


def _generated_report(cases: int, fail_every: int = 7, traceback_lines: int = 15) -> str:
    trace = "".join(f'  File "tests/test_gen.py", line {n}, in f\n' for n in range(traceback_lines))
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n<testsuite name="gen">\n']
    for i in range(cases):
        attrs = f'classname="tests.test_gen" name="test_{i}" time="0.001" file="tests/test_gen.py"'
        if i % fail_every == 0:
            failure = f'<failure message="boom {i}"><![CDATA[{trace}E  boom]]></failure>'
            out = f"<system-out>out {i}</system-out>"
            parts.append(f"<testcase {attrs}>{failure}{out}</testcase>\n")
        elif i % 11 == 0:
            parts.append(f'<testcase {attrs}><skipped message="later"/></testcase>\n')
        else:
            parts.append(f"<testcase {attrs}/>\n")
    parts.append("</testsuite>\n</testsuites>\n")
    return "".join(parts)


def test_a_few_thousand_cases_parse_fast(tmp_path: Path) -> None:
    report = tmp_path / "big.xml"
    report.write_text(_generated_report(5000))
    result = parse_file(report)  # its speed is measured in bench/junit_parse.py
    failing = len(range(0, 5000, 7))
    skipped = sum(1 for i in range(5000) if i % 7 and i % 11 == 0)
    assert result.totals() == TestTotals(
        total=5000, passed=5000 - failing - skipped, failed=failing, errors=0, skipped=skipped
    )
    assert result.failing()[1].line == 14  # innermost frame of its traceback


def test_javascript_stacks_locate_the_innermost_project_frame() -> None:
    """Node prints the innermost frame first, and its own `internal/` frames last."""
    failing = parse_file(CORPUS / "dorny-test-reporter" / "jest-junit.xml").failing()
    where = {c.name: (c.file, c.line) for c in failing}
    file, line = where["Failing test"]
    assert file is not None and file.endswith("__tests__\\main.test.js") and line == 10
    file, line = where["Exception in target unit"]
    assert file is not None and file.endswith("lib\\main.js") and line == 2


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("jstemmer-go-junit-report/001-report.xml", "Error message"),  # was "Failed"
        ("jstemmer-go-junit-report/014-report.xml", "panic: init"),  # was "Runtime error"
        ("jstemmer-go-junit-report/013-report.xml", "undefined: x"),  # was "Build error"
        ("gotestyourself-gotestsum/junitxml-report.golden.xml", "failed sub a"),
    ],
)
def test_go_failures_carry_the_go_message(rel: str, message: str) -> None:
    failing = parse_file(CORPUS / rel).failing()
    assert any(case.message == Untrusted(message) for case in failing[:2])


def test_a_pytest_module_named_test_keeps_its_pytest_id(tmp_path: Path) -> None:
    """node's reporter writes classname="test" in suites marked `disabled=`; pytest writes the
    same classname for a root-level test.py, and that id must stay runnable by pytest."""
    report = tmp_path / "pytest.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest" tests="1"><testcase classname="test" '
        'name="test_a"><failure message="x">test.py:3: x</failure></testcase></testsuite>'
        "</testsuites>"
    )
    assert [c.key for c in parse_file(report).cases] == ["test::test_a"]


def test_colour_codes_a_coloured_pytest_run_writes_are_dropped(tmp_path: Path) -> None:
    """A repository with `addopts = --color=yes` (python-humanize) makes pytest colour its
    assertion diffs; its JUnit writer escapes each ESC as the text `#x1B`. The failure the
    model and the report get is the plain diff, not `#x1B[0m#x1B[91m- 1,000...`."""
    import subprocess
    import sys

    (tmp_path / "test_colour.py").write_text(
        "def test_diff():\n    assert 'a\\nb\\nc' == 'a\\nB\\nc'\n"
    )
    report = tmp_path / "junit.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--color=yes",
            f"--junitxml={report}",
            "test_colour.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert "#x1B[" in report.read_text()  # control: the escaped colour codes are there

    [case] = parse_file(report).failing()

    said, details = text(case.message), text(case.details)
    assert "#x1B" not in said + details and "\x1b" not in details
    assert "- B\n" in details and "+ b\n" in details


def test_a_vitest_failure_is_located_by_its_frame_marker() -> None:
    """vitest's JUnit has no file or line attribute: its failure text points with `❯`."""
    text = "AssertionError: expected 5 to be 3\n\n- 3\n+ 5\n\n ❯ src/above.test.js:4:53\n"
    assert locate(None, None, text) == ("src/above.test.js", 4)


def test_render_text_lets_no_control_of_the_report_reach_the_terminal(tmp_path: Path) -> None:
    """`codegen-ci junit` prints a repository's failure messages and tracebacks: a control (XML
    allows the C1 ones, U+009B is the 8-bit CSI) or a bidi override in them is shown, never
    sent to the terminal."""
    report = tmp_path / "hostile.xml"
    report.write_text(
        '<testsuite name="s" tests="1"><testcase classname="t" name="x" file="t.py" line="3">'
        '<failure message="boom &#x9B;2J &#x202E;evil">trace line &#x9B;2J &#x202E;x'
        "\nlast line</failure></testcase></testsuite>"
    )
    text = render_text(parse_file(report))
    assert "\x9b" not in text and "\u202e" not in text, text
    assert "boom" in text and "last line" in text


def test_a_typecheck_run_as_a_test_command_gets_no_junit_advice(tmp_path: Path) -> None:
    """commander.js: `npm run check:type:ts` (`tsd && tsc -p tsconfig.ts.json`), a test
    command beside `node --test`, was told to "write a JUnit XML report"."""
    scripts = {"check:type:ts": "tsd && tsc -p tsconfig.ts.json", "test": "jest"}
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts}))

    assert junit_hint("npm run check:type:ts", tmp_path).startswith("a typecheck, not a test")
    assert junit_hint("npm test", tmp_path).startswith("jest: ")  # the runner's own advice


def test_a_report_written_outside_the_repository_is_advised_inside(tmp_path: Path) -> None:
    """hashicorp/go-version's CI writes `--junitfile $TEST_RESULTS/...` (/tmp/test-results):
    the advice was to list `/tmp/test-results/gotestsum-report.xml` in `validation.junit`,
    "a glob relative to the repository", which no glob can match."""
    outside = "gotestsum --junitfile /tmp/test-results/report.xml -- ./..."
    inside = "gotestsum --junitfile build/junit.xml -- ./..."

    hint = junit_hint(outside, tmp_path)

    assert hint.startswith("the command writes its JUnit outside the repository"), hint
    assert "`/tmp/test-results/report.xml`" in hint and "write it inside" in hint
    assert "list `build/junit.xml` in `validation.junit`" in junit_hint(inside, tmp_path)
