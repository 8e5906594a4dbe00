"""K candidates of one run in-process (`run.start` with `candidates.count` > 1): each attempt
gets its own deterministic model (`RunRequest.model_factory`, asked with the candidate's
spec), its own repository and worktree from the same base commit; the gate's verdicts choose,
and only the chosen commit reaches the run's branch. No process of ours is started."""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.in_process import (
    Hooked,
    ScriptedModels,
    one_model,
    quiet,
    sample_spec,
    tool_results,
)
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    PYTEST,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.agent.model import Model, ModelReply, ToolCall
from codegen_ci.cancel import Cancel
from codegen_ci.errors import ExitCode, Interrupted
from codegen_ci.report import Reason, Report, Status
from codegen_ci.run.directory import RunState
from codegen_ci.run.resume import resume
from codegen_ci.run.start import RunRequest, exit_code, start
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import call, step

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)
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
NO_PROOF = {"tests": "off", "reruns": 0}  # proof and flaky re-runs: gate/proof's subject
# For tests about the choice between candidates rather than what the gate finds: exit codes
# alone decide, and no test suite runs.
QUICK_GATE = {
    "test": [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION_FILE}"],
    "allow_no_tests": True,
    "proof": NO_PROOF,
}


@pytest.fixture
def sample(sample_repo: SampleRepo) -> SampleRepo:
    """The sample repository, copied from the session's template (tests/conftest.py)."""
    return sample_repo


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory the run's private folders go in (the standard library's
    `tempfile.tempdir`, as `TMPDIR` sets it), to show what a run leaves there."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def left_in(temp_dir: Path) -> list[Path]:
    return sorted(temp_dir.glob("codegen-ci-*"))


def run(sample: SampleRepo, spec: Spec, models: Any, **request: Any) -> Report:
    out = sample.tmp / "out"
    return start(
        RunRequest(spec, sample.path, out, progress=quiet(), model_factory=models, **request)
    )


def test_escalate_stops_at_the_first_passing_candidate_and_only_its_commit_is_on_the_branch(
    sample: SampleRepo, temp_dir: Path
) -> None:
    head = sample.head()
    history = call("run_command", command="git log --all --format=%s")
    models = ScriptedModels(
        {
            "cheap": [[step(None, WRONG), step("done")]],
            "strong": [[step(None, history), step(None, FIX), step("done")]],
        }
    )
    spec = sample_spec(
        validation={"test": [PYTEST], "proof": NO_PROOF},
        limits={"max_iterations": 1},
        candidates={"count": 3, "strategy": "escalate", "models": ["cheap", "strong"]},
    )

    report = run(sample, spec, models)

    assert (report.status, exit_code(report)) == (Status.SUCCESS, ExitCode.SUCCESS)
    ran = report.candidates
    assert [(c.index, c.model, c.status) for c in ran] == [
        (0, "cheap", Status.FAILED),
        (1, "strong", Status.SUCCESS),
    ]  # the third never started: the second passed
    assert [m.name for m in models.made] == ["cheap", "strong"]
    assert report.chosen == 1 and report.chosen_why and "passed the gate" in report.chosen_why
    assert "test_bump_minor_resets_patch" in ran[0].failing_tests[0].raw_for("matching")
    # the test it leaves failing also fails on the base commit: not a new failure
    assert ran[0].new_failures == 0 and ran[1].failing_tests == []
    assert ran[0].lines_changed == 2 and ran[1].lines_changed == 2
    # each attempt's own diff, transcript and report stay in the output directory
    assert WRONG_LINE in Path(ran[0].diff_path or "").read_text()
    assert FIXED_LINE_NEW in Path(ran[1].diff_path or "").read_text()
    assert Path(ran[0].transcript_path or "").is_file()
    out = Path(report.output_dir)
    assert Report.read(out / "candidates" / "0").status == Status.FAILED
    assert report.usage.prompt_tokens == sum(c.usage.prompt_tokens for c in ran)
    # one commit on the run's branch, the strong model's; the attempts' branches are gone
    assert sample.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"
    assert sample.git("rev-parse", BRANCH).strip() == report.commit == ran[1].commit
    assert "candidate" not in sample.git("branch", "--list")
    assert sample.git("worktree", "list").count("\n") == 1
    # the strong model was told what the cheap one tried and how the gate judged it, after
    # the same first messages (the cache-stable prefix)
    cheap, strong = models.made
    assert strong.requests[0][:2] == cheap.requests[0][:2]
    carry = strong.requests[0][2]["content"]
    assert "did not pass" in carry and WRONG_LINE in carry and "test_bump_minor" in carry
    # ...but never saw its work: the cheap attempt's commit is in a repository of its own
    seen = tool_results(strong)
    assert "initial" in seen and "wip(" not in seen
    repos = {RunState.read(out / "candidates" / str(i)).repo for i in (0, 1)}
    assert len(repos) == 2 and sample.path not in repos
    # one after the other, in the same slot of the user's repository (workspace/slots.py)
    trees = {RunState.read(out / "candidates" / str(i)).worktree for i in (0, 1)}
    assert [t.parent.name for t in trees] == ["slot-0"]
    assert left_in(temp_dir) == []  # every attempt's repository, worktree and scratch


