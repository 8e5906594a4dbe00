"""Run every benchmark, print a table, write bench/results/latest.json.

python bench/run.py            # the documented configuration (a few minutes on 2 cores)
python bench/run.py --quick    # a small one (under a minute)
python bench/run.py --only overhead,prompt_growth,cache_cost
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from bench.cache_cost import cache_cost  # noqa: E402
from bench.candidates import candidates_tradeoff  # noqa: E402
from bench.command_caps import command_caps  # noqa: E402
from bench.coverage_cost import coverage_cost, go_coverage_cost  # noqa: E402
from bench.dependency_copies import dependency_copies  # noqa: E402
from bench.junit_parse import junit_parse  # noqa: E402
from bench.overhead import harness_overhead  # noqa: E402
from bench.prompt_growth import prompt_growth  # noqa: E402
from bench.redaction import redaction  # noqa: E402
from bench.sandbox_cost import sandbox_cost  # noqa: E402
from bench.startup import startup  # noqa: E402
from bench.validation_cost import LONG, validation_cost  # noqa: E402
from bench.warm_caches import warm_caches  # noqa: E402

Result = dict[str, Any]
BENCHMARKS: dict[str, Callable[..., Result]] = {
    "startup": startup,
    "overhead": harness_overhead,
    "prompt_growth": prompt_growth,
    "validation": validation_cost,
    "validation_long": validation_cost,
    "junit": junit_parse,
    "redaction": redaction,
    "caps": command_caps,
    "cache_cost": cache_cost,
    "sandbox": sandbox_cost,
    "warm_caches": warm_caches,
    "candidates": candidates_tradeoff,
    "coverage": coverage_cost,
    "coverage_go": go_coverage_cost,
    "dependency_copies": dependency_copies,
}
FULL: dict[str, dict[str, Any]] = {
    "startup": {"runs": 10},
    "overhead": {"steps": 200, "repeats": 2},
    "prompt_growth": {"calls": 300},
    "validation": {"rounds": 5, "slow_tests": 40, "sleep_s": 0.05},
    "validation_long": LONG,
    "junit": {"megabytes": 50},
    "redaction": {"megabytes": 5},
    "caps": {"calls": 40, "flood_mb": 200},
    "cache_cost": {"calls": (20, 60, 300)},
    "sandbox": {"calls": 20, "files": 5000},
    "warm_caches": {"runs": 7},
    "candidates": {"test_sleep_s": 1.0, "repeats": 2},
    "coverage": {"modules": 40, "tests_per_module": 10, "repeats": 5},
    "coverage_go": {"packages": 10, "tests": 200, "repeats": 3},
    "dependency_copies": {"files": 26_600, "packages": 1_300},
}
QUICK: dict[str, dict[str, Any]] = {
    "startup": {"runs": 3},
    "overhead": {"steps": 30},
    "prompt_growth": {"calls": 60},
    "validation": {"rounds": 3, "slow_tests": 10, "sleep_s": 0.02},
    "validation_long": {"rounds": 3, "slow_tests": 10, "sleep_s": 0.1},
    "junit": {"megabytes": 5},
    "redaction": {"megabytes": 1},
    "caps": {"calls": 10, "flood_mb": 20},
    "warm_caches": {"runs": 3},
    "cache_cost": {"calls": (20, 60)},
    "sandbox": {"calls": 5, "files": 500},
    "candidates": {"test_sleep_s": 0.2},
    "coverage": {"modules": 10, "tests_per_module": 5, "repeats": 2},
    "coverage_go": {"packages": 2, "tests": 20, "repeats": 1},
    "dependency_copies": {"files": 2_000, "packages": 100},
}


def summary(name: str, r: Result) -> str:
    """One line of the headline figures of a benchmark's result."""
    if "error" in r:
        return "error: " + str(r["error"]).splitlines()[-1][:80]
    lines: dict[str, Callable[[], str]] = {
        "startup": lambda: (
            f"--help {r['help_ms']:.0f} ms vs import openai {r['import_openai_ms']:.0f} ms "
            f"({r['ratio']:.2f}x), CLI import {r['cli_import_ms']:.0f} ms; loads openai/github: "
            f"{r['cli_loads_openai']}/"
            f"{r['cli_loads_github']}"
        ),
        "overhead": lambda: (
            f"{r['steps']} steps, ms/step harness vs bare: CPU {r['harness_cpu_ms_per_step']:.1f}"
            f" vs {r['bare_cpu_ms_per_step']:.1f} ({r['cpu_ratio']:.2f}x), wall "
            f"{r['harness_ms_per_step']:.1f} vs {r['bare_ms_per_step']:.1f} ({r['ratio']:.2f}x);"
            f" first {r['early_steps']} CPU {r['early_cpu_ratio']:.2f}x"
        ),
        "prompt_growth": lambda: (
            f"{r['tool_calls']} calls: {r['first_bytes'] / 1e3:.1f} -> "
            f"{r['last_bytes'] / 1e3:.1f} KB (max {r['max_bytes'] / 1e3:.1f}), late slope "
            f"{r['late_slope_bytes_per_call']:.0f} B/call; unmasked "
            f"+{r['unmasked_bytes_per_call'] / 1e3:.1f} KB/call"
        ),
        "validation": lambda: (
            f"{r['validation_s']:.1f} s vs floor {r['floor_s']:.1f} s ({r['ratio_to_floor']:.2f}x)"
            f", every round {r['every_round_full_s']:.1f} s, practical floor "
            f"{r['ratio_to_practical_floor']:.2f}x"
        ),
        "junit": lambda: (
            f"{r['file_mb']:.0f} MB, {r['cases']} cases: {r['parse_s']:.1f} s "
            f"({r['parse_cpu_s']:.1f} s CPU), RSS +{r['rss_growth_mb']:.0f} MB, "
            f"peak/kept {r['peak_over_kept']:.2f}"
        ),
        "coverage": lambda: (
            f"Python {r['python']} ({r['recorder']}), {r['tests']} tests: plain "
            f"{r['plain_s']:.2f} s, with changed-line coverage {r['coverage_s']:.2f} s "
            f"({r['ratio']:.2f}x; CPU {r['cpu_ratio']:.2f}x)"
        ),
        "coverage_go": lambda: (
            f"{r['packages']} packages: plain {r['plain_s']:.2f} s, with -coverprofile "
            f"{r['coverage_s']:.2f} s ({r['ratio']:.2f}x; CPU {r['cpu_ratio']:.2f}x), first "
            f"{r['first_coverage_s']:.2f} s"
        ),
        "dependency_copies": lambda: (
            f"{r['files']} files ({r['size_mb']} MB): two copies + two removals "
            f"{r['before_ms'] / 1000:.1f} s, one copy lent + one removal "
            f"{r['after_ms'] / 1000:.1f} s"
        ),
        "redaction": lambda: (
            f"{r['text_mb']:.0f} MB in {r['seconds']:.2f} s ({r['mb_per_s']:.0f} MB/s)"
        ),
        "candidates": lambda: "; ".join(
            f"{name}: {row['wall_s']:.1f} s, {row['billed_tokens']:,} billed tokens, "
            f"{row['attempts']} attempt(s), {row['status']}"
            for name, row in r["rows"].items()
        ),
        "cache_cost": lambda: (
            "; ".join(
                f"{n} calls: {s['vs_append_only']['0.9']:.2f}x/{s['vs_append_only']['0.5']:.2f}x "
                f"append-only (90%/50% off; old window {s['sliding_vs_append_only']['0.9']:.2f}x/"
                f"{s['sliding_vs_append_only']['0.5']:.2f}x), {s['compactions']} compactions, max "
                f"{s['max_request_bytes']['compacting'] / 1e3:.0f} KB"
                for n, s in r["sessions"].items()
            )
            + (
                f"; ordinary run: {o['vs_append_only']['0.9']:.2f}x/"
                f"{o['vs_append_only']['0.5']:.2f}x append-only, "
                f"{o['compactions']} compactions, "
                f"first request {o['first_request_bytes'] / 1e3:.0f} KB"
                if (o := r.get("ordinary"))
                else ""
            )
            + (
                f"; exploration (reads, searches, edits, tests): {x['vs_append_only']['0.9']:.2f}x/"
                f"{x['vs_append_only']['0.5']:.2f}x append-only, {x['compactions']} compactions, "
                f"current text kept: {x['current_text']['holds']}"
                if (x := r.get("exploration"))
                else ""
            )
        ),
    }
    lines["caps"] = lambda: (
        f"per command {r['old_runner_ms']:.0f} -> {r['capped_runner_ms']:.0f} ms (reaper "
        f"+{r['reaper_ms']:.1f} ms; +ref guard "
        f"{r['ref_guard_ms']:.0f} ms x2; python start {r['python_start_ms']:.0f} ms); "
        f"{r['flood_mb']} MB flood: log "
        f"{r['old_flood_log_bytes'] / 1e6:.0f} -> {r['capped_flood_log_bytes'] / 1e6:.2f} MB, "
        f"{r['old_flood_s']:.2f} -> {r['capped_flood_s']:.2f} s"
    )
    lines["sandbox"] = lambda: (
        ", ".join(
            f"{mode} {r[f'{mode}_ms']:.0f} ms" if r.get(f"{mode}_ms") is not None else f"{mode} n/a"
            for mode in ("off", "bwrap", "landlock")
        )
        + f" per command in a {r['files']}-file tree"
    )
    lines["validation_long"] = lines["validation"]
    return lines[name]()


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def run_all(configs: dict[str, dict[str, Any]], only: list[str] | None = None) -> Result:
    results: Result = {}
    for name, func in BENCHMARKS.items():
        if only and name not in only:
            continue
        print(f"running {name} {configs[name]} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            results[name] = func(**configs[name])
        except Exception:
            results[name] = {"error": traceback.format_exc(), "holds": None}
        results[name]["bench_s"] = round(time.perf_counter() - started, 1)
    return results


def table(results: Result) -> str:
    rows = [("benchmark", "holds", "figures")]
    for name, r in results.items():
        holds = {True: "yes", False: "NO", None: "?"}[r.get("holds")]
        rows.append((name, holds, summary(name, r)))
    width = max(len(row[0]) for row in rows)
    return "\n".join(f"{a:<{width}}  {b:<5}  {c}" for a, b, c in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small configuration")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    args = parser.parse_args(argv)
    only = [n for n in args.only.split(",") if n]
    configs = QUICK if args.quick else FULL
    info = machine()
    started = time.perf_counter()
    results = run_all(configs, only)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    document = {
        "machine": info,
        "configuration": "quick" if args.quick else "full",
        "configs": configs,
        "total_s": round(time.perf_counter() - started, 1),
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    print(table(results))
    print(
        f"\n{info['cpu']}, {info['nproc']} cores, Python {info['python']}, load "
        f"{info['loadavg_start']} -> {info['loadavg_end']}; {document['total_s']} s; "
        f"written to {args.output}"
    )
    return 0 if all(r.get("holds") is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
