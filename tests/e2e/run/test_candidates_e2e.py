"""Several candidates, chosen by the gate: `codegen-ci run` end to end with per-model scripts
on the scripted model server, real git and the sample repository's real pytest suite."""

from __future__ import annotations

import json
import re
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


def test_escalate_cheap_model_fails_then_strong_model_fixes_and_only_its_commit_is_on_branch(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    cached_model.add_for("cheap", *turn(WRONG))
    cached_model.add_for("strong", *turn(FIX))
    head = sample_repo.head()
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        candidates={"count": 3, "strategy": "escalate", "models": ["cheap", "strong"]},
    )

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "success"
    ran = report["candidates"]
    assert [(c["index"], c["model"], c["status"]) for c in ran] == [
        (0, "cheap", "failed"),
        (1, "strong", "success"),
    ]  # the third never started: the second passed
    assert report["chosen"] == 1
    assert "passed the gate" in report["chosen_why"]
    assert ran[0]["failing_tests"] and "test_bump_minor_resets_patch" in ran[0]["failing_tests"][0]
    # the test it leaves failing also fails on the base commit: not a new failure
    assert ran[0]["new_failures"] == 0 and ran[1]["failing_tests"] == []
    assert ran[0]["lines_changed"] == 2 and ran[1]["lines_changed"] == 2
    assert ran[0]["rounds"] == 1 and ran[1]["rounds"] == 1
    # each attempt's own diff and transcript stay in the output directory
    assert WRONG_LINE in Path(ran[0]["diff_path"]).read_text()
    assert FIXED_LINE_NEW in Path(ran[1]["diff_path"]).read_text()
    assert Path(ran[0]["transcript_path"]).is_file() and Path(ran[1]["transcript_path"]).is_file()
    assert (out / "candidates" / "0" / "report.json").is_file()
    # the whole run's usage adds up the attempts'
    assert report["usage"]["prompt_tokens"] == sum(c["usage"]["prompt_tokens"] for c in ran)
    # one commit on the run's branch, the strong model's; the attempts' branches are gone
    assert sample_repo.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"
    assert sample_repo.git("rev-parse", BRANCH).strip() == report["commit"] == ran[1]["commit"]
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{BRANCH}:{VERSION_FILE}")
    assert "candidate" not in sample_repo.git("branch", "--list")
    assert sample_repo.git("worktree", "list").count("\n") == 1
    # the strong model was told what the cheap one tried and how the gate judged it, after
    # the same first messages (the cache-stable prefix)
    cheap_first = user_texts(cached_model.requests_for("cheap")[0])
    strong_first = user_texts(cached_model.requests_for("strong")[0])
    assert strong_first[:2] == cheap_first[:2]
    carry = strong_first[2]
    assert "did not pass" in carry and WRONG_LINE in carry
    assert "test_bump_minor_resets_patch" in carry
    assert "candidates ran; chosen candidate 1 (strong): passed the gate" in output