def test_race_runs_the_candidates_at_once_and_chooses_the_smaller_passing_diff(
    sample: SampleRepo, temp_dir: Path
) -> None:
    head = sample.head()
    models = ScriptedModels(
        {"wordy": [[step(None, WORDY), step("done")]], "terse": [[step(None, FIX), step("done")]]}
    )
    # Both attempts must have had their first answer before either goes on: one that ran
    # after the other would wait here forever (a broken barrier fails the test).
    both = threading.Barrier(2, timeout=120)
    at_once = Hooked(models, lambda _name, n: both.wait() if n == 1 else None)
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 1},
        candidates={"count": 2, "strategy": "race", "models": ["wordy", "terse"], "concurrency": 2},
    )

    report = run(sample, spec, at_once)

    assert report.status == Status.SUCCESS
    ran = report.candidates
    assert [(c.model, c.status) for c in ran] == [
        ("wordy", Status.SUCCESS),
        ("terse", Status.SUCCESS),
    ]
    assert ran[0].lines_changed == 3 and ran[1].lines_changed == 2
    assert report.chosen == 1
    assert report.chosen_why == "passed the gate; fewer lines changed (2 vs 3), over candidate 0"
    assert sample.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"
    assert "# A minor release" not in sample.git("show", f"{BRANCH}:{VERSION_FILE}")
    # the one not chosen keeps its diff; its commit reaches no branch of the user's
    assert "# A minor release" in Path(ran[0].diff_path or "").read_text()
    assert "candidate" not in sample.git("branch", "--list")
    assert left_in(temp_dir) == []
    # at once, each in a slot of its own (workspace/slots.py)
    out = Path(report.output_dir)
    trees = [RunState.read(out / "candidates" / str(i)).worktree for i in (0, 1)]
    assert sorted(t.parent.name for t in trees) == ["slot-0", "slot-1"]


def test_a_budget_for_the_whole_run_stops_the_third_candidate_and_none_passing_fails(
    sample: SampleRepo,
) -> None:
    head = sample.head()
    attempt = [step(None, WRONG, prompt_tokens=1000), step("done", prompt_tokens=1000)]
    models = ScriptedModels({"cheap": [list(attempt), list(attempt), list(attempt)]})
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 1, "max_tokens": 5000},
        candidates={"count": 3, "models": ["cheap"], "carry": "none"},
    )

    report = run(sample, spec, models)

    used = [c.usage.prompt_tokens + c.usage.completion_tokens for c in report.candidates]
    assert used == [2040, 2040]
    assert report.candidates_note and (
        "candidate 2 and later not started: token budget: 920 left of 5000"
        in report.candidates_note
    )
    assert len(models.made) == 2  # the third never got a model
    assert not (Path(report.output_dir) / "candidates" / "2").exists()
    # none passed: the best of them is on the branch (as a failed run's is), exit code 1
    assert (report.status, report.chosen, exit_code(report)) == (
        Status.FAILED,
        0,
        ExitCode.FAILED,
    )
    assert sample.git("rev-list", "--count", f"{head}..{BRANCH}").strip() == "1"


class Stubborn:
    """Makes its first idea (the wrong edit) unless its first messages say that edit already
    failed the gate; then it makes the right one."""

    name = "stubborn"

    def complete(self, messages: list[dict[str, Any]], tools: Any) -> ModelReply:
        if any(m["role"] == "tool" for m in messages):
            return step("done")
        told = any(
            "did not pass" in str(m["content"]) and WRONG_LINE in str(m["content"])
            for m in messages
        )
        name, arguments = FIX if told else WRONG
        edit = ToolCall(f"call_{len(messages)}", name, json.dumps(arguments))
        return ModelReply(None, [edit], prompt_tokens=100, completion_tokens=20)


@pytest.mark.parametrize(
    ("carry", "attempts", "status"), [("summary", 2, Status.SUCCESS), ("none", 3, Status.FAILED)]
)
def test_carry_lets_the_next_attempt_avoid_an_edit_that_failed(
    sample: SampleRepo, carry: str, attempts: int, status: Status
) -> None:
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 1},
        candidates={"count": 3, "models": ["stubborn"], "carry": carry},
    )

    report = run(sample, spec, lambda _spec: Stubborn())

    assert (len(report.candidates), report.status) == (attempts, status)


