"""Each benchmark runs in a tiny configuration and returns sane figures. Speed itself is
measured by `python bench/run.py` (docs/benchmarks.md), never asserted here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from bench import run  # noqa: E402
from bench.cache_cost import cache_cost  # noqa: E402
from bench.candidates import candidates_tradeoff  # noqa: E402
from bench.command_caps import command_caps  # noqa: E402
from bench.junit_parse import junit_parse  # noqa: E402
from bench.overhead import harness_overhead  # noqa: E402
from bench.prompt_growth import prompt_growth  # noqa: E402
from bench.redaction import redaction  # noqa: E402
from bench.startup import startup  # noqa: E402
from bench.validation_cost import validation_cost  # noqa: E402


def test_startup_reports_times_and_lazy_imports() -> None:
    r = startup(runs=1)
    assert r["help_ms"] > 0 and r["import_openai_ms"] > 0 and r["python_pass_ms"] > 0
    assert r["cli_loads_openai"] is False
    assert r["cli_loads_github"] is False
    assert r["top_imports"] and all(row["cumulative_ms"] >= 0 for row in r["top_imports"])
    assert isinstance(r["holds"], bool)


def test_overhead_times_both_loops() -> None:
    r = harness_overhead(steps=5)
    assert r["steps"] == 5
    assert r["harness_ms_per_step"] > 0 and r["bare_ms_per_step"] > 0
    assert r["ratio"] > 0 and r["early_ratio"] > 0
    assert r["stock_server_round_trip_ms"] > 0 and r["nodelay_server_round_trip_ms"] > 0
    assert r["adapter_cpu_ms"] > 0 and r["sdk_post_cpu_ms"] > 0


def test_prompt_growth_records_every_request() -> None:
    r = prompt_growth(calls=8)
    assert r["requests"] == 9
    assert 0 < r["first_bytes"] <= r["last_bytes"] <= r["max_bytes"]
    # each call adds a ~4 KB file or ~2 KB of output to the conversation
    assert 1500 < r["unmasked_bytes_per_call"] < 6000
    assert len(r["sparkline"]) == 9
    assert r["read_file_step_ms"] > 0 and r["run_command_step_ms"] > 0


def test_cache_cost_compares_three_policies_on_one_session() -> None:
    r = cache_cost(calls=(8,), ordinary_calls=6, exploration_calls=12)
    x = r["exploration"]  # reads, searches, six edits, test runs
    assert x["tool_calls"] == 12 and x["current_text"]["test_runs"] >= 1
    assert x["current_text"]["edited_files"] == [
        "CHANGES.rst",
        "src/itsdangerous/exc.py",
        "src/itsdangerous/timed.py",
        "tests/test_itsdangerous/test_timed.py",
    ]
    o = r["ordinary"]  # a real repository explored: reads, greps, one edit
    assert o["tool_calls"] == 7 and o["requests"] == 8 and o["run_cached_tokens"] > 0
    assert 15_000 < o["first_request_bytes"] < 40_000
    s = r["sessions"]["8"]
    assert s["requests"] == 9 and s["run_cached_tokens"] > 0
    assert set(s["billed_input_tokens"]) == {"append_only", "sliding_window", "compacting"}
    assert s["cached_share"]["append_only"] > 0.5
    assert s["vs_append_only"]["0.9"] > 0 and s["sliding_vs_append_only"]["0.5"] > 0
    assert isinstance(r["holds"], bool)


def test_validation_cost_counts_full_and_targeted_runs() -> None:
    # no proof run after the passing round, no flaky re-run: a round's own runs are counted
    r = validation_cost(rounds=2, slow_tests=1, sleep_s=0.0, probe_runs=1, proof=False)
    assert r["rounds"] == 2
    assert r["full_runs"] == 2  # the first round, and the last after its targeted run passed
    assert r["targeted_runs"] == 1
    assert r["validation_s"] > 0 and r["floor_s"] > 0
    assert abs(r["every_round_full_s"] - 2 * r["full_suite_s"]) < 0.01


def test_junit_parse_reads_every_case() -> None:
    r = junit_parse(megabytes=0.3)
    assert r["problems"] == 0
    assert r["cases"] > 500
    assert r["failing"] == -(-r["cases"] // 20)  # every 20th case fails
    assert r["parse_s"] > 0 and r["rss_peak_mb"] > 0 and r["peak_over_kept"] > 0


def test_redaction_masks_everything_it_should() -> None:
    r = redaction(megabytes=0.2, runs=1)
    assert r["leaked"] is False
    assert r["masked"] > 0 and r["mb_per_s"] > 0


def test_run_writes_results_and_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "latest.json"
    code = run.main(["--quick", "--only", "redaction", "--output", str(out)])
    assert code == 0
    document = json.loads(out.read_text())
    assert document["configuration"] == "quick"
    assert document["machine"]["nproc"] >= 1 and document["machine"]["python"]
    assert set(document["results"]) == {"redaction"}
    assert "redaction" in capsys.readouterr().out


def test_command_caps_times_both_runners() -> None:
    r = command_caps(calls=2, flood_mb=2)
    assert r["old_runner_ms"] > 0 and r["capped_runner_ms"] > 0 and r["ref_guard_ms"] > 0
    assert r["old_flood_log_bytes"] == 2 * 1024 * 1024
    assert r["capped_flood_log_bytes"] < 1_000_000
    assert isinstance(r["holds"], bool)


def test_sandbox_cost_times_each_backend_it_can_set_up() -> None:
    from bench.sandbox_cost import sandbox_cost

    r = sandbox_cost(calls=1, files=20)
    assert r["off_ms"] > 0
    for mode in ("bwrap", "landlock"):  # a backend this machine cannot set up says why
        assert r[f"{mode}_ms"] is not None or r[f"{mode}_unavailable"]


def test_warm_caches_times_each_command_direct_and_confined() -> None:
    from bench.warm_caches import warm_caches

    r = warm_caches(runs=1, only=("pytest",), py_modules=4)
    assert r["pytest_direct_ms"] > 0
    for mode in ("bwrap", "landlock"):  # a backend this machine cannot set up says why
        assert r.get(f"pytest_{mode}_ratio") or r[f"{mode}_unavailable"]


def test_coverage_cost_times_a_plain_and_a_covered_run() -> None:
    from bench.coverage_cost import coverage_cost

    r = coverage_cost(modules=2, tests_per_module=2, repeats=1)
    assert r["plain_s"] > 0 and r["coverage_s"] > 0 and r["ratio"] > 0
    assert r["report_written"] and r["tests"] == 4
    assert r["cpu_ratio"] > 0


@pytest.fixture
def warm_gocache(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Go's build cache as a user has it (the session's warm cache, eco_projects.py, made once
    for every Go test), copied: the standard library's packages are built, the benchmark's own
    are not (1.5 CPU-s less than a cold cache; what the benchmark writes stays in its copy)."""
    from eco_projects import warm_go_cache

    cache = tmp_path / "go-build"
    shared = warm_go_cache(tmp_path_factory.getbasetemp().parent / "ecosystems")
    subprocess.run(["cp", "-a", str(shared), str(cache)], check=True)
    monkeypatch.setenv("GOCACHE", str(cache))


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
@pytest.mark.usefixtures("warm_gocache")
def test_go_coverage_cost_times_go_test_with_and_without_a_profile() -> None:
    from bench.coverage_cost import go_coverage_cost

    r = go_coverage_cost(packages=2, tests=2, repeats=1)
    assert r["plain_s"] > 0 and r["coverage_s"] > 0 and r["lcov_lines"] > 0


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_node_coverage_cost_times_a_plain_and_a_covered_node_test_run() -> None:
    from bench.coverage_cost_node import coverage_cost_node

    r = coverage_cost_node("node", None, modules=2, tests_per_module=2, repeats=1)
    assert r["plain_s"] > 0 and r["coverage_s"] > 0 and r["ratio"] > 0
    assert r["report_written"] and r["tests"] == 4


def test_candidates_tradeoff_runs_one_escalate_and_race() -> None:
    # no proof run after a passing attempt, no flaky re-run, and a `grep` for the fixed line as
    # the gate (what the gate finds is not the subject: candidates and their tokens are; six
    # attempts' pytest runs saved)
    r = candidates_tradeoff(test_sleep_s=0.0, proof=False, quick_gate=True)
    rows = r["rows"]
    assert [rows[k]["status"] for k in ("1", "escalate-3", "race-3")] == [
        "failed",
        "success",
        "success",
    ]
    assert [rows[k]["attempts"] for k in ("1", "escalate-3", "race-3")] == [1, 2, 3]
    assert rows["1"]["billed_tokens"] < rows["escalate-3"]["billed_tokens"]
    assert rows["escalate-3"]["billed_tokens"] < rows["race-3"]["billed_tokens"]
    assert all(row["wall_s"] > 0 and row["cached_tokens"] > 0 for row in rows.values())
