"""What the model is sent: old and superseded tool outputs become placeholders, the request
stays bounded however long the conversation gets, and the transcript keeps everything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.context import MAX_REQUEST_CHARS, request_view, size_of
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call
from sample_repo import SampleRepo

HEAD = [{"role": "system", "content": "You are a coder."}, {"role": "user", "content": "Task."}]


def step(n: int, name: str, args: dict[str, Any], output: str) -> list[dict[str, Any]]:
    tool_call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": output},
    ]


def conversation(steps: int, output_chars: int = 2000) -> list[dict[str, Any]]:
    messages = list(HEAD)
    for n in range(steps):
        messages += step(
            n, "run_command", {"command": f"cmd {n}"}, f"out {n}\n" + "x" * output_chars
        )
    return messages


def tool_outputs(view: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in view if m["role"] == "tool"}


def test_old_outputs_become_placeholders_and_recent_stay_whole() -> None:
    messages = conversation(10)

    outputs = tool_outputs(request_view(messages))

    assert all(outputs[f"c{n}"].startswith("[older output elided") for n in range(4))
    assert all(outputs[f"c{n}"].startswith(f"out {n}\nxxx") for n in range(4, 10))
    assert messages[3]["content"].startswith("out 0")  # the stored conversation keeps it


def test_a_repeated_call_supersedes_the_earlier_output() -> None:
    read = {"path": "src/a.py"}
    messages = [
        *HEAD,
        *step(1, "read_file", read, "old content\n" * 100),
        *step(2, "edit_file", {"path": "src/a.py", "old_text": "a", "new_text": "b"}, "ok"),
        *step(3, "read_file", read, "new content\n" * 100),
    ]

    outputs = tool_outputs(request_view(messages))

    assert outputs["c1"].startswith("[output superseded")
    assert outputs["c3"].startswith("new content")


def test_a_long_conversation_stays_bounded() -> None:
    sizes = [size_of(request_view(conversation(n, 20_000))) for n in (10, 50, 200)]

    assert all(size <= MAX_REQUEST_CHARS for size in sizes)
    assert sizes[2] < sizes[0] * 1.6  # not linear in the number of steps
    view = request_view(conversation(200, 20_000))
    assert any("earlier steps" in str(m["content"]) for m in view if m["role"] == "user")


def test_oversized_recent_outputs_shrink_the_window() -> None:
    messages = conversation(6, 100_000)

    view = request_view(messages, max_chars=250_000)

    assert size_of(view) <= 250_000
    assert tool_outputs(view)["c5"].startswith("out 5\nxxx")


def test_big_file_reads_come_in_windows(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    big = "\n".join(f"line {n} " + "y" * 60 for n in range(1, 20_001)) + "\n"
    (sample_repo.path / "big.txt").write_text(big)
    sample_repo.git("add", "big.txt")
    sample_repo.git("commit", "-q", "-m", "big file")
    model_env.add(Reply(tool_calls=[call("read_file", path="big.txt")]), Reply("done"))
    spec = sample_repo.write_spec(limits={"max_iterations": 1})

    CliRunner().invoke(
        cli,
        [
            "run",
            str(spec),
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(sample_repo.tmp / "out"),
        ],
    )

    result = model_env.tool_requests[1]["messages"][-1]["content"]
    assert len(result) < 30_000 and "line 1 " in result and "line 20000 " not in result
    assert "of 20000; use start_line/end_line" in result  # it says how to read on
    assert Path(sample_repo.path / "big.txt").read_text() == big
