"""`run_command` for the model: the one subprocess runner, with the scrubbed environment, and
a check afterwards of what the command changed. The command runs confined (the sandbox: it can
write only the worktree and its scratch directory); where confinement was switched off it can
write anywhere the runner can, so whatever it did to protected paths, to test files under
`protect_tests`, or to git's config and hooks (see `GitGuard`) is undone and reported. Its
log is redacted as soon as it ends: the output directory is uploaded as an artifact."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.report import Refusal
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.workspace import output_cap
from codegen_ci.workspace.file_kinds import is_protected_test_path
from codegen_ci.workspace.paths import ARTIFACT_GLOBS, LINK_REFUSED, matches
from codegen_ci.workspace.proc import run_shell
from codegen_ci.workspace.worktree import Worktree

MAX_COMMAND_TIMEOUT_S = 600
OUTPUT_CHARS = 8000


@dataclass
class AgentShell:
    worktree: Worktree
    env: Mapping[str, str]
    log_dir: Path
    timeout: float
    protect_tests: bool = False
    sandbox: Sandbox | None = None  # None: unconfined (only where a caller chose so)
    network: bool = False  # `validation.network` names run_command
    refusals: list[Refusal] = field(default_factory=list)
    tests_touched: set[str] = field(default_factory=set)
    count: int = 0
    # Seconds left of the run's wall-clock budget: no command may run past it.
    time_left: Callable[[], float] | None = None

    def run(self, command: str) -> str:
        self.count += 1
        before = self.worktree.snapshot()  # also undoes earlier tampering: a clean start
        self.worktree.before_command()
        timeout = min(self.timeout, MAX_COMMAND_TIMEOUT_S)
        budget_cut = self.time_left is not None and self.time_left() < timeout
        if self.time_left is not None:
            timeout = max(0.1, min(timeout, self.time_left()))
        result = run_shell(
            command,
            cwd=self.worktree.path,
            env=self.env,
            timeout=timeout,
            output_path=self.log_dir / f"agent-command-{self.count:03d}.log",
            wrap=self.sandbox.prefix(self.worktree.path, network=self.network)
            if self.sandbox
            else (),
        )
        REDACTOR.redact_file(result.output_path)  # bounded: the runner caps the log
        output_cap.enforce(self.log_dir.parent, [result.output_path])
        notes = self._review(before)
        state = f"exit code {result.exit_code}"
        if result.timed_out:
            state = "timed out: the run's time budget ran out" if budget_cut else "timed out"
        text = f"[{state}]\n{result.excerpt(OUTPUT_CHARS)}"
        return text + ("\n" + "\n".join(notes) if notes else "")

    def _review(self, before: dict[str, str | None]) -> list[str]:
        notes = []
        for path in self.worktree.undo_git_tampering():  # before any git command of ours runs
            self.refusals.append(
                Refusal(
                    path=path,
                    reason="git hooks/config changed by a command; restored",
                    tool="run_command",
                )
            )
            notes.append(f"[harness: changes to {Path(path).name} (git internals) were undone]")
        for ref in self.worktree.undo_refs():  # reported from `worktree.ref_moves`
            notes.append(
                f"[harness: {ref} was moved; it was put back. Work on the current "
                "branch only: the harness commits for you]"
            )
        for rel in self.worktree.restore_escaping_links():
            self.refusals.append(Refusal(path=rel, reason=LINK_REFUSED, tool="run_command"))
            notes.append(f"[harness: {rel} is a symlink out of the repository; undone]")
        for rel, digest in self.worktree.snapshot().items():
            if before.get(rel, "absent") == digest or matches(rel, ARTIFACT_GLOBS):
                continue
            if matches(rel, self.worktree.protected) or (
                self.protect_tests and is_protected_test_path(rel)
            ):
                self.worktree.restore(rel)
                self.refusals.append(
                    Refusal(
                        path=rel,
                        reason="protected path written by a command; restored",
                        tool="run_command",
                    )
                )
                notes.append(f"[harness: {rel} is protected; the change was undone]")
                continue
            self.worktree.claim(rel)
            if is_protected_test_path(rel):
                self.tests_touched.add(rel)
        return notes
