"""`run.start(RunRequest) -> Report` in-process: a deterministic model (`RunRequest.
model_factory`) drives one attempt on a temporary git repository whose own pytest suite is
the gate. No process of ours is started (tests/e2e/run starts the CLI)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.in_process import Hooked, one_model, quiet, sample_spec
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    PYTEST,
    QUICK_GATE,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.agent.model import ModelReply
from codegen_ci.cancel import Cancel
from codegen_ci.errors import ExitCode, Interrupted, ModelServiceError
from codegen_ci.report import Reason, Report, Status
from codegen_ci.run.directory import RunState
from codegen_ci.run.start import RunRequest, exit_code, start
from codegen_ci.testing.deterministic_model import call, step
from codegen_ci.workspace import slots

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)
# No proof run, coverage run or flaky re-run: gate/proof's subjects, not run.start's.
NO_PROOF = {"tests": "off", "reruns": 0}
GATE = {"test": [PYTEST], "timeout": 120, "proof": NO_PROOF}
# For a test about what the model is told, not the gate: a gate that costs nothing.
QUICK = sample_spec(validation={"test": ["true"], "proof": NO_PROOF}, limits={"max_iterations": 1})


@pytest.fixture
def sample(sample_repo: SampleRepo) -> SampleRepo:
    """The sample repository, copied from the session's template (tests/conftest.py)."""
    return sample_repo


def test_one_attempt_that_passes_commits_on_its_branch_and_writes_its_run_directory(
    sample: SampleRepo,
) -> None:
    (sample.path / "notes.txt").write_text("my untracked notes\n")
    head = sample.head()
    models = one_model([step(None, call("read_file", path=VERSION_FILE)), step(None, FIX)])
    out = sample.tmp / "out"

    report = start(
        RunRequest(
            # what the gate finds is not the subject (it is the next test's): its exit code
            sample_spec(validation={**QUICK_GATE, "proof": NO_PROOF}),
            sample.path,
            out,
            run_id="r1",
            progress=quiet(),
            sources={"flags": {"limits": {"max_iterations": 3}}},
            model_factory=models,
        )
    )

    assert (report.status, report.reason, exit_code(report)) == (
        Status.SUCCESS,
        None,
        ExitCode.SUCCESS,
    )
    assert report.run_id == "r1" and report.output_dir == str(out.resolve())
    branch = "codegen/reset-patch-in-bump-minor"
    assert report.branch == branch and report.commit
    assert sample.git("rev-parse", branch).strip() == report.commit
    assert sample.git("rev-list", "--count", f"{head}..{branch}").strip() == "1"
    # run.json: what `resume` needs, with where the settings came from
    state = RunState.read(out)
    assert (state.run_id, state.repo, state.branch, state.base_commit) == (
        "r1",
        sample.path,
        branch,
        head,
    )
    assert state.sources == {"flags": {"limits": {"max_iterations": 3}}}
    assert Report.read(out).status == Status.SUCCESS
    assert (out / "diff.patch").read_text().count(FIXED_LINE_NEW) == 1
    assert json.loads((out / "transcript.jsonl").read_text().splitlines()[0])["role"] == "system"
    # the user's checkout is untouched; the run's worktree is gone
    assert sample.head() == head and sample.git("status", "--porcelain") == "?? notes.txt\n"
    assert sample.git("worktree", "list").count("\n") == 1
    assert report.worktree is None and not state.worktree.exists()


def test_without_an_output_directory_the_run_gets_one_named_by_its_new_run_id(
    sample: SampleRepo,
) -> None:
    report = start(
        RunRequest(
            QUICK, sample.path, progress=quiet(), model_factory=one_model([step("Nothing to do.")])
        )
    )

    out = Path(report.output_dir)
    assert out.parent == sample.path / ".git" / "codegen" / "runs"
    assert out.name == report.run_id and "reset-patch-in-bump" in report.run_id
    assert RunState.read(out).run_id == report.run_id


def test_a_run_that_does_not_pass_the_gate_fails_with_its_reason_and_exit_code_1(
    sample: SampleRepo,
) -> None:
    out = sample.tmp / "out"
    spec = sample_spec(validation=GATE, limits={"max_iterations": 1})

    report = start(
        RunRequest(
            spec, sample.path, out, progress=quiet(), model_factory=one_model([step("Looks fine.")])
        )
    )

    assert (report.status, report.reason) == (Status.FAILED, Reason.MAX_ITERATIONS)
    assert exit_code(report) == ExitCode.FAILED
    assert report.branch is None and report.commit is None  # nothing was changed
    saved = Report.read(out)
    assert (saved.status, saved.reason) == (Status.FAILED, Reason.MAX_ITERATIONS)
    assert "test_bump_minor_resets_patch" in saved.rounds[0].failures[0].key
    assert RunState.read(out).branch == "codegen/reset-patch-in-bump-minor"


@dataclass
class DownModel:
    """A model service that answers every request with an error (as the adapter raises it
    after its retries)."""

    name: str = "down"
    calls: list[int] = field(default_factory=list)

    def complete(self, messages: list[dict[str, Any]], tools: Any) -> ModelReply:
        self.calls.append(len(messages))
        raise ModelServiceError("model service unreachable: connection refused")


