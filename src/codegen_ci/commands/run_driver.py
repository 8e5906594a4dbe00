"""One pipeline run as the commands start it: run.json (what `resume` needs), the progress
display, the model adapter, and SIGTERM/SIGINT turned into an interrupt."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codegen_ci.agent.conversation import Conversation
from codegen_ci.agent.model import Model, OpenAIChatModel
from codegen_ci.agent.prompt import Briefing
from codegen_ci.pipeline import RunContext, execute
from codegen_ci.progress import Progress, make_progress
from codegen_ci.report import Report
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Spec
from codegen_ci.workspace.proc import defer_interrupt
from codegen_ci.workspace.worktree import Worktree


def run_pipeline(
    spec: Spec,
    root: Path,
    out: Path,
    run_id: str,
    worktree: Worktree,
    *,
    dry_run: bool = False,
    report: Report | None = None,
    conversation: Conversation | None = None,
    progress: Progress | None = None,
    briefing: Briefing | None = None,
    sources: Mapping[str, Any] | None = None,
    carry: str | None = None,
) -> Report:
    out.mkdir(parents=True, exist_ok=True)
    state = {"spec": spec.model_dump(mode="json"), "repo": str(root), "run_id": run_id,
             "branch": worktree.branch, "base_commit": worktree.base_commit,
             "worktree": str(worktree.path), "sources": dict(sources or {})}  # fmt: skip
    (out / "run.json").write_text(REDACTOR.dumps(state, indent=2), encoding="utf-8")
    progress = progress or make_progress()
    ctx = RunContext(root, out, run_id, worktree, progress, model_factory,
                     dry_run=dry_run, carry=carry,
                     report=report or Report(), conversation=conversation,
                     start_iteration=(report.iterations + 1) if report else 1,
                     briefing=briefing or Briefing())  # fmt: skip
    progress.stage(f"run {run_id}: branch {worktree.branch}, output {out}")
    try:
        with sigterm_as_interrupt():
            result = execute(spec, ctx)
    finally:
        progress.finished(ctx.report)
    return result


def model_factory(spec: Spec) -> Model:
    return OpenAIChatModel(
        spec.model,
        api_key=os.environ.get("OPENAI_API_KEY"),
        base_url=spec.model.base_url or os.environ.get("OPENAI_BASE_URL") or None,
        retry_backoff=float(os.environ.get("CODEGEN_RETRY_BACKOFF", "1.0")),
    )


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A cancelled workflow sends SIGINT, then SIGTERM: treat either like Ctrl-C, once.

    The first signal raises `KeyboardInterrupt` (a BaseException, so no `except Exception`
    on the way swallows it); the pipeline turns it into status error, reason interrupted,
    after the running command's process group is killed. A SIGTERM after that is ignored so
    the report and the worktree are written in full; a second Ctrl-C still stops at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (batch runs specs in threads)
        return
    interrupted = False

    def handler(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted and signum == signal.SIGTERM:
            return
        interrupted = True
        if not defer_interrupt():  # else the runner raises once its child is accounted for
            raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
