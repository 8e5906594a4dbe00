"""Benchmark 13: what measuring changed-line coverage costs against a plain test run.

A project of `modules` modules with `tests_per_module` tests each (each test does a little
arithmetic, as unit tests do), every module importing `pkg/core.py`. The change is one module
(`changed="one"`: imported by one test file in `modules`), the core every test imports
(`"shared"`), or one module every test file imports and runs (`"hot"`: each test's loop runs
in the changed file). The same pytest command runs plain and as gate/coverage.py runs it
(gate/codegen_cov_run.py in the tests' interpreter: on CPython 3.10/3.11 slipcover records the
changed files' lines and coverage.py writes the report; elsewhere `coverage run
--include=<changed files> -m pytest`, then `coverage xml`, with the `codegen_cov_select`
plugin loaded, which under coverage.py's C tracer keeps the tests that import the change),
`repeats` times each, alternating; the figure is the ratio of the medians. `tracer=True`
removes the tool's slipcover from the run's folder, so that 3.11 measures with coverage.py's
C tracer as before slipcover. The claim (issue 34): at most 1.3x.

`go_coverage_cost`: the same for a Go module (`go test ./...` against runners/go.py's
`go test -coverprofile=... -coverpkg=<the changed package> ./...`), the build cache warm for
both, `-count=1` so that neither reads a cached test result."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen_ci.gate import project_source
from codegen_ci.gate.coverage import PLUGIN_FOLDER, install_plugins
from codegen_ci.runners import _python
from codegen_ci.runners import go as go_runner

MODULE = """\
from pkg.core import START


def work(n):
    total = START
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


def children_cpu() -> float:
    """CPU seconds of this process's finished children: the commands' own work, which the
    neighbours' load on a shared machine leaves as it is (wall time does not)."""
    t = os.times()
    return t.children_user + t.children_system


def coverage_cost(
    modules: int = 40,
    tests_per_module: int = 10,
    repeats: int = 5,
    python: str = "",
    changed: str = "one",
    tracer: bool = False,
) -> dict[str, Any]:
    """`python`: the interpreter whose pytest and coverage.py run (default: this one)."""
    python = python or sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as tmp:
        root = Path(tmp) / "project"
        (root / "pkg").mkdir(parents=True)
        (root / "tests").mkdir()
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "core.py").write_text("START = 0\n")
        for m in range(modules):
            (root / "pkg" / f"mod{m}.py").write_text(MODULE)
            tests = "".join(TEST.format(t=t, n=2000 + t) for t in range(tests_per_module))
            imported = IMPORT.format(m=0 if changed == "hot" else m)
            (root / "tests" / f"test_mod{m}.py").write_text(imported + tests)
        plain = f"{python} -m pytest -q -p no:cacheprovider tests"
        io_dir = Path(tmp) / "io"
        io_dir.mkdir()
        sources = ["pkg/core.py" if changed == "shared" else "pkg/mod0.py"]
        covered = _python.coverage_command(
            plain,
            sources,
            io_dir,
            root,
            os.environ,
            lambda c: project_source.command_python(c, os.environ, root),
        )
        assert covered is not None
        plugin_dir = Path(tmp) / "tool" / PLUGIN_FOLDER
        install_plugins(_python.PLUGINS, plugin_dir)
        env = _python.coverage_env(os.environ, plugin_dir, sources)
        if tracer:  # coverage.py's tracer, as before slipcover
            shutil.rmtree(Path(tmp) / "tool" / "coverage_plugin" / "vendor", ignore_errors=True)
        recorder: list[str] = []
        times: dict[str, list[float]] = {"plain": [], "coverage": []}
        cpu: dict[str, list[float]] = {"plain": [], "coverage": []}
        for _ in range(repeats):
            for name, command, with_env in (
                ("plain", plain, dict(os.environ)),
                ("coverage", covered, env),
            ):
                started, cpu_started = time.perf_counter(), children_cpu()
                done = subprocess.run(
                    command, shell=True, cwd=root, check=True, capture_output=True, env=with_env
                )
                times[name].append(time.perf_counter() - started)
                cpu[name].append(children_cpu() - cpu_started)
                if name == "coverage":
                    recorder.append("slipcover" if b"slipcover" in done.stderr else "coverage.py")
        plain_s = statistics.median(times["plain"])
        coverage_s = statistics.median(times["coverage"])
        plain_cpu = statistics.median(cpu["plain"])
        coverage_cpu = statistics.median(cpu["coverage"])
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {
            "python": version,
            "tests": modules * tests_per_module,
            "changed": changed,
            "recorder": recorder[0],
            "repeats": repeats,
            "plain_s": round(plain_s, 3),
            "coverage_s": round(coverage_s, 3),
            "ratio": round(coverage_s / plain_s, 3),
            "plain_cpu_s": round(plain_cpu, 3),
            "coverage_cpu_s": round(coverage_cpu, 3),
            "cpu_ratio": round(coverage_cpu / plain_cpu, 3),
            "report_written": (io_dir / "coverage.xml").is_file(),
        }


