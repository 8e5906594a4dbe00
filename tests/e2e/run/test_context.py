"""What the model is sent: an append-only conversation whose every request starts with the
previous request byte for byte, compacted in one move when it grows past a threshold, so a
provider's prompt cache serves almost all of it while the request stays bounded; the
transcript keeps everything."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_repo import FIX, FIXED_LINE_NEW, FIXED_LINE_OLD, QUICK_GATE, VERSION_PY, SampleRepo

from codegen_ci.agent.context import SUPERSEDED, ContextWindow, size_of
from codegen_ci.cli import cli
from codegen_ci.testing.provider_cache import PromptCache
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

HEAD = [{"role": "system", "content": "You are a coder."}, {"role": "user", "content": "Task."}]
MAX_REQUEST_BYTES = 150_000
Message = dict[str, Any]


def step(n: int, name: str, args: dict[str, Any], output: str) -> list[Message]:
    tool_call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": output},
    ]


def conversation(steps: int, output_chars: int = 2000) -> list[Message]:
    messages = list(HEAD)
    for n in range(steps):
        messages += step(
            n, "run_command", {"command": f"cmd {n}"}, f"out {n}\n" + "x" * output_chars
        )
    return messages


def tool_outputs(view: list[Message]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in view if m["role"] == "tool"}


def data_file(n: int) -> str:
    return "".join(f"file {n} line {i}: lorem ipsum dolor sit amet\n" for i in range(100))


def run(sample_repo: SampleRepo, spec: Path) -> dict[str, Any]:
    out = sample_repo.tmp / "out"
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    CliRunner().invoke(cli, args)
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


@pytest.fixture
def caching_model(monkeypatch: pytest.MonkeyPatch) -> Any:
    with ScriptedModelServer(cache=PromptCache()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000000000")
        yield server


@dataclass(frozen=True)
class LongRun:
    """What a long run sent and reported: its report.json, every request's messages, their
    sizes and the usage the caching server answered with (read only)."""

    report: dict[str, Any]
    requests: list[list[Message]]
    sizes: list[int]
    usages: list[dict[str, Any]]


PLAN = "".join(f"- step {n}: look at data file {n} and note what it says\n" for n in range(12))
# Requests in round 1: the plan's write and edit, 40 reads, the answer; round 2: 36 commands
# and the fix, 3 reads again, the answer.
ROUND_1_REQUESTS, ROUND_2_REQUESTS = 43, 41


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, LongRun]:
    """Runs several tests only read, made once per module (per xdist worker) by the first
    test that needs one, in that test's isolated environment."""
    return {}


@pytest.fixture
def long_run(
    shared_runs: dict[str, LongRun], sample_repo: SampleRepo, caching_model: ScriptedModelServer
) -> LongRun:
    """Two rounds of many steps through `codegen-ci run`, each compacted several times: round 1
    writes and edits a plan, reads 40 files and fixes nothing (the tests fail, a reflection
    follows); round 2 runs 5 commands, fixes the bug, then runs 31 more and reads 3 files
    again before answering. Where the compactions fall is fixed by these sizes: one on the
    request after round 1's reflection (its newest steps then the 5 commands, not the fix),
    none while the last reads are the newest steps."""
    if "long" in shared_runs:
        return shared_runs["long"]
    sample_repo.commit({f"data/file_{n:02d}.txt": data_file(n) for n in range(40)})
    write = call("write_file", path="notes/plan.md", content=PLAN)
    edit = call(
        "edit_file", path="notes/plan.md", old_text="- step 3:", new_text="- step 3 (done):"
    )
    reads = [
        Reply(tool_calls=[call("read_file", path=f"data/file_{n:02d}.txt")]) for n in range(40)
    ]
    commands = [
        Reply(tool_calls=[call("run_command", command=f"head -c 3000 data/file_{n:02d}.txt")])
        for n in range(40)
    ]
    caching_model.add(
        Reply(tool_calls=[write]),
        Reply(tool_calls=[edit]),
        *reads,
        Reply("looked around"),
        *commands[:5],
        Reply(tool_calls=[FIX]),
        *commands[5:36],
        *reads[:3],
        Reply("fixed"),
    )
    spec = sample_repo.write_spec(
        limits={"max_iterations": 2, "max_steps": 60, "max_tokens": 10**8}
    )
    report = run(sample_repo, spec)
    shared_runs["long"] = LongRun(
        report,
        [r["messages"] for r in caching_model.tool_requests],
        list(caching_model.request_sizes),
        list(caching_model.usages),
    )
    return shared_runs["long"]


