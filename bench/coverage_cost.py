"""Benchmark 12: what measuring changed-line coverage costs against a plain test run.

A project of `modules` modules with `tests_per_module` tests each (each test does a little
arithmetic, as unit tests do); the change is one module. The same pytest command runs plain
and as gate/coverage.py runs it (`python -m coverage run --include=<changed files> -m pytest`,
then `coverage xml`), `repeats` times each, alternating; the figure is the ratio of the
medians. The claim (issue 34): at most 1.3x."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.gate.coverage_python import coverage_command

MODULE = """\
def work(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i * i
        else:
            total -= i
    return total
"""
IMPORT = "from pkg.mod{m} import work\n"
TEST = """

def test_work_{t}():
    assert work({n}) == work({n})
"""


def coverage_cost(
    modules: int = 40, tests_per_module: int = 10, repeats: int = 5, python: str = ""
) -> dict[str, Any]:
    """`python`: the interpreter whose pytest and coverage.py run (default: this one)."""
    python = python or sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as tmp:
        root = Path(tmp) / "project"
        (root / "pkg").mkdir(parents=True)
        (root / "tests").mkdir()
        (root / "pkg" / "__init__.py").write_text("")
        for m in range(modules):
            (root / "pkg" / f"mod{m}.py").write_text(MODULE)
            tests = "".join(TEST.format(t=t, n=2000 + t) for t in range(tests_per_module))
            (root / "tests" / f"test_mod{m}.py").write_text(IMPORT.format(m=m) + tests)
        plain = f"{python} -m pytest -q -p no:cacheprovider tests"
        io_dir = Path(tmp) / "io"
        io_dir.mkdir()
        covered = coverage_command(plain, ["pkg/mod0.py"], io_dir, root, os.environ)
        assert covered is not None
        times: dict[str, list[float]] = {"plain": [], "coverage": []}
        for _ in range(repeats):
            for name, command in (("plain", plain), ("coverage", covered)):
                started = time.perf_counter()
                subprocess.run(command, shell=True, cwd=root, check=True, capture_output=True)
                times[name].append(time.perf_counter() - started)
        plain_s = statistics.median(times["plain"])
        coverage_s = statistics.median(times["coverage"])
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {
            "python": version,
            "tests": modules * tests_per_module,
            "repeats": repeats,
            "plain_s": round(plain_s, 3),
            "coverage_s": round(coverage_s, 3),
            "ratio": round(coverage_s / plain_s, 3),
            "report_written": (io_dir / "coverage.xml").is_file(),
        }


if __name__ == "__main__":
    print(coverage_cost(python=sys.argv[1] if len(sys.argv) > 1 else ""))
