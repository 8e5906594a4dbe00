"""Benchmark 3: validation seconds over a multi-round run, against the full suite every round.

A repository with a measurably slow suite (`slow_tests` tests sleeping `sleep_s` each) and
`rounds - 1` failing tests. The scripted model only reads in its first turn, then fixes one
failing test per turn, so the run succeeds in round `rounds`. With targeted re-runs a round
first re-runs the tests that failed last time and runs the full suite only when they pass:
the full suite runs in the first and the last round. That is the floor (2 full suites, about
2/rounds of re-running everything); the target is to stay within 10% of it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import NoDelayServer, isolated_env, make_repo, median, run_codegen
from codegen_ci.testing.scripted_model import Reply, call

TARGET_OVER_FLOOR = 1.10
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"


def validation_cost(
    rounds: int = 5, slow_tests: int = 40, sleep_s: float = 0.05, probe_runs: int = 3
) -> dict[str, Any]:
    if rounds < 2:
        raise ValueError("rounds must be at least 2 (one failing test, fixed in round 2)")
    failing = rounds - 1
    spec = {
        "title": "Benchmark validation cost",
        "task": "Make every value_N() return N.",
        "validation": {"test": [PYTEST], "timeout": 300},
        "limits": {"max_iterations": rounds, "max_steps": 5},
    }
    script = [Reply(tool_calls=[call("read_file", path="src/app/values.py")]), Reply("Read it.")]
    for n in range(failing):
        edit = call("edit_file", path="src/app/values.py", old_text=f"return {n + 100}  # v{n}",
                    new_text=f"return {n}  # v{n}")  # fmt: skip
        script += [Reply(tool_calls=[edit]), Reply(f"Fixed value_{n}.")]
    with tempfile.TemporaryDirectory(prefix="bench-validation-") as tmp_name:
        tmp = Path(tmp_name)
        repo = make_repo(tmp / "repo", _files(failing, slow_tests, sleep_s))
        with NoDelayServer(script) as server, isolated_env(tmp, server.base_url):
            started = time.perf_counter()
            report = run_codegen(repo, tmp / "out", spec)
            wall = time.perf_counter() - started
            one_test = _one_test_s(repo, probe_runs)
    if report["status"] != "success" or report["iterations"] != rounds:
        outcome = f"{report['status']} after {report['iterations']} rounds: {report.get('error')}"
        raise RuntimeError(f"run did not succeed in round {rounds}: {outcome}")
    return _figures(report, rounds, wall, one_test)


def _figures(report: dict[str, Any], rounds: int, wall: float, one_test: float) -> dict[str, Any]:
    tests = [c for r in report["rounds"] for c in r["commands"] if c["kind"] == "test"]
    full = [c["duration_s"] for c in tests if not c.get("targeted")]
    targeted = [c["duration_s"] for c in tests if c.get("targeted")]
    full_s = sum(full) / len(full)
    total = sum(full) + sum(targeted)
    floor = 2 * full_s
    ratio = total / floor
    # No round can cost less than one pytest start-up: the floor a runner-agnostic harness has.
    practical = floor + len(targeted) * one_test
    return {
        "rounds": rounds,
        "full_suite_s": round(full_s, 3),
        "full_runs": len(full),
        "targeted_runs": len(targeted),
        "targeted_s": [round(t, 3) for t in targeted],
        "validation_s": round(total, 3),
        "every_round_full_s": round(rounds * full_s, 3),
        "floor_s": round(floor, 3),
        "saved_vs_every_round": round(1 - total / (rounds * full_s), 3),
        "ratio_to_floor": round(ratio, 3),
        "one_test_pytest_s": round(one_test, 3),
        "practical_floor_s": round(practical, 3),
        "ratio_to_practical_floor": round(total / practical, 3),
        # ratio = 1 + sum(targeted) / (2 * full): the suite length at which it reaches 1.10
        "suite_s_for_target": round(sum(targeted) / (2 * (TARGET_OVER_FLOOR - 1)), 1),
        "run_wall_s": round(wall, 2),
        "target": f"validation <= {TARGET_OVER_FLOOR} x floor (full suite in 2 rounds)",
        "holds": ratio <= TARGET_OVER_FLOOR and len(full) == 2,
    }


def _one_test_s(repo: Path, runs: int = 3) -> float:
    """Median seconds of the same pytest command running one quick passing test."""
    command = [*PYTEST.split()[:-1], "tests/test_slow.py::test_slow[0]"]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, cwd=repo, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return median(times)


def _files(failing: int, slow_tests: int, sleep_s: float) -> dict[str, str]:
    values = "".join(f"\n\ndef value_{n}() -> int:\n    return {n + 100}  # v{n}\n"
                     for n in range(failing))  # fmt: skip
    checks = "".join(f"\n\ndef test_value_{n}():\n    assert values.value_{n}() == {n}\n"
                     for n in range(failing))  # fmt: skip
    slow = (
        "import time\n\nimport pytest\n\n\n"
        f"@pytest.mark.parametrize('n', range({slow_tests}))\n"
        f"def test_slow(n):\n    time.sleep({sleep_s})\n"
    )
    return {
        "src/app/__init__.py": "",
        "src/app/values.py": '"""Values."""' + values,
        "tests/test_values.py": "from app import values" + checks,
        "tests/test_slow.py": slow,
        "pytest.ini": "[pytest]\npythonpath = src\n",
        ".gitignore": "__pycache__/\n",
    }
