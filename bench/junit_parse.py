"""Benchmark 4: parse time and peak memory for a large JUnit report.

The report is generated (pytest-shaped: mostly passing cases, every 20th failing with a
traceback, captured output on some) and parsed with `gate.junit.parse.parse_file` in a fresh
subprocess, which reports its own wall time and its peak RSS before and after parsing."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from codegen_ci.gate.junit.parse import DEFAULT_MAX_BYTES

PROBE = """
import json, resource, sys, time
from pathlib import Path
from codegen_ci.gate.junit.parse import parse_file
traced = sys.argv[2] == "traced"
if traced:
    import tracemalloc
    tracemalloc.start()
# resident now (statm: pages), not ru_maxrss: the interpreter's start-up may have peaked higher
before = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() // 1024
started, cpu = time.perf_counter(), time.process_time()
result = parse_file(Path(sys.argv[1]))
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kept, top = tracemalloc.get_traced_memory() if traced else (0, 0)
print(json.dumps({"seconds": elapsed, "cpu_seconds": cpu, "rss_before_kb": before,
                  "rss_peak_kb": peak, "kept_bytes": kept, "traced_peak_bytes": top,
                  "cases": len(result.cases), "failing": len(result.failing()),
                  "problems": result.problems}))
"""
FRAME = '  File "src/pkg/module_{n}.py", line {line}, in function_{n}\n    value = compute(x)\n'
TRACEBACK = "".join(FRAME.format(n=n, line=n * 7) for n in range(12)) + "AssertionError: 41\n"


def junit_parse(megabytes: float = 50) -> dict[str, Any]:
    """Time and peak RSS for a `megabytes` report; tracemalloc on a tenth of it tells what the
    parse holds at its peak beyond the cases it returns (a DOM would be many times the file)."""
    with tempfile.TemporaryDirectory(prefix="bench-junit-") as tmp_name:
        path, small = Path(tmp_name) / "report.xml", Path(tmp_name) / "small.xml"
        written = write_report(path, int(megabytes * 1024 * 1024))
        write_report(small, int(megabytes * 1024 * 1024 / 10))
        probe, traced = _probe(path, traced=False), _probe(small, traced=True)
    size_mb = written / 1024 / 1024
    growth_mb = (probe["rss_peak_kb"] - probe["rss_before_kb"]) / 1024
    transient = traced["traced_peak_bytes"] / max(1, traced["kept_bytes"])
    return {
        "file_mb": round(size_mb, 1),
        "cases": probe["cases"],
        "failing": probe["failing"],
        "problems": len(probe["problems"]),
        "parse_s": round(probe["seconds"], 2),
        "parse_cpu_s": round(probe["cpu_seconds"], 2),
        "mb_per_cpu_s": round(size_mb / probe["cpu_seconds"], 1),
        "rss_before_mb": round(probe["rss_before_kb"] / 1024, 1),
        "rss_peak_mb": round(probe["rss_peak_kb"] / 1024, 1),
        "rss_growth_mb": round(growth_mb, 1),
        "kept_bytes_per_case": round(traced["kept_bytes"] / max(1, traced["cases"])),
        "peak_over_kept": round(transient, 2),
        "target": "streamed: peak memory <= 1.5 x the cases it returns; no parse problems",
        "holds": transient <= 1.5 and not probe["problems"] and written <= DEFAULT_MAX_BYTES,
    }


def _probe(path: Path, *, traced: bool) -> dict[str, Any]:
    argv = [sys.executable, "-c", PROBE, str(path), "traced" if traced else "plain"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    probe: dict[str, Any] = json.loads(done.stdout)
    return probe


def write_report(path: Path, size: int) -> int:
    """A pytest-style report of about `size` bytes; returns the bytes written."""
    written = 0
    with path.open("w", encoding="utf-8") as out:
        head = '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">\n'
        out.write(head)
        written += len(head)
        n = 0
        while written < size - 100:
            case = _case(n)
            out.write(case)
            written += len(case)
            n += 1
        tail = "</testsuite></testsuites>\n"
        out.write(tail)
        written += len(tail)
    return written


def _case(n: int) -> str:
    module, name = f"tests.test_module_{n // 100:04d}", f"test_case_{n}"
    attrs = f'classname="{module}" name="{name}" file="tests/test_module_{n // 100:04d}.py" '
    attrs += f'line="{n % 100 * 5}" time="0.00{n % 10}"'
    if n % 20 == 0:
        return (
            f'<testcase {attrs}><failure message="AssertionError: assert 41 == 42">'
            f"{TRACEBACK}</failure><system-out>{'captured line&#10;' * 20}</system-out>"
            "</testcase>\n"
        )
    if n % 7 == 0:
        log = "log line &amp; more&#10;" * 10
        return f"<testcase {attrs}><system-out>{log}</system-out></testcase>\n"
    return f"<testcase {attrs} />\n"
