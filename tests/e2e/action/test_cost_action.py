"""The action shows cached input wherever it shows usage: outputs, job summary, PR body and
status comment, with the cost as billed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from action_env import ActionWorld, open_world
from sample_repo import SampleRepo, fixing_script

from codegen_ci.testing.provider_cache import PromptCache


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # the test command is `QUICK_GATE`'s check of the fixed line (`quick`): what the gate
    # finds is not this test's subject, no pytest starts
    with open_world(
        sample_repo, cache=PromptCache(), model="gpt-4o-mini", reruns=0, quick=True
    ) as world:
        world.github.add_issue(
            "Reset patch in bump_minor", "bump_minor must reset the patch number"
        )
        yield world


def test_cached_tokens_and_billed_cost_are_shown_everywhere(world: ActionWorld) -> None:
    world.model.add(*fixing_script())

    result = world.run("issues", world.issue_labeled(1))

    assert result.code == 0, result.log
    out = result.outputs
    usage = json.loads((Path(out["report-path"]) / "report.json").read_text())["usage"]
    cached = usage["cached_tokens"]
    assert cached > 0 and cached == sum(
        u["prompt_tokens_details"]["cached_tokens"] for u in world.model.usages
    )
    assert out["cached-tokens"] == str(cached)
    assert int(out["prompt-tokens"]) == usage["prompt_tokens"]
    # gpt-4o-mini: $0.15 per million input, $0.075 cached, $0.60 output
    uncached = usage["prompt_tokens"] - cached
    billed = (uncached * 0.15 + cached * 0.075 + usage["completion_tokens"] * 0.60) / 1e6
    assert float(out["cost-usd"]) == pytest.approx(billed, abs=1e-6)
    shown = f"({cached:,} cached)"
    assert shown in result.summary
    (pull,) = world.github.pulls()
    assert shown in (pull.body or "")
    status = [c.body for c in world.github.comments.values() if "codegen-ci:status" in c.body]
    assert len(status) == 1 and shown in status[0]
