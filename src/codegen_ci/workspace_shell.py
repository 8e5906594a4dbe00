"""`run_command` for the model: the one subprocess runner, with the scrubbed environment, and
a check afterwards of what the command changed. A command can write anywhere the runner can
(the runner is the sandbox), so whatever it did to protected paths, to test files under
`protect_tests`, or to the repository's hooks and config is undone and reported."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci import git
from codegen_ci.proc import run_shell
from codegen_ci.report import Refusal
from codegen_ci.workspace import ARTIFACT_GLOBS, Worktree, is_test_path, matches

MAX_COMMAND_TIMEOUT_S = 600
OUTPUT_CHARS = 8000


@dataclass
class AgentShell:
    worktree: Worktree
    env: Mapping[str, str]
    log_dir: Path
    timeout: float
    protect_tests: bool = False
    refusals: list[Refusal] = field(default_factory=list)
    tests_touched: set[str] = field(default_factory=set)
    count: int = 0

    def run(self, command: str) -> str:
        self.count += 1
        before = self.worktree.snapshot()
        guarded = _guarded_files(self.worktree)
        result = run_shell(
            command,
            cwd=self.worktree.path,
            env=self.env,
            timeout=min(self.timeout, MAX_COMMAND_TIMEOUT_S),
            output_path=self.log_dir / f"agent-command-{self.count:03d}.log",
        )
        notes = self._review(before, guarded)
        state = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        text = f"[{state}]\n{result.excerpt(OUTPUT_CHARS)}"
        return text + ("\n" + "\n".join(notes) if notes else "")

    def _review(self, before: dict[str, str | None], guarded: dict[Path, bytes | None]) -> list[str]:
        notes = []
        for path, content in guarded.items():
            now = path.read_bytes() if path.is_file() else None
            if now != content:
                _put_back(path, content)
                self.refusals.append(Refusal(path=str(path), reason="git hooks/config changed by "
                                             "a command; restored", tool="run_command"))  # fmt: skip
                notes.append(f"[harness: changes to {path.name} in git internals were undone]")
        for rel, digest in self.worktree.snapshot().items():
            if before.get(rel, "absent") == digest or matches(rel, ARTIFACT_GLOBS):
                continue
            if matches(rel, self.worktree.protected) or (self.protect_tests and is_test_path(rel)):
                self.worktree.restore(rel)
                self.refusals.append(Refusal(path=rel, reason="protected path written by a "
                                             "command; restored", tool="run_command"))  # fmt: skip
                notes.append(f"[harness: {rel} is protected; the change was undone]")
                continue
            self.worktree.claim(rel)
            if is_test_path(rel):
                self.tests_touched.add(rel)
        return notes


def _guarded_files(worktree: Worktree) -> dict[Path, bytes | None]:
    """The repository's git config and hooks: a command must not plant code git would run."""
    common = git.common_dir(worktree.path)
    files = [common / "config", *sorted((common / "hooks").glob("*"))]
    return {p: (p.read_bytes() if p.is_file() else None) for p in files}


def _put_back(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(content)
