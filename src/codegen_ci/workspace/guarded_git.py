"""Git commands in the run's worktree, run only once git's own files and refs are safe.

Commands (the agent's and the repository's tests, which run code the model wrote) can plant a
hook, a filter driver or a `gitdir:` redirect, or move refs. `GuardedGit` puts the repository's
git config and hooks, the worktree's `.git` file, the global git config and every ref a command
moved back before each of our own git commands. `Worktree` (worktree.py) is built on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.workspace import git
from codegen_ci.workspace.git_refs import RefGuard, RefState, claim_branch


class GuardedGit:
    """The git-integrity half of a `Worktree`; the dataclass there declares these fields."""

    path: Path
    branch: str
    # Guarded git files changed outside an agent command (by a validation command) and put
    # back before one of our own git commands; the caller reports them.
    git_tampering: list[str]
    # Refs (and HEADs) a command moved, put back before one of our git commands (git_refs.py).
    ref_moves: list[str]
    guard: git.GitGuard
    _trusted_git: git.GitState
    _refs: RefGuard
    _refs_before: RefState | None

    def _start_guarding(self) -> None:
        claim_branch(self.branch)
        self.guard = git.GitGuard.for_worktree(self.path)
        self._trusted_git = self.guard.state()
        self._refs = RefGuard.for_worktree(self.path, self.branch)

    def before_command(self) -> None:
        """A command is about to run: remember the refs, to put back whatever it moves.
        (Refs that move while no command of ours runs are the user's doing, and stay.)"""
        self.undo_refs()
        self._refs_before = self._refs.state()

    def undo_refs(self) -> list[str]:
        """Put back the refs and HEADs the last command moved; returns them (also kept in
        `ref_moves` for the report)."""
        before, self._refs_before = self._refs_before, None
        if before is None or not self.path.is_dir():
            return []
        self.git_tampering.extend(self.undo_git_tampering())  # git must be safe to run first
        moved = self._refs.restore(before)
        self.ref_moves.extend(moved)
        return moved

    def undo_git_tampering(self) -> list[str]:
        """Put the repository's git config and hooks, this worktree's `.git` file and the global
        git config back as they were when the worktree was made; returns what had changed.

        Commands (the agent's and the repository's tests, which run code the model wrote) can
        write there; a planted hook, filter driver or `gitdir:` redirect must never run inside
        our own git commands nor stay behind in the user's repository."""
        if not self.path.is_dir():
            return []  # removed: nothing of ours runs here any more
        return [str(path) for path in self.guard.restore(self._trusted_git)]

    def _git(
        self, args: Sequence[str], *, check: bool = True, input_bytes: bytes | None = None
    ) -> str:
        self.git_tampering.extend(self.undo_git_tampering())
        self.undo_refs()
        return git.git(args, self.path, check=check, input_bytes=input_bytes)

    def _git_ok(self, args: Sequence[str]) -> bool:
        try:
            self._git(args)
        except GitError:
            return False
        return True
