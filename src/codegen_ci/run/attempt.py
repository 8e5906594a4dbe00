"""One run of the pipeline as every command starts it (`run`, `resume`, `batch`, `eval`,
`action`, each candidate of a multi-candidate run).

Before the run: its id, the settings the environment gives, the secrets the redactor must know,
and its worktree on its branch (`open_worktree` is the one way a run's worktree is made, for a
new run and for `resume` alike). The run itself: run.json first (`directory.py`), the progress
display (`SpecProgress` for a run on a worker thread), the model adapter, and SIGTERM/SIGINT
turned into an interrupt.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from codegen_ci.agent.model import Model, OpenAIChatModel
from codegen_ci.pipeline import RunContext, execute
from codegen_ci.progress import Progress
from codegen_ci.report import Report
from codegen_ci.run.directory import RunState
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Spec, slugify
from codegen_ci.workspace import branch_claims, git
from codegen_ci.workspace.finalize import GENERATED_BY, task_trailer
from codegen_ci.workspace.proc import defer_interrupt
from codegen_ci.workspace.slots import Slot
from codegen_ci.workspace.worktree import Worktree, create_worktree, worktrees_root

# -- before a run ---------------------------------------------------------------------------


def environment_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from the environment (lowest precedence above the built-in defaults)."""
    layer: dict[str, Any] = {}
    if environ.get("CODEGEN_MODEL"):
        layer["model"] = {"name": environ["CODEGEN_MODEL"]}
    return layer


def register_secrets() -> None:
    REDACTOR.add_from_env(os.environ)


def new_run_id(spec: Spec) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"{stamp}-{slugify(spec.slug, 24)}-{secrets.token_hex(2)}"


def prepare_worktree(
    root: Path,
    spec: Spec,
    run_id: str,
    *,
    branch: str | None = None,
    reset: bool = False,
    folder: Path | None = None,
    slot: Slot | None = None,
) -> Worktree:
    """A new run's worktree: on `branch` (default: the spec's `git.branch`, or the first free
    suffixed name, see `branch_for`) from the spec's base; `reset` replaces that branch.
    `folder`: the private folder it goes in (default: a new one); `slot`: the stable place
    it goes in instead (workspace/slots.py)."""
    wanted = branch or spec.branch_name
    name = wanted if reset else branch_for(root, wanted, spec)
    reset = reset or git.branch_exists(root, name)  # only an earlier run's branch of this task
    base = spec.git.base or "HEAD"
    previous = git.git(["rev-parse", "--verify", "-q", f"refs/heads/{name}"], root, check=False)
    worktree = open_worktree(root, spec, run_id, name, base, reset=reset, folder=folder, slot=slot)
    worktree.replaced = previous.strip() or None
    return worktree


def open_worktree(
    root: Path,
    spec: Spec,
    name: str,
    branch: str,
    base: str,
    *,
    reset: bool = False,
    keep_branch: bool = False,
    artifacts: Iterable[str] = (),
    folder: Path | None = None,
    slot: Slot | None = None,
) -> Worktree:
    """The one way a run's worktree is made, for `run` and `resume` alike: `name` in a new
    private folder of the run's own, or the `slot`'s worktree (workspace/slots.py), on a new
    `branch` from `base` (`reset`: an existing one moved to `base`; `keep_branch`: an
    existing one checked out as it is)."""
    path = slot.tree if slot is not None else (folder or worktrees_root(root)) / name
    try:
        worktree = create_worktree(
            root,
            path,
            branch=branch,
            base=base,
            protected=spec.protected_paths,
            reset_branch=reset,
            keep_branch=keep_branch,
        )
    except BaseException:
        with contextlib.suppress(OSError):  # the run's private folder, still empty
            path.parent.rmdir()
        raise
    worktree.named = tuple(spec.outputs)
    worktree.artifacts = set(artifacts)
    return worktree


def branch_for(root: Path, wanted: str, spec: Spec) -> str:
    """`wanted`, `wanted-2`, ...: the first that an earlier run of this task left (to update)
    or that does not exist yet, that no worktree is on (a killed run's, its branch deleted
    since) and that no other live codegen-ci process has claimed (workspace/branch_claims.py:
    a run of the same task at the same time)."""
    listing = git.git(["worktree", "list", "--porcelain"], root, check=False).splitlines()
    claimed = branch_claims.others(git.common_dir(root))
    name, n = wanted, 1
    while name in claimed or (
        (git.branch_exists(root, name) or f"branch refs/heads/{name}" in listing)
        and not rerun_branch(root, name, spec)
    ):
        n += 1
        name = f"{wanted}-{n}"
    return name


def rerun_branch(root: Path, name: str, spec: Spec) -> bool:
    """True when `name` is a branch an earlier run of the same task left (its tip is a
    codegen-ci commit whose `Codegen-task` trailer matches this task) and no worktree has it
    checked out: a re-run replaces it (the old tip stays in the branch's reflog) instead of
    adding `-2`, `-3`... A branch with anyone's own commit on top, or in use, is left alone
    and the run takes a suffixed name."""
    if not git.branch_exists(root, name):
        return False
    message = git.git(["log", "-1", "--format=%B", f"refs/heads/{name}", "--"], root, check=False)
    lines = message.splitlines()
    if GENERATED_BY not in lines or task_trailer(spec) not in lines:
        return False
    listing = git.git(["worktree", "list", "--porcelain"], root, check=False)
    return f"branch refs/heads/{name}" not in listing.splitlines()


# -- the run --------------------------------------------------------------------------------


def run_pipeline(spec: Spec, ctx: RunContext, sources: Mapping[str, Any]) -> Report:
    """One pipeline run as `run/` starts it (`ctx` built by start, resume or a candidate):
    run.json first (what `resume` needs, with `sources`: where the settings came from), then
    the pipeline under the progress display, with SIGTERM/SIGINT turned into an interrupt."""
    out, worktree = ctx.output_dir, ctx.worktree
    out.mkdir(parents=True, exist_ok=True)
    state = RunState(
        spec,
        ctx.repo,
        ctx.run_id,
        worktree.branch,
        worktree.base_commit,
        worktree.path,
        dict(sources),
    )
    state.write(out)
    ctx.progress.stage(f"run {ctx.run_id}: branch {worktree.branch}, output {out}")
    if worktree.replaced:  # a re-run of the task: say what the branch held, and where it stays
        ctx.progress.stage(
            f"  the branch held an earlier run's commit {worktree.replaced[:12]}; this run "
            f"replaces it (to keep it: git branch <name> {worktree.replaced[:12]}; it stays in "
            f"the branch's reflog)"
        )
    try:
        with sigterm_as_interrupt():
            result = execute(spec, ctx)
    finally:
        ctx.progress.finished(ctx.report)
    return result


def service_model(spec: Spec) -> Model:
    """The model a run talks to unless its caller hands it one (`RunRequest.model_factory`):
    the OpenAI-compatible client the spec and the environment name."""
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


class SpecProgress(Progress):
    """Plain lines for one spec of a batch (a live display per thread would fight over the
    terminal), each prefixed with its name."""

    _write_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str, width: int) -> None:
        super().__init__(sys.stderr)
        self.prefix = name.ljust(width)

    def line(self, text: str) -> None:
        with self._write_lock:
            for part in text.splitlines() or [""]:
                super().line(f"{self.prefix} | {part}")
