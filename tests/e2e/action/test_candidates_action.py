"""The action's `candidates` input end to end: a subprocess with the runner's environment,
the GitHub REST double, the scripted model with a wrong first attempt, real pytest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from action_env import ActionWorld, open_world
from sample_repo import FIX, FIXED_LINE_NEW, FIXED_LINE_OLD, VERSION_FILE, SampleRepo

from codegen_ci.testing.scripted_model import Reply, call

WRONG = call(
    "edit_file",
    path=VERSION_FILE,
    old_text=FIXED_LINE_OLD,
    new_text="return Version(self.major, self.minor + 1, self.patch * 1)",
)


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    # the test command is `QUICK_GATE`'s check of the fixed line (`quick`), decided by its exit
    # code: the wrong candidate's edit fails it and the fix passes it, no pytest starts
    with open_world(sample_repo, reruns=0, quick=True) as world:
        world.github.add_issue(
            "Reset patch in bump_minor", "bump_minor must reset the patch to 0.", user="alice"
        )
        yield world


def test_candidates_input_pushes_only_the_chosen_attempt_and_says_so_once_per_place(
    world: ActionWorld,
) -> None:
    world.model.add_for(
        "scripted-model",
        Reply(tool_calls=[WRONG]),
        Reply("done"),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )

    result = world.run(
        "issues", world.issue_labeled(1), **{"candidates": "2", "max-iterations": "1"}
    )

    assert result.code == 0, result.log
    (pull,) = world.github.pulls()
    body = pull.body or ""
    line = "2 candidates ran; chosen candidate 1 (scripted-model): passed the gate"
    assert body.count(line) == 1
    assert result.summary.count(line) == 1
    status = [c.body for c in world.github.comments.values() if "codegen-ci:status" in c.body]
    assert any(line in s for s in status)
    branch = result.outputs["branch"]
    assert "candidate" not in branch
    # only the chosen attempt's branch reached origin: one commit, the fix
    assert not any("candidate" in ref for ref in world.origin_refs())
    assert FIXED_LINE_NEW in world.origin_git("show", f"{branch}:{VERSION_FILE}")
    assert world.origin_git("rev-list", "--count", f"main..{branch}").strip() == "1"
