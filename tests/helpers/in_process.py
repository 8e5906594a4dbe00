"""A run driven in-process: `pipeline.execute()` (or `run.start`, `run.resume`, `batch`
through `RunRequest.model_factory`) on a temporary git repository with the deterministic model
(`codegen_ci.testing.deterministic_model`) in place of the HTTP adapter. No process of ours is
started; the commands that run are the repository's own."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.sample_repo import PYTEST, SampleRepo

from codegen_ci.agent.model import Model, ModelReply
from codegen_ci.pipeline import ModelFactory, RunContext, execute
from codegen_ci.progress import Progress
from codegen_ci.report import Report
from codegen_ci.run.attempt import prepare_worktree
from codegen_ci.spec.layers import resolve_spec
from codegen_ci.spec.model import Spec
from codegen_ci.testing.deterministic_model import DeterministicModel


def sample_spec(**overrides: Any) -> Spec:
    data: dict[str, Any] = {
        "version": 1,
        "title": "Reset patch in bump_minor",
        "task": "Version.bump_minor() must reset the patch number to 0 (3.4.5 -> 3.5.0).",
        "context": ["src/semver/version.py"],
        "validation": {"test": [PYTEST], "timeout": 120},
        "limits": {"max_iterations": 3},
    }
    data.update(overrides)
    return resolve_spec(data)


@dataclass
class InProcessRun:
    report: Report
    model: DeterministicModel
    output_dir: Path
    log: str


def run_in_process(
    sample: SampleRepo,
    spec: Spec,
    script: list[ModelReply],
    *,
    run_id: str = "r1",
    model: DeterministicModel | None = None,
) -> InProcessRun:
    """`model`: the one to use (its script then replaces `script`), for a test that must read
    its requests although the run raised."""
    model = model or DeterministicModel(list(script))
    out = sample.tmp / f"out-{run_id}"
    out.mkdir()
    worktree = prepare_worktree(sample.path, spec, run_id)
    log = io.StringIO()
    ctx = RunContext(sample.path, out, run_id, worktree, Progress(log), lambda _spec: model)
    try:
        report = execute(spec, ctx)
    finally:
        text = log.getvalue()
    return InProcessRun(report, model, out, text)


# -- run.start / run.resume / batch in-process ------------------------------------------------


def quiet() -> Progress:
    """A progress display writing nowhere a test reads (the run's lines are in its logs)."""
    return Progress(io.StringIO())


@dataclass
class ScriptedModels:
    """A `ModelFactory` for `RunRequest.model_factory`: each attempt gets a fresh
    `DeterministicModel` from the script named by its spec's model name (a candidate's spec
    names the candidate's model); every model made is kept in `made`, in order, so a test
    reads what each attempt was told. A model name with no script is a test's mistake."""

    scripts: dict[str, list[list[ModelReply]]]
    made: list[DeterministicModel] = field(default_factory=list)

    def __call__(self, spec: Spec) -> Model:
        queue = self.scripts[spec.model.name]
        model = DeterministicModel(queue.pop(0) if queue else [], name=spec.model.name)
        self.made.append(model)
        return model

    def of(self, name: str) -> list[DeterministicModel]:
        return [m for m in self.made if m.name == name]


def one_model(*scripts: list[ModelReply], name: str = "gpt-4o-mini") -> ScriptedModels:
    """Scripts for the spec's own model, one per attempt (a run, then its resume)."""
    return ScriptedModels({name: list(scripts)})


def tool_results(model: DeterministicModel) -> str:
    """Every tool result the model was shown, across its requests."""
    seen = {str(m["content"]) for request in model.requests for m in request if m["role"] == "tool"}
    return "\n".join(sorted(seen))


@dataclass
class Hooked:
    """A `ModelFactory` around another: each model it makes calls `hook(name, n)` once it has
    answered its n-th request (n from 1), as what goes on beside a run would at that moment
    (the thread that gets the signals setting the run's `Cancel`, a sibling attempt)."""

    inner: ModelFactory
    hook: Callable[[str, int], object]

    def __call__(self, spec: Spec) -> Model:
        return _HookedModel(self.inner(spec), self.hook)


@dataclass
class _HookedModel:
    inner: Model
    hook: Callable[[str, int], object]
    answered: int = 0
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.inner.name

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ModelReply:
        reply = self.inner.complete(messages, tools)
        self.answered += 1
        self.hook(self.inner.name, self.answered)
        return reply
