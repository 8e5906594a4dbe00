"""Benchmark 9: what several candidates cost, in wall time and billed tokens.

One task (a real bug in a small Python package with its real pytest suite, 12 tests, one of
which sleeps `test_sleep_s` as a slower suite would) through `codegen-ci run` three ways, on
the scripted server simulating a provider's prompt cache (`codegen_ci.testing.provider_cache`):

* `1`: one candidate, the cheap model: its wrong edit fails the gate (the model names are the
  price table's gpt-4o-mini and gpt-4.1, so cached input is billed at their discount);
* `escalate-3`: models [cheap, strong, strong]; the cheap one fails, the strong one passes, the
  third never starts;
* `race-3`: the same three at once (concurrency 3), then the gate chooses.

Each model answers by policy, not by a fixed list (so concurrent attempts of the same model
cannot take each other's steps): read the file, make its edit, finish.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import isolated_env, make_repo, run_codegen
from codegen_ci.testing.provider_cache import PromptCache
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

CHEAP, STRONG = "gpt-4o-mini", "gpt-4.1"  # names only, for the price table's cached discount
VERSION_FILE = "src/semver/version.py"
OLD = "return Version(self.major, self.minor + 1, self.patch)"
FIXED = "return Version(self.major, self.minor + 1, 0)"
WRONG = "return Version(self.major, self.minor + 1, self.patch * 1)"
VERSION_PY = f'''"""Semantic versions."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> "Version":
        major, minor, patch = (int(part) for part in text.split("."))
        return cls(major, minor, patch)

    def bump_major(self) -> "Version":
        return Version(self.major + 1, 0, 0)

    def bump_minor(self) -> "Version":
        {OLD}

    def __str__(self) -> str:
        return f"{{self.major}}.{{self.minor}}.{{self.patch}}"
'''


def _tests(sleep_s: float) -> str:
    cases = "\n".join(
        f"def test_parse_{i}():\n"
        f"    assert Version.parse('{i}.{i}.{i}') == Version({i}, {i}, {i})\n"
        for i in range(10)
    )
    return (
        f"import time\n\nfrom semver.version import Version\n\n\n{cases}\n"
        f"def test_bump_minor_resets_patch():\n    time.sleep({sleep_s})\n"
        "    assert str(Version.parse('3.4.5').bump_minor()) == '3.5.0'\n\n\n"
        "def test_bump_major():\n    assert str(Version.parse('3.4.5').bump_major()) == '4.0.0'\n"
    )


def _policy(new_text: str) -> Any:
    """read_file, then the edit, then a final answer: chosen from the conversation so far."""

    def step(body: dict[str, Any]) -> Reply:
        tools = [m for m in body["messages"] if m.get("role") == "tool"]
        if not tools:
            return Reply(tool_calls=[call("read_file", path=VERSION_FILE)])
        if len(tools) == 1:
            return Reply(
                tool_calls=[call("edit_file", path=VERSION_FILE, old_text=OLD, new_text=new_text)]
            )
        return Reply("Done.")

    return step


def candidates_tradeoff(
    test_sleep_s: float = 1.0, repeats: int = 1, *, proof: bool = True, quick_gate: bool = False
) -> dict[str, Any]:
    """Each way `repeats` times; the fastest wall time is kept (tokens do not vary).
    `proof=False`: no proof run after a passing attempt and no re-run of a failing test
    (`validation.proof: {tests: off, reruns: 0}`); `quick_gate=True`: the gate is a `grep` for
    the fixed line, decided by its exit code, not the package's pytest (the wall times then
    leave out the suite's): the smoke test's tiny configuration."""
    runs = [_once(test_sleep_s, proof, quick_gate) for _ in range(repeats)]
    rows = runs[0]
    for name, row in rows.items():
        row["wall_s"] = min(r[name]["wall_s"] for r in runs)
    return {"test_sleep_s": test_sleep_s, "repeats": repeats, "rows": rows}


def _once(test_sleep_s: float, proof: bool = True, quick_gate: bool = False) -> dict[str, Any]:
    rows = {
        "1": {"count": 1, "models": [CHEAP]},
        "escalate-3": {"count": 3, "strategy": "escalate", "models": [CHEAP, STRONG]},
        "race-3": {
            "count": 3,
            "strategy": "race",
            "models": [CHEAP, STRONG],
            "concurrency": 3,
        },
    }
    results: dict[str, Any] = {}
    for name, candidates in rows.items():
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            with (
                ScriptedModelServer(cache=PromptCache()) as server,
                isolated_env(tmp, server.base_url),
            ):
                server.add_for(CHEAP, *[_policy(WRONG)] * 50)
                server.add_for(STRONG, *[_policy(FIXED)] * 50)
                repo = make_repo(
                    tmp / "repo",
                    {
                        "src/semver/__init__.py": "",
                        VERSION_FILE: VERSION_PY,
                        "tests/test_version.py": _tests(test_sleep_s),
                        "pytest.ini": "[pytest]\npythonpath = src\n",
                        ".gitignore": "__pycache__/\n",
                    },
                )
                spec: dict[str, Any] = {
                    "title": "Reset patch in bump_minor",
                    "task": "Version.bump_minor() must reset the patch number to 0.",
                    "validation": {"test": ["python -m pytest -q -p no:cacheprovider tests"]},
                    "limits": {"max_iterations": 1},
                    "model": {"name": CHEAP},
                }
                if not proof:
                    spec["validation"]["proof"] = {"tests": "off", "reruns": 0}
                if quick_gate:
                    spec["validation"]["test"] = [f"grep -q '{FIXED[-12:]}' {VERSION_FILE}"]
                    spec["validation"]["allow_no_tests"] = True
                if candidates["count"] > 1:
                    spec["candidates"] = candidates
                began = time.perf_counter()
                report = run_codegen(repo, tmp / "out", spec)
                wall = time.perf_counter() - began
            usage = report["usage"]
            results[name] = {
                "wall_s": round(wall, 2),
                "status": report["status"],
                "attempts": len(report.get("candidates") or []) or 1,
                "chosen": report.get("chosen"),
                "prompt_tokens": usage["prompt_tokens"],
                "cached_tokens": usage["cached_tokens"],
                "billed_tokens": usage["billed_tokens"],
                "cost_usd": usage["cost_usd"],
            }
    return results


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(candidates_tradeoff(repeats=2), indent=2))