def test_carry_none_starts_the_next_attempt_afresh_and_its_prefix_is_served_from_cache(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    cached_model.add_for("cheap", *turn(WRONG), *turn(FIX))  # the second attempt fixes it
    spec = sample_repo.write_spec(
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


def test_budget_for_the_whole_run_stops_the_third_candidate_and_none_passing_exits_1(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    # every attempt of the same model: two requests of 1000 prompt + 20 completion tokens
    model_env.add_for(
        "cheap", *turn(WRONG, tokens=1000), *turn(WRONG, tokens=1000), *turn(WRONG, tokens=1000)
    )
    head = sample_repo.head()
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1, "max_tokens": 5000},
        candidates={"count": 3, "models": ["cheap"], "carry": "none"},
    )

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    used = [
        c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"] for c in report["candidates"]
    ]
    assert used == [2040, 2040]
    note = report["candidates_note"]
    assert "candidate 2 and later not started: token budget: 920 left of 5000" in note
    assert len(model_env.requests_for("cheap")) == 4  # the third never asked the model
    assert not (out / "candidates" / "2").exists()
    # none passed: the best of them is on the branch (as a failed run's is), exit code 1
    assert report["status"] == "failed" and report["chosen"] == 0
    assert sample_repo.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"


TIMING_CONFTEST = """\
import sys
import time


def pytest_sessionstart(session):
    sys.__stdout__.write(f"SESSION-START {time.time():.3f}\\n")
    sys.__stdout__.flush()
    time.sleep(1.5)


def pytest_sessionfinish(session, exitstatus):
    sys.__stdout__.write(f"SESSION-END {time.time():.3f}\\n")
    sys.__stdout__.flush()
"""


def _sessions(run_dir: Path) -> list[tuple[float, float]]:
    spans = []
    for log in sorted((run_dir / "logs").rglob("*")):
        if not log.is_file():
            continue
        text = log.read_text(errors="replace")
        starts = [float(x) for x in re.findall(r"SESSION-START ([0-9.]+)", text)]
        ends = [float(x) for x in re.findall(r"SESSION-END ([0-9.]+)", text)]
        spans += list(zip(starts, ends, strict=False))
    return spans


def test_race_runs_candidates_at_once_and_chooses_the_smaller_passing_diff(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    sample_repo.commit({"tests/conftest.py": TIMING_CONFTEST}, "timing hooks")
    head = sample_repo.head()
    cached_model.add_for("wordy", *turn(WORDY))
    cached_model.add_for("terse", *turn(FIX))
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        candidates={"count": 2, "strategy": "race", "models": ["wordy", "terse"], "concurrency": 2},
    )

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    ran = report["candidates"]
    assert [(c["model"], c["status"]) for c in ran] == [("wordy", "success"), ("terse", "success")]
    assert ran[0]["lines_changed"] == 3 and ran[1]["lines_changed"] == 2
    assert report["chosen"] == 1
    assert report["chosen_why"] == "passed the gate; fewer lines changed (2 vs 3), over candidate 0"
    assert sample_repo.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"
    assert "# A minor release" not in sample_repo.git("show", f"{BRANCH}:{VERSION_FILE}")
    # the two attempts' test runs overlapped in time, each in its own worktree
    first, second = _sessions(out / "candidates" / "0"), _sessions(out / "candidates" / "1")
    assert first and second
    assert any(a0 < b1 and b0 < a1 for a0, a1 in first for b0, b1 in second), (first, second)


def test_dry_run_shows_the_candidate_plan_without_calling_the_model(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(candidates={"strategy": "race", "models": ["a", "b"]})

    code, output, _ = run_cli(sample_repo, str(spec), "--candidates", "3", "--dry-run")

    assert code == 0, output
    assert "candidates: up to 3, race" in output and "models: a, b, b" in output
    assert cached_model.requests == []


def test_batch_candidates_flag_gives_each_spec_its_attempts(
    sample_repo: SampleRepo, cached_model: ScriptedModelServer
) -> None:
    cached_model.add_for("cheap", *turn(WRONG))
    cached_model.add_for("strong", *turn(FIX))
    specs = sample_repo.tmp / "specs"
    specs.mkdir()
    sample_repo.write_spec(
        "specs/fix.yaml", limits={"max_iterations": 1}, candidates={"models": ["cheap", "strong"]}
    )
    out = sample_repo.tmp / "batch-out"

    result = CliRunner().invoke(
        cli,
        [
            "batch",
            str(specs),
            "--candidates",
            "2",
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(out),
        ],
    )

    assert result.exit_code == 0, result.output
    report = json.loads((out / "fix" / "report.json").read_text())
    assert [c["model"] for c in report["candidates"]] == ["cheap", "strong"]
    assert report["chosen"] == 1 and report["status"] == "success"
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{BRANCH}:{VERSION_FILE}")


def test_resume_continues_an_interrupted_escalation_and_then_chooses(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add_for("cheap", *turn(WRONG))
    model_env.add_for("strong", Hang(1.0, Reply("Thinking.")), *turn(FIX))
    spec = sample_repo.write_spec(
        limits={"max_iterations": 2},
        candidates={"count": 3, "models": ["cheap", "strong"]},
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
    while not model_env.requests_for("strong") and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)

    assert proc.returncode == 3, output
    stopped = json.loads((out / "report.json").read_text())
    assert (stopped["status"], stopped["reason"]) == ("error", "interrupted")
    assert [c["model"] for c in stopped["candidates"]] == ["cheap"]
    assert "resume" in output

    resumed = CliRunner().invoke(cli, ["resume", str(out)])

    assert resumed.exit_code == 0, resumed.output
    report = json.loads((out / "report.json").read_text())
    assert [(c["model"], c["status"]) for c in report["candidates"]] == [
        ("cheap", "failed"),
        ("strong", "success"),
    ]
    assert report["chosen"] == 1
    assert FIXED_LINE_NEW in sample_repo.git("show", f"{BRANCH}:{VERSION_FILE}")
    assert "candidate" not in sample_repo.git("branch", "--list")


def _stubborn(body: dict[str, object]) -> Reply:
    """A model that makes its first idea (the wrong edit) unless its first messages say that
    edit already failed the gate; then it makes the right one. One step per request."""
    messages = body["messages"]
    assert isinstance(messages, list)
    tools = [m for m in messages if m.get("role") == "tool"]
    if tools:
        return Reply("done")
    told = any(
        "did not pass" in str(m.get("content")) and WRONG_LINE in str(m.get("content"))
        for m in messages
    )
    return Reply(tool_calls=[FIX if told else WRONG])


@pytest.mark.parametrize(
    ("carry", "attempts", "status"), [("summary", 2, "success"), ("none", 3, "failed")]
)
def test_carry_lets_the_next_attempt_avoid_an_edit_that_failed(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    carry: str,
    attempts: int,
    status: str,
) -> None:
    model_env.add_for("stubborn", *[_stubborn] * 12)
    spec = sample_repo.write_spec(
        limits={"max_iterations": 1},
        candidates={"count": 3, "models": ["stubborn"], "carry": carry},
    )

    code, output, out = run_cli(sample_repo, str(spec))

    report = json.loads((out / "report.json").read_text())
    assert len(report["candidates"]) == attempts and report["status"] == status, output
    assert code == (0 if status == "success" else 1)


def test_an_interrupted_race_stops_every_attempt_and_resume_finishes_them(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add_for("wordy", Hang(1.5, Reply("Thinking.")), *turn(WORDY))
    model_env.add_for("terse", Hang(1.5, Reply("Thinking.")), *turn(FIX))
    spec = sample_repo.write_spec(
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
