"""Benchmark 14: what measuring changed-line coverage costs for jest, vitest and `node --test`
against a plain run of the same command.

A project of `modules` modules with `tests_per_module` tests each (each test runs a small
loop, as unit tests do); the change is one module. The plain command and the one
its runner's `coverage_plan` makes of it run `repeats` times each, alternating; the figure
is the ratio of the medians. The claim (issue 34): at most 1.3x.

`python -m bench.coverage_cost_node VITEST_NODE_MODULES [JEST_NODE_MODULES]`: node_modules
folders holding vitest with @vitest/coverage-v8, and jest (installed beforehand: the
benchmark installs nothing). `node --test` needs only Node."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci import runners
from codegen_ci.gate.coverage import coverage_ask
from codegen_ci.runners import CoveragePlan

MODULE = """\
function work(n) {
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (i % 3) {
      total += i * i;
    } else {
      total -= i;
    }
  }
  return total;
}
"""
RUNNERS: dict[str, dict[str, str]] = {
    "vitest": {
        "command": "npx vitest run --reporter=junit --outputFile.junit=junit.xml",
        "package": '{"name": "bench", "private": true, "type": "module"}',
        "module": MODULE + "export { work };\n",
        "head": 'import { expect, test } from "vitest";\n'
        'import { work } from "../src/mod{m}.js";\n',
        "test": "test('work {t}', () => expect(work({n})).toBe(work({n})));\n",
        "suffix": ".test.js",
    },
    "jest": {
        "command": "npx jest --ci",
        "package": '{"name": "bench", "private": true}',
        "module": MODULE + "module.exports = { work };\n",
        "head": 'const { work } = require("../src/mod{m}.js");\n',
        "test": "test('work {t}', () => expect(work({n})).toBe(work({n})));\n",
        "suffix": ".test.js",
    },
    "node": {
        "command": "node --test --test-reporter=junit --test-reporter-destination=junit.xml",
        "package": '{"name": "bench", "private": true, "type": "module"}',
        "module": MODULE + "export { work };\n",
        "head": 'import { test } from "node:test";\nimport assert from "node:assert";\n'
        'import { work } from "../src/mod{m}.js";\n',
        "test": "test('work {t}', () => assert.equal(work({n}), work({n})));\n",
        "suffix": ".test.mjs",
    },
}


def coverage_cost_node(
    runner: str,
    node_modules: Path | None,
    modules: int = 20,
    tests_per_module: int = 10,
    repeats: int = 3,
) -> dict[str, Any]:
    shape = RUNNERS[runner]
    with tempfile.TemporaryDirectory(prefix=f"bench-coverage-{runner}-") as tmp:
        root = Path(tmp) / "project"
        (root / "src").mkdir(parents=True)
        (root / "test").mkdir()
        (root / "package.json").write_text(shape["package"] + "\n")
        if node_modules is not None:
            (root / "node_modules").symlink_to(node_modules)
        for m in range(modules):
            (root / "src" / f"mod{m}.js").write_text(shape["module"])
            tests = "".join(
                shape["test"].replace("{t}", str(t)).replace("{n}", str(2000 + t))
                for t in range(tests_per_module)
            )
            head = shape["head"].replace("{m}", str(m))
            (root / "test" / f"mod{m}{shape['suffix']}").write_text(head + tests)
        io_dir = Path(tmp) / "io"
        io_dir.mkdir()
        plain = shape["command"]
        ask = coverage_ask(root, ["src/mod0.js"], io_dir, io_dir / "tool", os.environ)
        covered = runners.coverage_plan(plain, ask)
        assert isinstance(covered, CoveragePlan), covered
        times: dict[str, list[float]] = {"plain": [], "coverage": []}
        for _ in range(repeats):
            for name, command in (("plain", plain), ("coverage", covered.command)):
                started = time.perf_counter()
                subprocess.run(command, shell=True, cwd=root, check=True, capture_output=True)
                times[name].append(time.perf_counter() - started)
        plain_s = statistics.median(times["plain"])
        coverage_s = statistics.median(times["coverage"])
        return {
            "runner": runner,
            "tests": modules * tests_per_module,
            "repeats": repeats,
            "plain_s": round(plain_s, 3),
            "coverage_s": round(coverage_s, 3),
            "ratio": round(coverage_s / plain_s, 3),
            "report_written": (io_dir / covered.report).is_file(),
        }


if __name__ == "__main__":
    vitest = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    jest = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    print(coverage_cost_node("node", None))
    if vitest:
        print(coverage_cost_node("vitest", vitest))
    if jest:
        print(coverage_cost_node("jest", jest))