def test_requests_append_compact_rarely_stay_bounded_and_keep_what_the_model_needs(
    long_run: LongRun,
) -> None:
    report, requests = long_run.report, long_run.requests

    assert report["status"] == "success"
    assert len(requests) == ROUND_1_REQUESTS + ROUND_2_REQUESTS
    compacted = [
        i for i in range(1, len(requests)) if requests[i][: len(requests[i - 1])] != requests[i - 1]
    ]
    # every other request starts with the whole previous request
    assert report["usage"]["compactions"] == len(compacted)
    assert 1 <= len(compacted) <= len(requests) // 8
    assert max(long_run.sizes) <= MAX_REQUEST_BYTES
    task = requests[0][:2]
    reflection = next(
        m for m in requests[ROUND_1_REQUESTS] if str(m["content"]).startswith("Validation round")
    )
    for i in compacted:
        assert requests[i][:2] == task
        if i >= ROUND_1_REQUESTS:
            assert reflection in requests[i]
        newest = [m["content"] for m in requests[i] if m["role"] == "tool"][-3:]
        assert all("lorem ipsum" in c and not c.startswith("[older") for c in newest), i
    # a caching provider serves most of the input from its cache; the report counts it
    usage = report["usage"]
    assert usage["cached_tokens"] == sum(
        u["prompt_tokens_details"]["cached_tokens"] for u in long_run.usages
    )
    assert usage["cached_tokens"] > 0.75 * usage["prompt_tokens"]


def test_masking_happens_only_when_compacting() -> None:
    read = {"path": "src/a.py"}
    messages = [
        *HEAD,
        *step(1, "read_file", read, "old content\n" * 100),
        *step(2, "edit_file", {"path": "src/a.py", "old_text": "a", "new_text": "b"}, "ok"),
        *step(3, "read_file", read, "new content\n" * 100),
    ]
    window = ContextWindow(compact_at=100_000)

    assert window.view(messages) == messages  # appended as it is, the stale read included

    small = ContextWindow(compact_at=2000, compact_to=3000)
    outputs = tool_outputs(small.view(messages))
    assert small.compacted_now and small.compactions == 1
    assert outputs["c1"] == SUPERSEDED
    assert outputs["c3"].startswith("new content")


def test_any_number_of_steps_stays_bounded_and_a_replay_compacts_at_the_same_points() -> None:
    messages = conversation(1000, 4000)
    window = ContextWindow()
    sizes, previous = [], None
    for end in range(4, len(messages) + 1, 2):
        view = window.view(messages[:end])
        sizes.append(size_of(view))
        if previous is not None and not window.compacted_now:
            assert view[: len(previous)] == previous
        previous = view

    assert max(sizes) <= MAX_REQUEST_BYTES - 10_000  # room for the tool schemas
    assert 0 < window.compactions <= 1000 // 8
    fresh = ContextWindow()  # a resumed run replays the conversation
    assert fresh.view(messages) == previous and fresh.compactions == window.compactions
    assert previous is not None and tool_outputs(previous)["c999"].startswith("out 999\nxxx")


