"""Changed lines run by the tests: diff-cover over a Cobertura report and the change's diff."""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as safe_etree
from diff_cover.violationsreporters.violations_reporter import LcovCoverageReporter

from codegen_ci.gate.coverage import changed_lines, diff_cover_verdict, failed, parse_lcov, ranges
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.workspace.proc import ProcResult

COBERTURA = """<?xml version="1.0" ?>
<coverage version="7.0" line-rate="0.5">
  <sources><source>{root}</source></sources>
  <packages><package name="pkg" line-rate="0.5"><classes>
    <class name="calc.py" filename="pkg/calc.py" line-rate="0.5">
      <methods/>
      <lines>
        <line number="1" hits="1"/>
        <line number="2" hits="1"/>
        <line number="4" hits="0"/>
        <line number="5" hits="0"/>
        <line number="6" hits="0"/>
        <line number="8" hits="0"/>
      </lines>
    </class>
  </classes></package></packages>
</coverage>
"""
DIFF = """\
diff --git a/pkg/calc.py b/pkg/calc.py
index 1111111..2222222 100644
--- a/pkg/calc.py
+++ b/pkg/calc.py
@@ -1,3 +1,8 @@
 def add(a, b):
     return a + b
+
+def sub(a, b):
+    if a:
+        return a - b
+
+X = 1
"""


def test_changed_lines_no_test_ran_are_named_as_ranges(tmp_path: Path) -> None:
    root = safe_etree.fromstring(COBERTURA.format(root=tmp_path))
    lines = changed_lines(root, DIFF, tmp_path)
    # changed: 3 (blank), 4, 5, 6, 7 (blank), 8; executable and changed: 4, 5, 6, 8
    assert (lines.measured, lines.covered, lines.total) == (True, 0, 4)
    assert lines.uncovered == [Untrusted(u) for u in ["pkg/calc.py:4-6", "pkg/calc.py:8"]]


def test_ranges_join_consecutive_lines() -> None:
    assert ranges([44, 40, 41, 42, 42]) == ["40-42", "44"]
    assert ranges([]) == []


def test_a_coverage_run_that_did_not_pass_gives_a_reason_not_figures(tmp_path: Path) -> None:
    run = ProcResult("cov", 3, 1.0, False, tmp_path / "log")
    lines = failed(run)
    assert not lines.measured and "did not pass (exit 3)" in lines.reason
    timed_out = ProcResult("cov", None, 9.0, True, tmp_path / "log")
    assert "did not pass (timed out)" in failed(timed_out).reason


# -- LCov (jest, vitest, node --test; Go's profile converted) --------------------------------

LCOV = """\
TN:
SF:{root}/src/calc.js
FN:1,clamp
FNDA:1,clamp
DA:1,1
DA:2,1
DA:3,0
DA:4,0
DA:5,1
LF:5
LH:3
BRDA:2,0,0,1
BRDA:3,1,0,0
end_of_record
SF:src/other.js
DA:1,0
end_of_record
"""
LCOV_DIFF = """\
diff --git a/src/calc.js b/src/calc.js
index 1111111..2222222 100644
--- a/src/calc.js
+++ b/src/calc.js
@@ -1,3 +1,5 @@
 export function clamp(v, lo, hi) {
   if (v < lo) return lo;
+  if (v > hi) {
+    return hi;
+  }
   return v;
 }
"""


def test_the_uncovered_changed_lines_of_an_lcov_report_are_named(tmp_path: Path) -> None:
    """An absolute `SF:` path under the worktree is matched to the diff's relative one."""
    data = LCOV.format(root=tmp_path).replace("end_of_record\n", "end_of_record\n\n")
    parsed = parse_lcov(data, tmp_path)  # blank lines, too
    report = LcovCoverageReporter([parsed], src_roots=[str(tmp_path)])
    lines = diff_cover_verdict(report, LCOV_DIFF, tmp_path)
    assert (lines.measured, lines.covered, lines.total) == (True, 1, 3)
    assert lines.uncovered == [Untrusted(u) for u in ["src/calc.js:3-4"]]


def test_lcov_paths_elsewhere_are_kept_as_written(tmp_path: Path) -> None:
    """A runner rooted in a monorepo package names `src/calc.js` for `pkg/a/src/calc.js`
    (the plan's `unnamed` says so)."""
    parsed = parse_lcov(LCOV.format(root=tmp_path), tmp_path)
    assert sorted(parsed) == ["src/calc.js", "src/other.js"]


def test_lcov_with_a_line_diff_cover_does_not_know_is_an_error(tmp_path: Path) -> None:
    """The caller turns it into a reason (a report the tests could shape)."""
    try:
        parse_lcov("SF:a.js\nDA:x\nend_of_record\n", tmp_path)
    except ValueError:
        return
    raise AssertionError("expected ValueError")


def test_a_shell_line_is_said_to_be_why_coverage_was_not_measured() -> None:
    """A pytest command piped on: no runner wraps a shell line, and "coverage is measured for
    ... pytest" said of a pytest command misled. jmespath's `cd tests && ../.venv/bin/python
    -m pytest` is no shell line any more: a plain command run from a folder (base.py's
    `in_folder`; tests/gate/test_folder_commands.py)."""
    from codegen_ci.gate.coverage import NOT_MEASURED, not_measured

    said = not_measured("cd tests && ../.venv/bin/python -m pytest --cov jmespath | tee log")
    assert "shell line" in said and "pytest" not in said
    assert not_measured("make test") == NOT_MEASURED  # a plain command no runner measures
    assert not_measured("cd web && make test") == NOT_MEASURED  # the same, from a folder
