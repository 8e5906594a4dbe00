"""`batch_command` in-process: many specs at once, each run through `run.start` with a
deterministic model of its own (`model_factory`), on a temporary git repository. No process
of ours is started (tests/e2e/run/test_batch.py starts the CLI: exit codes of bad input,
signals)."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.in_process import ScriptedModels
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.agent.model import Model, ModelReply
from codegen_ci.commands.batch import batch_command
from codegen_ci.errors import ExitCode, ModelServiceError
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import DeterministicModel, call, step

TASK = re.compile(r"Create the file (\w+\.txt)")


@pytest.fixture
def sample(sample_repo: SampleRepo) -> SampleRepo:
    """The sample repository, copied from the session's template (tests/conftest.py)."""
    return sample_repo


@dataclass
class FileWriters:
    """Each spec's run gets a model that writes the file its task names, then finishes; the
    spec named in `down` gets a model service that answers with an error."""

    down: str | None = None
    made: dict[str, DeterministicModel] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, spec: Spec) -> Model:
        found = TASK.search(spec.task)
        assert found, spec.task
        name = found[1]
        if name == self.down:
            return Down()
        model = DeterministicModel(
            [step(None, call("write_file", path=name, content=f"{name}\n")), step("Created.")]
        )
        with self.lock:
            self.made[name] = model
        return model


class Down:
    name = "down"

    def complete(self, messages: list[dict[str, Any]], tools: Any) -> ModelReply:
        raise ModelServiceError("model service error 401: invalid api key")


def write_specs(repo: SampleRepo, names: list[str], **overrides: Any) -> Path:
    """One spec per name under <tmp>/specs/; all share a title, so their branch names collide."""
    (repo.tmp / "specs").mkdir(exist_ok=True)
    for name in names:
        fields: dict[str, Any] = {
            "title": "Add a file",
            "task": f"Create the file {name}.txt with its own name as content.",
            "context": [],
            "validation": {"test": [f"test -f {name}.txt"], "timeout": 60},
            "limits": {"max_iterations": 2},
        }
        repo.write_spec(f"specs/{name}.yaml", **{**fields, **overrides.get(name, {})})
    return repo.tmp / "specs"


def batch(
    repo: SampleRepo, specs: list[str], models: Any, *, concurrency: int = 1, **options: Any
) -> tuple[int, Path]:
    out = repo.tmp / "out"
    code = batch_command(
        tuple(specs),
        concurrency,
        out,
        repo.path,
        matrix=False,
        model_factory=models,
        **options,
    )
    return code, out


def report_of(out: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / name / "report.json").read_text())
    return data


def branches(repo: SampleRepo) -> list[str]:
    return repo.git("branch", "--list", "codegen/*", "--format=%(refname:short)").split()


