"""Benchmark 3: validation seconds over a multi-round run, against the full suite every round.

A repository with a measurably slow suite (`slow_tests` tests sleeping `sleep_s` each) and
`rounds - 1` failing tests. The scripted model only reads in its first turn, then fixes one
failing test per turn, so the run succeeds in round `rounds`. From round 2 on each round is one
pytest process that runs the previously failing tests first (the `codegen_first` plugin): in
rounds 2 to `rounds - 1` one of them still fails and pytest stops there; in the last round
they pass and the same process runs the full suite. The floor is the full suite in the first
and the last round only (about 2/rounds of re-running everything); the target is to stay
within 10% of it. No round can cost less than one pytest start-up, so the ratio depends on
the suite's length: `python -m bench.validation_cost --long` runs the same with a ~16 s suite.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import NoDelayServer, isolated_env, make_repo, median, run_codegen
from codegen_ci.testing.scripted_model import Reply, call

TARGET_OVER_FLOOR = 1.10
LONG: dict[str, Any] = {"rounds": 5, "slow_tests": 40, "sleep_s": 0.4}  # a ~16 s suite
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"


def validation_cost(
    rounds: int = 5,
    slow_tests: int = 40,
    sleep_s: float = 0.05,
    probe_runs: int = 3,
    *,
    proof: bool = True,
) -> dict[str, Any]:
    """`proof=False`: no proof run (nor coverage run) after the passing round and no re-run of
    a failing round's failing tests (`validation.proof: {tests: off, reruns: 0}`), none of which
    is a round's validation: the smoke test's tiny configuration."""
    if rounds < 2:
        raise ValueError("rounds must be at least 2 (one failing test, fixed in round 2)")
    failing = rounds - 1
    spec: dict[str, Any] = {
        "title": "Benchmark validation cost",
        "task": "Make every value_N() return N.",
        "validation": {"test": [PYTEST], "timeout": 300},
        "limits": {"max_iterations": rounds, "max_steps": 5},
    }
    if not proof:
        spec["validation"]["proof"] = {"tests": "off", "reruns": 0}
    script = [Reply(tool_calls=[call("read_file", path="src/app/values.py")]), Reply("Read it.")]
    for n in range(failing):
        edit = call(
            "edit_file",
            path="src/app/values.py",
            old_text=f"return {n + 100}  # v{n}",
            new_text=f"return {n}  # v{n}",
        )
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
    tests = [
        c
        for r in report["rounds"]
        for c in r["commands"]
        if c["kind"] == "test" and not c.get("skipped")
    ]
    full = [c["duration_s"] for c in tests if not c.get("targeted")]  # went through the suite
    stopped = [c["duration_s"] for c in tests if c.get("targeted")]  # only the failing ones ran
    first = [c for c in tests if c.get("targeted") or c.get("failing_first")]
    full_s = sum(full) / len(full)
    total = sum(full) + sum(stopped)
    floor = 2 * full_s
    ratio = total / floor
    # No round can cost less than one pytest start-up: the floor a runner-agnostic harness has.
    practical = floor + len(stopped) * one_test
    return {
        "rounds": rounds,
        "test_processes": len(tests),
        "full_suite_s": round(full_s, 3),
        "full_runs": len(full),
        "targeted_runs": len(first),  # rounds that started from the previously failing tests
        "stopped_early_runs": len(stopped),
        "targeted_s": [round(t, 3) for t in stopped],
        "validation_s": round(total, 3),
        "every_round_full_s": round(rounds * full_s, 3),
        "floor_s": round(floor, 3),
        "saved_vs_every_round": round(1 - total / (rounds * full_s), 3),
        "ratio_to_floor": round(ratio, 3),
        "one_test_pytest_s": round(one_test, 3),
        "practical_floor_s": round(practical, 3),
        "ratio_to_practical_floor": round(total / practical, 3),
        # ratio = 1 + sum(stopped) / (2 * full): the suite length at which it reaches 1.10
        "suite_s_for_target": round(sum(stopped) / (2 * (TARGET_OVER_FLOOR - 1)), 1),
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
    values = "".join(
        f"\n\ndef value_{n}() -> int:\n    return {n + 100}  # v{n}\n" for n in range(failing)
    )
    checks = "".join(
        f"\n\ndef test_value_{n}():\n    assert values.value_{n}() == {n}\n" for n in range(failing)
    )
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


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.validation_cost [--long]`: one configuration, its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help=f"the longer suite: {LONG}")
    args = parser.parse_args(argv)
    print(json.dumps(validation_cost(**(LONG if args.long else {})), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
