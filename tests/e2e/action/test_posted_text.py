"""Through `codegen-ci action` and the GitHub double: what the tool posts (status
comment, pull request body, job summary) relays untrusted text (test output, file names) with
no live @mention, no raw HTML, no link and no bidi control. The control: the raw report has
every one of them, so the run really carried them to the publishing step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_env import ActionWorld
from action_world import action_world, labeled
from markdown_view import outside_code
from sample_repo import FIX, SampleRepo

from codegen_ci.testing.scripted_model import Reply, call

BIDI_NAME = "invoice\u202etxt.exe"
HOSTILE_TEST = """\
def test_hostile_output():
    assert False, (
        "@team @octo-org/admins </details><img src=x onerror=alert(1)> https://evil.example/x "
        "\\u2066ok"
    )
"""
RAW = [
    "@team",
    "@octo-org/admins",
    "</details>",
    "<img",
    "https://evil.example",
    "\u202e",
    "\u2066",
]


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    sample_repo.commit({"tests/test_hostile.py": HOSTILE_TEST}, "a test with hostile output")
    sample_repo.git("push", "-q", "origin", "main")
    with action_world(sample_repo, reruns=0) as world:
        yield world


def posted(world: ActionWorld, summary: str) -> dict[str, str]:
    """Every text the tool sent to GitHub or wrote to the job summary."""
    texts = {"summary": summary}
    for i, request in enumerate(world.github.writes()):
        if isinstance(request.body, dict):
            for key in ("body", "title"):
                if isinstance(request.body.get(key), str):
                    texts[f"{request.method} {request.path} #{i} {key}"] = request.body[key]
    return texts


def test_mentions_html_links_and_bidi_from_untrusted_text_are_inert(world: ActionWorld) -> None:
    world.model.add(
        Reply(tool_calls=[call("write_file", path=BIDI_NAME, content="MZ\n"), FIX]),
        Reply("Done."),
    )
    result = world.run(
        "issues", labeled(world, 1), **{"max-iterations": "1", "draft-on-failure": "true"}
    )

    assert result.code == 1, result.log
    report = json.loads((Path(result.outputs["report-path"]) / "report.json").read_text())
    raw = json.dumps(report, ensure_ascii=False)
    for text in RAW:  # control: the run carried every hostile piece to the publishing step
        assert text in raw, f"{text!r} is not in the report"
    assert BIDI_NAME in report["files_changed"]

    texts = posted(world, result.summary)
    (pull,) = world.github.pulls()
    assert pull.pull is not None and pull.pull.draft
    assert any("/pulls" in where for where in texts) and any("/comments" in w for w in texts)
    for where, text in texts.items():
        rendered = outside_code(text)  # inside code spans, HTML and links show as text
        for piece in RAW:
            if piece == "</details>":  # the tool's own markup has it: only ever balanced
                assert rendered.count("</details>") == rendered.count("<details>"), where
                continue
            shown = rendered if piece in ("<img", "https://evil.example") else text
            assert piece not in shown, f"{piece!r} posted raw in {where}:\n{text}"
    failure = "\n".join(t for w, t in texts.items() if "/comments" in w)
    assert "@\u200dteam" in failure  # still readable, pings nobody
    assert "<img src=x" in failure and "<img" not in outside_code(failure)  # shown as code
    assert "invoice[U+202E]txt.exe" in (pull.body or "") and "[U+202E]" in result.summary