def test_three_specs_give_three_branches_and_three_reports(
    sample: SampleRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = write_specs(sample, ["alpha", "beta", "gamma"])
    (specs / "notes.txt").write_text("not a spec\n")
    head = sample.head()
    models = FileWriters()

    code, out = batch(sample, [str(specs)], models, concurrency=2)

    assert code == ExitCode.SUCCESS
    assert sorted(models.made) == ["alpha.txt", "beta.txt", "gamma.txt"]
    assert sorted(branches(sample)) == [
        "codegen/add-a-file",
        "codegen/add-a-file-2",
        "codegen/add-a-file-3",
    ]
    for name in ("alpha", "beta", "gamma"):
        report = report_of(out, name)
        assert report["status"] == "success", report
        assert report["files_changed"] == [f"{name}.txt"]
        # each branch holds exactly its own spec's file
        changed = sample.git("diff", "--name-only", head, report["branch"]).split()
        assert changed == [f"{name}.txt"]
    summary = json.loads((out / "summary.json").read_text())
    assert [row["status"] for row in summary] == ["success"] * 3
    shown = capsys.readouterr().out  # the plain-text summary table (no terminal)
    assert re.search(r"^alpha\s+success\s+1\s+codegen/add-a-file", shown, re.M)
    assert "3/3 succeeded" in shown
    # the user's checkout is untouched and no worktree is left behind
    assert sample.head() == head and sample.git("status", "--porcelain") == ""
    assert sample.git("worktree", "list").count("\n") == 1


def test_each_spec_runs_with_the_repositorys_agents_md_from_its_default_branch(
    sample: SampleRepo,
) -> None:
    # Every command starts its run through run.start, which reads the maintainers'
    # instructions from the base commit (the default branch's tip): batch too (it once
    # never read them), and not what the working tree holds.
    rule = "Batch rule: name every new file in lower case."
    sample.commit({"AGENTS.md": rule + "\n"}, "agents")
    (sample.path / "AGENTS.md").write_text("Uncommitted: name files in upper case.\n")
    specs = write_specs(sample, ["alpha"])
    models = FileWriters()

    code, out = batch(sample, [str(specs)], models)

    assert code == ExitCode.SUCCESS
    system = models.made["alpha.txt"].requests[0][0]
    assert system["role"] == "system"
    assert rule in system["content"] and "Uncommitted" not in system["content"]
    assert report_of(out, "alpha")["instructions"] == "AGENTS.md"


def test_one_failing_spec_exits_1_and_the_others_still_finish(
    sample: SampleRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = {"validation": {"test": ["false"]}, "limits": {"max_iterations": 1}}
    specs = write_specs(sample, ["alpha", "beta", "gamma"], beta=failing)

    code, out = batch(sample, [str(specs / "*.yaml")], FileWriters())

    assert code == ExitCode.FAILED
    status = {n: report_of(out, n) for n in ("alpha", "beta", "gamma")}
    assert status["beta"]["status"] == "failed"
    assert status["alpha"]["status"] == status["gamma"]["status"] == "success"
    for name in ("alpha", "gamma"):
        assert status[name]["branch"] in branches(sample)
    assert re.search(r"^beta\s+failed \(max_iterations\)", capsys.readouterr().out, re.M)


def test_an_infrastructure_error_exits_3_unless_a_spec_failed(
    sample: SampleRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = {"validation": {"test": ["false"]}, "limits": {"max_iterations": 1}}
    specs = write_specs(sample, ["alpha", "beta", "gamma"], gamma=failing)
    models = FileWriters(down="beta.txt")

    code, out = batch(sample, [str(specs / "alpha.yaml"), str(specs / "beta.yaml")], models)

    assert code == ExitCode.INFRA
    beta = report_of(out, "beta")
    assert (beta["status"], beta["reason"]) == ("error", "error")
    assert "invalid api key" in beta["error"]
    assert re.search(r"^alpha\s+success", capsys.readouterr().out, re.M)

    # the same service error beside a spec that failed (alpha, which passed, left out)
    beside = (str(specs / "beta.yaml"), str(specs / "gamma.yaml"))
    with_a_failure = batch_command(
        beside, 1, sample.tmp / "o2", sample.path, False, model_factory=models
    )
    assert with_a_failure == ExitCode.FAILED


def test_the_candidates_option_gives_each_spec_its_attempts(sample: SampleRepo) -> None:
    wrong = "return Version(self.major, self.minor + 1, self.patch * 1)"
    models = ScriptedModels(
        {
            "cheap": [
                [
                    step(
                        None,
                        call(
                            "edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=wrong
                        ),
                    ),
                    step("done"),
                ]
            ],
            "strong": [
                [
                    step(
                        None,
                        call(
                            "edit_file",
                            path=VERSION_FILE,
                            old_text=FIXED_LINE_OLD,
                            new_text=FIXED_LINE_NEW,
                        ),
                    ),
                    step("done"),
                ]
            ],
        }
    )
    (sample.tmp / "specs").mkdir()
    sample.write_spec(
        "specs/fix.yaml",
        # the choice between the attempts, not what the gate finds: exit codes alone decide
        validation={
            "test": [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION_FILE}"],
            "allow_no_tests": True,
            "proof": {"tests": "off"},
        },
        limits={"max_iterations": 1},
        candidates={"models": ["cheap", "strong"]},
    )

    code, out = batch(sample, [str(sample.tmp / "specs")], models, candidates=2)

    assert code == ExitCode.SUCCESS
    report = report_of(out, "fix")
    assert [c["model"] for c in report["candidates"]] == ["cheap", "strong"]
    assert report["chosen"] == 1 and report["status"] == "success"
    branch = "codegen/reset-patch-in-bump-minor"
    assert FIXED_LINE_NEW in sample.git("show", f"{branch}:{VERSION_FILE}")