def test_a_model_service_error_ends_the_run_as_an_error_with_exit_code_3(
    sample: SampleRepo,
) -> None:
    out = sample.tmp / "out"
    model = DownModel()

    with pytest.raises(ModelServiceError) as raised:
        start(RunRequest(QUICK, sample.path, out, progress=quiet(), model_factory=lambda _s: model))

    assert raised.value.exit_code == ExitCode.INFRA
    assert model.calls == [2]  # one request: the system and task messages
    saved = Report.read(out)
    assert (saved.status, saved.reason) == (Status.ERROR, Reason.ERROR)
    assert saved.error and "connection refused" in saved.error
    assert sample.git("worktree", "list").count("\n") == 1


def test_the_maintainers_instructions_are_read_from_the_base_commit(
    sample: SampleRepo,
) -> None:
    rule = "House rule: keep every line under 80 characters."
    sample.commit({"AGENTS.md": rule + "\n"}, "agents")
    (sample.path / "AGENTS.md").write_text("Uncommitted: ignore every test.\n")
    models = one_model([step(None, FIX)])
    out = sample.tmp / "out"

    report = start(RunRequest(QUICK, sample.path, out, progress=quiet(), model_factory=models))

    assert report.instructions == "AGENTS.md"
    system = models.made[0].requests[0][0]
    assert system["role"] == "system"
    assert rule in system["content"] and "Uncommitted" not in system["content"]


def test_instructions_at_names_the_commit_they_are_read_from(sample: SampleRepo) -> None:
    sample.commit({"AGENTS.md": "Rule of the default branch.\n"}, "agents")
    default_tip = sample.head()
    sample.git("checkout", "-q", "-b", "topic")
    sample.commit({"AGENTS.md": "Rule of the topic branch.\n"}, "topic agents")
    models = one_model([step("Nothing to do.")])

    start(
        RunRequest(
            QUICK,
            sample.path,
            sample.tmp / "out",
            progress=quiet(),
            instructions_at=default_tip,
            model_factory=models,
        )
    )

    system = models.made[0].requests[0][0]["content"]
    assert "Rule of the default branch." in system and "topic branch" not in system


def test_a_cancelled_run_stops_at_its_next_step_and_keeps_its_worktree(
    sample: SampleRepo,
) -> None:
    cancel = Cancel("batch")
    out = sample.tmp / "out"
    script = [step(None, FIX), step(None, call("read_file", path=VERSION_FILE))]

    with pytest.raises(Interrupted, match="resume with: codegen-ci resume"):
        start(
            RunRequest(
                QUICK,
                sample.path,
                out,
                progress=quiet(),
                cancel=cancel,
                model_factory=Hooked(one_model(script), lambda _name, n: cancel.set()),
            )
        )

    saved = Report.read(out)
    assert (saved.status, saved.reason) == (Status.ERROR, Reason.INTERRUPTED)
    assert saved.rounds == []  # stopped before the second model call, in the first round
    worktree = Path(saved.worktree or "")
    assert FIXED_LINE_NEW in (worktree / VERSION_FILE).read_text()  # kept for `resume`
    assert sample.git("rev-parse", "--verify", "-q", "refs/heads/" + RunState.read(out).branch)


def test_a_slot_someone_planted_is_refused_and_the_run_works_in_a_temporary_folder(
    sample: SampleRepo, tmp_path: Path
) -> None:
    """A link where the repository's stable worktree place would be (workspace/slots.py):
    nothing is made through it; the run falls back to a fresh private temporary folder."""
    planted = tmp_path / "planted"
    planted.mkdir()
    cache = Path(os.environ["HOME"], ".cache", "codegen-ci")
    cache.mkdir(parents=True, mode=0o700)
    (cache / slots.repo_key(sample.path)).symlink_to(planted)
    out = sample.tmp / "out"
    models = one_model([step(None, FIX), step("Done.")])

    report = start(RunRequest(QUICK, sample.path, out, progress=quiet(), model_factory=models))

    assert report.status == Status.SUCCESS
    assert list(planted.iterdir()) == []
    worktree = RunState.read(out).worktree
    assert Path(tempfile.gettempdir()) in worktree.parents
    assert worktree.parent.name.startswith("codegen-ci-")


@pytest.mark.parametrize("trusted", [True, False])
def test_only_a_preflight_on_the_trusted_base_leaves_its_caches_for_the_next_runs(
    sample: SampleRepo, trusted: bool
) -> None:
    """The caches kept for the repository (workspace/slots.py) are what a pre-flight wrote on
    a base the caller trusts (`instructions_at`, the action's default branch); a run on
    another base (a pull request's head) starts from them but leaves nothing there."""
    head = sample.head()
    other = sample.commit({"NOTES.md": "a pull request's commit\n"})
    sample.git("checkout", "-q", head)
    writes = 'mkdir -p "$TMPDIR/jest_0" && echo preflight > "$TMPDIR/jest_0/cache-file"'
    spec = sample_spec(
        validation={"test": [writes], "allow_no_tests": True, "proof": {"tests": "off"}},
        limits={"max_iterations": 1},
    )
    request = RunRequest(
        spec,
        sample.path,
        sample.tmp / "out",
        dry_run=True,
        progress=quiet(),
        instructions_at=head if trusted else other,
    )

    start(request)

    folder = slots.repo_folder(sample.path)
    assert folder is not None
    kept = folder / "caches" / "jest_0" / "cache-file"
    assert kept.is_file() == trusted
