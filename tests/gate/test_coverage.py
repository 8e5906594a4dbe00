"""Changed lines run by the tests: diff-cover over a Cobertura report and the change's diff."""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as safe_etree

from codegen_ci.gate.coverage import changed_lines, failed, ranges
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
