"""Changed lines run by jest, vitest and node's test runner: the coverage command each gets
(gate/coverage_node.py) and diff-cover's verdict over their LCov."""

from __future__ import annotations

import json
from pathlib import Path

from codegen_ci.gate.coverage import diff_cover_verdict
from codegen_ci.gate.coverage_node import NodePlan, lcov_report, plan
from codegen_ci.security.untrusted import Untrusted

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
DIFF = """\
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


def package(tmp_path: Path, scripts: dict[str, str], *deps: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "package.json").write_text(json.dumps({"name": "x", "scripts": scripts}))
    for dep in deps:
        (tmp_path / "node_modules" / dep).mkdir(parents=True)
    return tmp_path


def test_the_uncovered_changed_lines_of_an_lcov_report_are_named(tmp_path: Path) -> None:
    """An absolute `SF:` path under the worktree is matched to the diff's relative one."""
    data = LCOV.format(root=tmp_path).replace("end_of_record\n", "end_of_record\n\n")
    report = lcov_report(data.encode(), tmp_path, ["src/calc.js"])  # blank lines, too
    assert report is not None
    lines = diff_cover_verdict(report, DIFF, tmp_path)
    assert (lines.measured, lines.covered, lines.total) == (True, 1, 3)
    assert lines.uncovered == [Untrusted(u) for u in ["src/calc.js:3-4"]]


def test_an_lcov_report_naming_none_of_the_changed_files_is_none(tmp_path: Path) -> None:
    """A runner rooted in a monorepo package names `src/calc.js` for `pkg/a/src/calc.js`."""
    data = LCOV.format(root=tmp_path).encode()
    assert lcov_report(data, tmp_path, ["pkg/a/src/calc.js"]) is None


def test_lcov_with_a_line_diff_cover_does_not_know_is_an_error(tmp_path: Path) -> None:
    """The caller turns it into a reason (a report the tests could shape)."""
    try:
        lcov_report(b"SF:a.js\nDA:x\nend_of_record\n", tmp_path, ["a.js"])
    except ValueError:
        return
    raise AssertionError("expected ValueError")


def test_jest_run_directly_gets_coverage_of_the_changed_sources_only(tmp_path: Path) -> None:
    """Flags are appended to the command as written: `$OUT` stays the shell's."""
    change = ["src/price.ts", "src/price.test.ts", "README.md"]
    found = plan('npx jest --outputFile="$OUT/x.json"', change, tmp_path, Path("/io"))
    assert isinstance(found, NodePlan)
    assert found.command.startswith('npx jest --outputFile="$OUT/x.json" --coverage ')
    found = plan("npx jest --ci", change, package(tmp_path, {}), Path("/io"))
    assert found == NodePlan(
        runner="jest",
        command="npx jest --ci --coverage --coverageReporters=lcovonly "
        "--coverageDirectory=/io/jest --collectCoverageFrom=src/price.ts",
        report="jest/lcov.info",
        sources=("src/price.ts",),
    )


def test_npm_test_gets_the_flags_after_a_double_dash(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "tsc && jest --ci --reporters=jest-junit"})
    found = plan("npm test", ["src/a.ts"], repo, Path("/io"))
    assert isinstance(found, NodePlan) and found.runner == "jest"
    assert found.command.startswith("npm test -- --coverage --coverageReporters=lcovonly ")
    found = plan("CI=1 npm test", ["src/a.ts"], repo, Path("/io"))
    assert isinstance(found, NodePlan) and found.command.startswith("CI=1 npm test -- --coverage ")
    found = plan("pnpm run unit", ["src/a.ts"], package(tmp_path, {"unit": "jest"}), Path("/io"))
    assert isinstance(found, NodePlan) and found.command.startswith("pnpm run unit --coverage ")


def test_a_script_that_does_not_end_with_its_runner_is_not_measured(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "jest --ci && echo done", "t2": "jest | tee out"})
    assert "does not end by running jest" in str(plan("npm test", ["a.js"], repo, Path("/io")))
    assert "does not end by running jest" in str(plan("npm run t2", ["a.js"], repo, Path("/io")))
    assert "pipeline or chain" in str(plan("npx jest && rm x", ["a.js"], repo, Path("/io")))


def test_vitest_v8_coverage_needs_its_package_in_the_repository(tmp_path: Path) -> None:
    command = "npx vitest run --reporter=junit"
    missing = plan(command, ["src/calc.js"], package(tmp_path / "a", {}), Path("/io"))
    assert isinstance(missing, str) and "@vitest/coverage-v8" in missing
    assert "installs nothing" in missing
    repo = package(tmp_path / "b", {}, "@vitest/coverage-v8")
    found = plan(command, ["src/calc.js"], repo, Path("/io"))
    assert found == NodePlan(
        runner="vitest",
        command=f"{command} --coverage.enabled --coverage.provider=v8 "
        "--coverage.reporter=lcovonly --coverage.reportsDirectory=/io/vitest "
        "--coverage.include=src/calc.js",
        report="vitest/lcov.info",
        sources=("src/calc.js",),
    )
    istanbul = package(tmp_path / "c", {}, "@vitest/coverage-istanbul")
    found = plan(command, ["src/calc.js"], istanbul, Path("/io"))
    assert isinstance(found, NodePlan) and "--coverage.provider=istanbul" in found.command


def test_node_test_gets_its_flags_before_the_test_files(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "node --test", "files": "node --test test/a.test.js"})
    found = plan("node --test test/", ["lib/a.mjs"], repo, Path("/io"))
    assert isinstance(found, NodePlan)
    assert plan("FOO='a b' /usr/bin/node --test x", ["a.js"], repo, Path("/io")) == NodePlan(
        runner="node",
        command=f"FOO='a b' /usr/bin/node {found.command[5:-13]} --test x",
        report="lcov.info",
        sources=("a.js",),
    )
    assert isinstance(found, NodePlan) and found.report == "lcov.info"
    assert found.command == (
        "node --experimental-test-coverage --test-reporter=spec "
        "--test-reporter-destination=stdout --test-reporter=lcov "
        "--test-reporter-destination=/io/lcov.info --test test/"
    )
    found = plan("npm test", ["lib/a.mjs"], repo, Path("/io"))
    assert isinstance(found, NodePlan)
    assert found.command.startswith("npm test -- --experimental-test-coverage ")
    assert "Node reads options after them" in str(
        plan("npm run files", ["lib/a.mjs"], repo, Path("/io"))
    )


def test_other_commands_are_another_runners_business(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "mocha"})
    assert plan("python -m pytest", ["a.py"], repo, Path("/io")) is None
    assert plan("npm test", ["a.js"], repo, Path("/io")) is None
    assert plan("go test ./...", ["a.go"], repo, Path("/io")) is None


def test_a_change_without_javascript_sources_is_said_so(tmp_path: Path) -> None:
    found = plan("npx jest", ["src/a.test.ts", "README.md"], tmp_path, Path("/io"))
    assert found == "the change has no JavaScript or TypeScript source file to measure"
