"""What a run writes (transcript.jsonl, report.json, run.json) parses whatever the model or the
commands said, and `resume` carries on from it: secrets are masked in each string before it is
serialised, never in the serialised text (where a mask could eat an escape sequence)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sample_repo import QUICK_GATE, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

# A header as a model quotes it inside a shell line: the token is followed by `"`, which the
# serialised JSON writes as `\"`; a mask applied to that text swallows the backslash.
BEARER_TEXT = 'Try: curl -H "Authorization: Bearer abcdef0123456789abcdef" https://x.example'


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_a_model_message_with_an_auth_header_keeps_the_transcript_valid_and_resumable(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(Reply(BEARER_TEXT))
    out = sample_repo.tmp / "run"
    # what the gate finds is not the subject here (it is the next test's): its exit code
    spec = sample_repo.write_spec(validation=QUICK_GATE, limits={"max_iterations": 1})

    code, output = invoke(
        "run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)
    )

    assert code == 1, output
    lines = (out / "transcript.jsonl").read_text().splitlines()
    messages = [json.loads(line) for line in lines]  # every line parses
    said = next(m["content"] for m in messages if m["role"] == "assistant" and m.get("content"))
    assert "abcdef0123456789abcdef" not in said and "Authorization: Bearer ***" in said
    assert said.endswith('" https://x.example')  # the quote after the token survives
    for name in ("report.json", "run.json"):
        json.loads((out / name).read_text())

    model_env.add(*fixing_script())
    code, output = invoke("resume", str(out))

    assert code == 0, output
    assert json.loads((out / "report.json").read_text())["status"] == "success"
    for line in (out / "transcript.jsonl").read_text().splitlines():
        json.loads(line)


def test_a_report_with_an_auth_header_in_a_failure_message_parses(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Test output lands in report.json (failure messages): the same masking, same parse."""
    sample_repo.commit(
        {
            "tests/test_header.py": (
                f"def test_header():\n    assert False, {BEARER_TEXT!r} + '\"'\n"
            )
        },
        "a test that prints a header",
    )
    model_env.add(*fixing_script())
    out = sample_repo.tmp / "run"
    spec = sample_repo.write_spec(limits={"max_iterations": 1})

    code, output = invoke(
        "run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)
    )

    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    text = json.dumps(report)
    assert "abcdef0123456789abcdef" not in text and "Bearer ***" in text
    for path in Path(out).rglob("*.json*"):
        if path.suffix == ".jsonl":
            [json.loads(line) for line in path.read_text().splitlines()]
        else:
            json.loads(path.read_text())