GO_MODULE = """\
package p{m}

func Work(n int) int {{
\ttotal := 0
\tfor i := 0; i < n; i++ {{
\t\tif i%3 != 0 {{
\t\t\ttotal += i * i
\t\t}} else {{
\t\t\ttotal -= i
\t\t}}
\t}}
\treturn total
}}
"""
GO_TEST = """\
package p{m}

import "testing"

func TestWork(t *testing.T) {{
\tfor k := 0; k < {tests}; k++ {{
\t\tif Work(20000+k) != Work(20000+k) {{
\t\t\tt.Fatal("not the same")
\t\t}}
\t}}
}}
"""


def go_coverage_cost(packages: int = 10, tests: int = 200, repeats: int = 3) -> dict[str, Any]:
    """`go test ./...` plain and with runners/go.py's flags (package p0 changed)."""
    with tempfile.TemporaryDirectory(prefix="bench-go-coverage-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "go.mod").write_text("module example.com/bench\n\ngo 1.19\n")
        for m in range(packages):
            (root / f"p{m}").mkdir()
            (root / f"p{m}" / "work.go").write_text(GO_MODULE.format(m=m))
            (root / f"p{m}" / "work_test.go").write_text(GO_TEST.format(m=m, tests=tests))
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
        env.setdefault("GOCACHE", str(Path(tmp) / "gocache"))
        plain = "go test -count=1 ./..."
        mods = go_runner.modules(
            lambda rel: (root / rel).read_text() if (root / rel).is_file() else None,
            ["p0/work.go"],
        )
        covered = go_runner.coverage_command(
            plain, go_runner.packages(["p0/work.go"], mods), Path(tmp)
        )
        assert covered is not None
        times: dict[str, list[float]] = {"plain": [], "coverage": [], "first_coverage": []}
        for command in (plain, covered):  # the build cache warm for both
            started = time.perf_counter()
            subprocess.run(command, shell=True, cwd=root, check=True, capture_output=True, env=env)
            if command == covered:
                times["first_coverage"].append(time.perf_counter() - started)
        cpu: dict[str, list[float]] = {"plain": [], "coverage": []}
        for _ in range(repeats):
            for name, command in (("plain", plain), ("coverage", covered)):
                started, cpu_started = time.perf_counter(), children_cpu()
                subprocess.run(
                    command, shell=True, cwd=root, check=True, capture_output=True, env=env
                )
                times[name].append(time.perf_counter() - started)
                cpu[name].append(children_cpu() - cpu_started)
        plain_s = statistics.median(times["plain"])
        coverage_s = statistics.median(times["coverage"])
        plain_cpu = statistics.median(cpu["plain"])
        coverage_cpu = statistics.median(cpu["coverage"])
        profile = (Path(tmp) / go_runner.COVER_PROFILE).read_text()
        return {
            "packages": packages,
            "repeats": repeats,
            "plain_s": round(plain_s, 3),
            "coverage_s": round(coverage_s, 3),
            "first_coverage_s": round(times["first_coverage"][0], 3),
            "ratio": round(coverage_s / plain_s, 3),
            "plain_cpu_s": round(plain_cpu, 3),
            "coverage_cpu_s": round(coverage_cpu, 3),
            "cpu_ratio": round(coverage_cpu / plain_cpu, 3),
            "lcov_lines": go_runner.profile_to_lcov(profile, mods).count("DA:"),
        }


if __name__ == "__main__":
    if sys.argv[1:2] == ["go"]:
        print(go_coverage_cost())
    else:
        args = [a for a in sys.argv[1:] if a != "--tracer"]
        python = args[0] if args else ""
        for changed in ("one", "shared", "hot"):
            print(coverage_cost(python=python, changed=changed, tracer="--tracer" in sys.argv))