def test_resume_continues_an_interrupted_escalation_and_then_chooses(
    sample: SampleRepo, temp_dir: Path
) -> None:
    models = ScriptedModels(
        {
            "cheap": [[step(None, WRONG), step("done")]],
            "strong": [[step("Thinking.")], [step(None, FIX), step("done")]],
        }
    )
    cancel = Cancel()
    stop_at_strong = Hooked(models, lambda name, n: cancel.set() if name == "strong" else None)
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 2},
        candidates={"count": 3, "models": ["cheap", "strong"]},
    )
    out = sample.tmp / "out"

    with pytest.raises(Interrupted, match="resume with: codegen-ci resume"):
        run(sample, spec, stop_at_strong, cancel=cancel)

    stopped = Report.read(out)
    assert (stopped.status, stopped.reason) == (Status.ERROR, Reason.INTERRUPTED)
    assert [c.model for c in stopped.candidates] == ["cheap"]
    strong_stopped = Report.read(out / "candidates" / "1")
    assert strong_stopped.reason == Reason.INTERRUPTED
    assert Path(strong_stopped.worktree or "").is_dir()  # kept for resume
    assert left_in(temp_dir) != []

    report = resume(out, model_factory=models)

    assert [(c.model, c.status) for c in report.candidates] == [
        ("cheap", Status.FAILED),
        ("strong", Status.SUCCESS),
    ]
    assert report.chosen == 1 and report.status == Status.SUCCESS
    assert [m.name for m in models.made] == ["cheap", "strong", "strong"]
    assert FIXED_LINE_NEW in sample.git("show", f"{BRANCH}:{VERSION_FILE}")
    assert "candidate" not in sample.git("branch", "--list")
    assert left_in(temp_dir) == []


def test_an_interrupted_race_stops_every_attempt_and_resume_finishes_them(
    sample: SampleRepo,
) -> None:
    models = ScriptedModels(
        {
            "wordy": [[step("Thinking.")], [step(None, WORDY), step("done")]],
            "terse": [[step("Thinking.")], [step(None, FIX), step("done")]],
        }
    )
    cancel = Cancel()
    both = threading.Barrier(2, timeout=120, action=cancel.set)  # once both have answered
    stop_both = Hooked(models, lambda _name, n: both.wait() if n == 1 else None)
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 2},
        candidates={"count": 2, "strategy": "race", "models": ["wordy", "terse"], "concurrency": 2},
    )
    out = sample.tmp / "out"

    with pytest.raises(Interrupted):
        run(sample, spec, stop_both, cancel=cancel)

    assert Report.read(out).reason == Reason.INTERRUPTED
    for i in (0, 1):
        attempt = Report.read(out / "candidates" / str(i))
        assert attempt.reason == Reason.INTERRUPTED and Path(attempt.worktree or "").is_dir()

    report = resume(out, model_factory=models)

    assert [(c.model, c.status) for c in report.candidates] == [
        ("wordy", Status.SUCCESS),
        ("terse", Status.SUCCESS),
    ]
    assert report.chosen == 1
    assert "candidate" not in sample.git("branch", "--list")


class Broken:
    """A model adapter with a bug: an error that is no `CodegenError` and no interrupt."""

    name = "broken"

    def complete(self, messages: list[dict[str, Any]], tools: Any) -> ModelReply:
        raise RuntimeError("the adapter broke")


@pytest.mark.parametrize("strategy", ["escalate", "race"])
def test_a_candidate_ending_in_an_error_leaves_no_folder_behind(
    sample: SampleRepo, temp_dir: Path, strategy: str
) -> None:
    spec = sample_spec(
        validation=QUICK_GATE,
        limits={"max_iterations": 1},
        candidates={"count": 2, "strategy": strategy},
    )

    def broken(_spec: Spec) -> Model:
        return Broken()

    with pytest.raises(RuntimeError, match="the adapter broke"):
        run(sample, spec, broken)

    assert left_in(temp_dir) == []
    out = sample.tmp / "out"
    assert (out / "candidates" / "0" / "run.json").is_file()

    # resume starts the attempts an error ended afresh (their repositories are gone)
    fixes = [step(None, FIX), step("done")]
    report = resume(out, model_factory=one_model(list(fixes), list(fixes)))

    assert report.status == Status.SUCCESS
    assert FIXED_LINE_NEW in sample.git("show", f"{BRANCH}:{VERSION_FILE}")
    transcript = (out / "candidates" / "0" / "transcript.jsonl").read_text()
    assert transcript.count('"role": "system"') == 1  # the broken attempt's is gone
    assert left_in(temp_dir) == []
