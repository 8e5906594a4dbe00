"""Several candidates, chosen by the gate: `codegen-ci run` end to end with per-model scripts
on the scripted model server, real git and the sample repository (a gate of exit codes: the
gate's findings are tested elsewhere).

What the candidates do and how the gate chooses is tested in-process (tests/run/
test_candidates.py); these are what only a process shows: cached tokens as an HTTP provider
reports them, the dry run's text, and Ctrl-C reaching a race's main thread."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sample_repo import FIX, FIXED_LINE_NEW, FIXED_LINE_OLD, VERSION_FILE, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.provider_cache import PromptCache
from codegen_ci.testing.scripted_model import Hang, Reply, ScriptedModelServer, call

WRONG_LINE = "return Version(self.major, self.minor + 1, self.patch * 1)"
WRONG = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=WRONG_LINE)
# The same fix with a comment above it: passes too, with more lines changed.
WORDY = call(
    "edit_file",
    path=VERSION_FILE,
    old_text=FIXED_LINE_OLD,
    new_text="# A minor release starts a new patch series.\n        " + FIXED_LINE_NEW,
)
BRANCH = "codegen/reset-patch-in-bump-minor"
# What the gate finds is not these tests' subject (the in-process tests' QUICK_GATE): a check
# of the fixed line, exit codes alone decide, no test suite runs.
QUICK_GATE = {"test": [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION_FILE}"], "allow_no_tests": True}


@pytest.fixture
def cached_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """A scripted server that reports cached tokens as a caching provider does."""
    with ScriptedModelServer(cache=PromptCache(min_tokens=0)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000000000")
        yield server


def run_cli(repo: SampleRepo, *args: str) -> tuple[int, str, Path]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", *args, "--repo", str(repo.path), "--output-dir", str(out)]
    )
    return result.exit_code, result.output, out


def turn(*calls: tuple[str, dict[str, object]], tokens: int | None = None) -> list[Reply]:
    return [Reply(tool_calls=[c], prompt_tokens=tokens) for c in calls] + [
        Reply("done", prompt_tokens=tokens)
    ]


def user_texts(request: dict[str, object]) -> list[str]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [str(m.get("content")) for m in messages]


def test_carry_none_starts_the_next_attempt_afresh_and_its_prefix_is_served_from_cache(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    cached_model.add_for("cheap", *turn(WRONG), *turn(FIX))  # the second attempt fixes it
    spec = sample_repo.write_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 1},
        candidates={"count": 2, "models": ["cheap"], "carry": "none"},
    )

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 0, output
    asked = cached_model.requests_for("cheap")
    assert len(asked) == 4
    assert user_texts(asked[2]) == user_texts(asked[0])  # the same first messages, nothing more
    # the second attempt's first request repeats the first attempt's: the provider's prompt
    # cache serves it, and the report shows cached tokens per candidate
    first_of_second = cached_model.usages[2]["prompt_tokens_details"]["cached_tokens"]
    assert first_of_second > 0
    report = json.loads((out / "report.json").read_text())
    assert report["candidates"][1]["usage"]["cached_tokens"] >= first_of_second
    assert report["usage"]["cached_tokens"] == sum(
        c["usage"]["cached_tokens"] for c in report["candidates"]
    )


def test_dry_run_shows_the_candidate_plan_without_calling_the_model(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(candidates={"strategy": "race", "models": ["a", "b"]})

    code, output, _ = run_cli(sample_repo, str(spec), "--candidates", "3", "--dry-run")

    assert code == 0, output
    assert "candidates: up to 3, race" in output and "models: a, b, b" in output
    assert cached_model.requests == []


def test_an_interrupted_race_stops_every_attempt_and_resume_finishes_them(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add_for("wordy", Hang(1.5, Reply("Thinking.")), *turn(WORDY))
    model_env.add_for("terse", Hang(1.5, Reply("Thinking.")), *turn(FIX))
    spec = sample_repo.write_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 2},
        candidates={"count": 2, "strategy": "race", "models": ["wordy", "terse"], "concurrency": 2},
    )
    out = sample_repo.tmp / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codegen_ci",
            "run",
            str(spec),
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (
        model_env.requests_for("wordy") and model_env.requests_for("terse")
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)

    assert proc.returncode == 3, output
    stopped = json.loads((out / "report.json").read_text())
    assert (stopped["status"], stopped["reason"]) == ("error", "interrupted")
    for i in (0, 1):
        attempt = json.loads((out / "candidates" / str(i) / "report.json").read_text())
        assert attempt["reason"] == "interrupted" and Path(attempt["worktree"]).is_dir()

    resumed = CliRunner().invoke(cli, ["resume", str(out)])

    assert resumed.exit_code == 0, resumed.output
    report = json.loads((out / "report.json").read_text())
    assert [(c["model"], c["status"]) for c in report["candidates"]] == [
        ("wordy", "success"),
        ("terse", "success"),
    ]
    assert report["chosen"] == 1
    assert "candidate" not in sample_repo.git("branch", "--list")
