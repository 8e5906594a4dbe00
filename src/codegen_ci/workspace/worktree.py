"""The worktree the agent edits, the path guard, and the commit of exactly the agent's changes.

The run never touches the user's checkout: it works in a separate `git worktree` on its own
branch. Files that validation commands create or change (reports, caches, `.coverage`) are
tracked as artifacts and left out of the commit; so are protected paths, which are restored.
`create_worktree` (workspace/create.py) makes one.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codegen_ci.errors import GitError
from codegen_ci.workspace import commit_guard, git
from codegen_ci.workspace.dependency_links import is_linked, unlink_dependencies
from codegen_ci.workspace.git_refs import RefGuard, RefState, claim_branch
from codegen_ci.workspace.globs import ARTIFACT_GLOBS, GENERATED_GLOBS, matches
from codegen_ci.workspace.symlinks import escapes, leaves, link_digest


class PathRefused(Exception):
    """A path the model may not use; the message says why."""


@dataclass
class Worktree:
    """A git worktree on its own branch, created from `base_commit`."""

    repo: Path  # the user's repository (main worktree)
    path: Path
    branch: str
    base_commit: str
    protected: Sequence[str] = ()
    artifacts: set[str] = field(default_factory=set)
    links: tuple[str, ...] = ()  # dependency dirs linked from the checkout; never the change
    named: tuple[str, ...] = ()  # globs the task named (`outputs`): kept even if generated
    # Guarded git files changed outside an agent command (by a validation command) and put
    # back before one of our own git commands; the caller reports them.
    git_tampering: list[str] = field(default_factory=list)
    # Refs (and HEADs) a command moved, put back before one of our git commands (git_refs.py).
    ref_moves: list[str] = field(default_factory=list)
    commit_refusals: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    guard: git.GitGuard = field(init=False, repr=False)
    _trusted_git: git.GitState = field(init=False, repr=False)
    _refs: RefGuard = field(init=False, repr=False)
    _refs_before: RefState | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
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

    # --- git integrity -------------------------------------------------------------------

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

    # --- the path guard ------------------------------------------------------------------

    def resolve(self, user_path: str, *, for_write: bool = False) -> Path:
        """Resolve a path the model gave, inside the worktree, or raise `PathRefused`."""
        raw = user_path.strip() or "."
        if "\x00" in raw:
            raise PathRefused("path contains a NUL byte")
        if PurePosixPath(raw).is_absolute() or raw.startswith("~"):
            raise PathRefused("absolute paths are not allowed; use a path relative to the repo")
        root = self.path.resolve()
        try:
            candidate = (root / raw).resolve()
        except RuntimeError:  # a loop of symlinks
            raise PathRefused("path is a loop of symlinks") from None
        if candidate != root and root not in candidate.parents:
            raise PathRefused("path resolves outside the repository")
        rel = candidate.relative_to(root).as_posix() if candidate != root else "."
        if rel == ".git" or rel.startswith(".git/"):
            raise PathRefused("git internals are off limits")
        if for_write and matches(rel, self.protected):
            raise PathRefused("protected path: changes here are not allowed")
        return candidate

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.path.resolve()).as_posix()

    # --- change tracking -----------------------------------------------------------------

    def changed_paths(self) -> list[str]:
        """Paths that differ from the base commit (tracked edits, deletions, untracked)."""
        out = self._git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"])
        paths = []
        for entry in out.split("\0"):
            if len(entry) > 3:
                paths.append(entry[3:])
        committed = self._git(["diff", "--name-only", "-z", self.base_commit, "HEAD"])
        paths.extend(p for p in committed.split("\0") if p)
        return sorted(p for p in set(paths) if not is_linked(p, self.links))

    def snapshot(self) -> dict[str, str | None]:
        """Content hash of every changed path (None: deleted); toolchain caches and outputs
        (never the change anyway) are not hashed, so an unignored node_modules costs nothing."""
        snap: dict[str, str | None] = {}
        for rel in self.changed_paths():
            if matches(rel, ARTIFACT_GLOBS):
                continue
            full = self.path / rel
            if full.is_symlink():  # the link itself; its target may be outside
                snap[rel] = link_digest(full)
            else:
                snap[rel] = _hash(full) if full.is_file() else None
        return snap

    def note_artifacts(self, before: dict[str, str | None]) -> None:
        """Everything that changed since `before` was written by a command, not the agent."""
        for rel, digest in self.snapshot().items():
            if before.get(rel, "absent") != digest:
                self.artifacts.add(rel)

    def claim(self, rel: str) -> None:
        """The agent wrote `rel` itself: part of the change even if a command touched it too."""
        self.artifacts.discard(rel)

    def agent_changes(self) -> list[str]:
        """The change: what the agent wrote, less what commands generated (caches, coverage,
        builds new since the base), unless the task named it in `outputs`."""
        return [p for p in self.changed_paths() if matches(p, self.named) or (
            p not in self.artifacts and not matches(p, ARTIFACT_GLOBS)
            and not (matches(p, GENERATED_GLOBS) and not self._in_base(p)))]  # fmt: skip

    def _in_base(self, rel: str) -> bool:
        return self._git_ok(["cat-file", "-e", f"{self.base_commit}:{rel}"])

    def protected_changes(self) -> list[str]:
        return [p for p in self.changed_paths() if matches(p, self.protected)]

    def restore_escaping_links(self) -> list[str]:
        """Restore every changed symlink out of the repository (symlinks.py); returns them."""
        restored: list[str] = []
        for check in (leaves, escapes):
            found = [p for p in self.changed_paths()
                     if (self.path / p).is_symlink() and check(self.path, p)]  # fmt: skip
            for rel in found:
                self.restore(rel)
            restored += found
        return restored

    def restore(self, rel: str) -> None:
        """Put `rel` back as it is in the base commit (or remove it if the base has none)."""
        if self._in_base(rel):
            self._git(["checkout", self.base_commit, "--", rel])
            self._git(["reset", "-q", "--", rel])
        else:
            target = self.path / rel
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)

    # --- result --------------------------------------------------------------------------

    def commit(self, paths: Sequence[str], message: str) -> str | None:
        """Commit exactly `paths` on the branch; returns the commit id (None: nothing to do).
        Gitlinks and symlinks into protected paths are left out (`commit_refusals`)."""
        if not paths:
            return None
        self.git_tampering.extend(self.undo_git_tampering())
        head = self._git(["rev-parse", "HEAD"]).strip()
        commit, refused = commit_guard.commit_paths(self.path, head, paths, message,
                                                    self.protected)  # fmt: skip
        self.commit_refusals.extend(refused)
        return commit

    def fold_onto_base(self) -> None:
        """Move the run's own branch back to the base, keeping index and files (a resumed
        run's wip commit, a command's commits): one commit on top of the base. By its name:
        whatever HEAD points at, no other branch ever moves."""
        own = f"refs/heads/{self.branch}"
        if self._git(["rev-parse", "--verify", own]).strip() != self.base_commit:
            self._git(["update-ref", "--no-deref", own, self.base_commit])

    def diff(self, paths: Sequence[str]) -> str:
        """The change as a patch (binary-safe), base commit to working tree. Raw content: no
        external diff program and no textconv (both run commands, and neither output applies)."""
        if not paths:
            return ""
        self._git(["add", "-A", "-N", "--", *paths], check=False)
        return self._git(
            ["diff", "--binary", "--no-ext-diff", "--no-textconv", self.base_commit, "--", *paths]
        )

    def remove(self) -> None:
        self.undo_refs()
        self.git_tampering.extend(self.undo_git_tampering())
        unlink_dependencies(self.path, self.links)
        try:
            git.git(["worktree", "remove", "--force", str(self.path)], self.repo)
        except GitError:
            shutil.rmtree(self.path, ignore_errors=True)
            git.git(["worktree", "prune"], self.repo, check=False)
        with contextlib.suppress(OSError):  # the repository's worktrees dir, once empty
            self.path.parent.rmdir()


def _hash(path: Path) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()