def test_a_long_run_keeps_the_task_reflections_last_steps_and_current_text_of_changed_files(
    long_run: LongRun,
) -> None:
    """The last request of the long run still holds the task, the reflection, the latest steps
    whole and the text of every file the model changed as it is on disk, though the changes
    happened long before."""
    report, requests = long_run.report, long_run.requests

    assert report["status"] == "success"
    assert report["usage"]["compactions"] >= 4
    last = requests[-1]
    assert last[:2] == requests[0][:2]  # the system prompt and the task, word for word
    later = json.dumps(last[2:])
    assert "Validation round 1" in later and "test_bump_minor_resets_patch" in later
    newest = [m["content"] for m in last if m["role"] == "tool"][-3:]
    assert all("lorem ipsum" in c and not c.startswith("[") for c in newest)
    # the text of each changed file as it is now, line by line as read_file shows it (the
    # steps that changed them were dropped from the request long ago)
    changed = {
        "notes/plan.md": PLAN.replace("- step 3:", "- step 3 (done):"),
        "src/semver/version.py": VERSION_PY.replace(FIXED_LINE_OLD, FIXED_LINE_NEW),
    }
    for rel, text in changed.items():
        for number, line in enumerate(text.splitlines(), 1):
            assert json.dumps(f"{number}\t{line}")[1:-1] in later, (rel, number)
    assert '"write_file"' not in later and '"edit_file"' not in later


def test_a_read_is_superseded_by_a_later_read_of_its_lines_or_a_change_of_its_file() -> None:
    lines = "".join(f"line {n}: some code here\n" for n in range(40))
    messages = [
        *HEAD,
        *step(1, "read_file", {"path": "a.py", "start_line": 1, "end_line": 30}, lines),
        *step(2, "read_file", {"path": "b.py", "start_line": 1, "end_line": 30}, lines),
        *step(3, "read_file", {"path": "c.py"}, lines),
        *step(4, "read_file", {"path": "a.py", "start_line": 20, "end_line": 60}, lines),
        *step(5, "read_file", {"path": "b.py"}, lines),  # covers lines 1-30
        *step(6, "edit_file", {"path": "c.py", "old_text": "a", "new_text": "b"}, "ok"),
    ]

    outputs = tool_outputs(ContextWindow(compact_at=2000, compact_to=100_000).view(messages))

    assert outputs["c1"] == lines  # lines 1-19 of a.py are read nowhere else
    assert outputs["c2"] == SUPERSEDED and outputs["c5"] == lines
    assert outputs["c3"] == SUPERSEDED  # c.py changed since
    assert outputs["c4"] == lines


def test_context_files_are_shown_within_a_budget_and_big_file_reads_come_in_windows(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Two cases planted in one run, each asserted on its own: the first request shows a big
    context file cut to a budget (and the next context file still comes), and a read of a
    big file returns a window that says how to read on."""
    big_py = "".join(f"def function_{n}():\n    return {n}\n\n" for n in range(2000))
    big = "\n".join(f"line {n} " + "y" * 60 for n in range(1, 20_001)) + "\n"
    sample_repo.commit({"src/semver/big.py": big_py, "big.txt": big}, "big files")
    model_env.add(Reply(tool_calls=[call("read_file", path="big.txt")]), Reply("done"))
    spec = sample_repo.write_spec(
        context=["src/semver/big.py", "src/semver/version.py"],
        validation=QUICK_GATE,  # what the gate finds is not the subject
        limits={"max_iterations": 1},
    )

    run(sample_repo, spec)

    # the context files within a budget
    task = model_env.tool_requests[0]["messages"][1]["content"]
    assert len(task) < 20_000 < len(big_py)
    assert "def function_0():" in task and "def function_1999():" not in task
    shown = task.count("def function_")
    assert f"[lines 1-{3 * shown} of {3 * 2000} shown; read the rest with read_file" in task
    assert f"start_line={3 * shown + 1}]" in task
    assert "def bump_minor" in task  # the next context file still comes
    # the big file's read in windows
    result = model_env.tool_requests[1]["messages"][-1]["content"]
    assert len(result) < 30_000 and "line 1 " in result and "line 20000 " not in result
    assert "of 20000; use start_line/end_line" in result  # it says how to read on
    assert Path(sample_repo.path / "big.txt").read_text() == big
