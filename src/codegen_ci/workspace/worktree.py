"""The worktree the agent edits: making it, its guarded git, its change tracking, and the commit
of exactly the agent's changes.

The run never touches the user's checkout: it works in a separate `git worktree` on its own
branch (`create_worktree`; the baseline's, detached at the base, is `attach_worktree`). Both
live outside the repository's `.git` directory (see `worktrees_root`): jest, vitest and every
tool built on watchman or haste maps ignore each path containing `/.git/`, so a worktree under
`.git/` has no tests for them. They live in a fresh private folder of the run's own
(workspace/private_dir.py), never at a path another user could guess and make first.
Dependencies installed in the checkout are linked in (workspace/dependency_links.py); files
identical to the checkout's get its modification times, so its build caches stay warm
(workspace/file_times.py).

Files that validation commands create (reports, caches, `.coverage`) are tracked as artifacts
and left out of the commit; so are protected paths, which are restored. A file a command
rewrites in place (a fixing linter, a formatter) stays what it was: the change, or a tracked
file, committed as rewritten (`note_artifacts`). The paths
the model gives are checked by the path guard (workspace/paths.py).

Its git commands are guarded: commands (the agent's and the repository's tests, which run code
the model wrote) can plant a hook, a filter driver or a `gitdir:` redirect, or move refs. The
repository's git config and hooks, the worktree's `.git` file, the global git config and every
ref a command moved are put back before each of our own git commands (workspace/git_guard.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.workspace import commit_guard, git, git_guard
from codegen_ci.workspace.dependency_links import is_linked, link_dependencies, unlink_dependencies
from codegen_ci.workspace.file_times import copy_times
from codegen_ci.workspace.git import trust_directory
from codegen_ci.workspace.git_guard import RefGuard, RefState, claim_branch
from codegen_ci.workspace.paths import (
    ARTIFACT_GLOBS,
    GENERATED_GLOBS,
    escapes,
    leaves,
    link_digest,
    matches,
    resolve_path,
)
from codegen_ci.workspace.private_dir import check_private, private_folder

ABSENT = "absent"  # `note_artifacts`: a path that was not among the changed ones before


@dataclass
class Worktree:
    """A git worktree on its own branch, created from `base_commit`."""

    repo: Path  # the user's repository (main worktree)
    path: Path
    branch: str
    base_commit: str
    protected: Sequence[str] = ()
    artifacts: set[str] = field(default_factory=set)
    # Tracked files only commands rewrote (formatting the change never touched): committed,
    # yet on their own not a change (`holds_change`).
    formatted: set[str] = field(default_factory=set)
    links: tuple[str, ...] = ()  # dependency dirs linked from the checkout; never the change
    named: tuple[str, ...] = ()  # globs the task named (`outputs`): kept even if generated
    # What our git guards put back before one of our own git commands (git_guard.py): guarded
    # git files a command changed, and refs (and HEADs) it moved; the caller reports them.
    git_tampering: list[str] = field(default_factory=list)
    ref_moves: list[str] = field(default_factory=list)
    commit_refusals: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    replaced: str | None = None  # the commit an earlier run of the task left on `branch`
    guard: git_guard.GitGuard = field(init=False, repr=False)
    _trusted_git: git_guard.GitState = field(init=False, repr=False)
    _refs: RefGuard = field(init=False, repr=False)
    _refs_before: RefState | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        claim_branch(self.branch, git.common_dir(self.repo))  # (`resume` makes one directly)
        self.guard = git_guard.GitGuard.for_worktree(self.path)
        self._trusted_git = self.guard.state()
        self._refs = RefGuard.for_worktree(self.path, self.branch)

    # --- guarded git ---------------------------------------------------------------------

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

    # --- the path guard ------------------------------------------------------------------

    def resolve(self, user_path: str, *, for_write: bool = False) -> Path:
        """Resolve a path the model gave, inside the worktree, or raise `PathRefused`
        (paths.py)."""
        return resolve_path(self.path, user_path, self.protected, for_write=for_write)

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.path.resolve()).as_posix()

    # --- change tracking -----------------------------------------------------------------

    def changed_paths(self) -> list[str]:
        """Paths that differ from the base commit (tracked edits, deletions, untracked)."""
        # --ignore-submodules=all on the command line: a `submodule.<name>.ignore` in
        # `.gitmodules` overrides the config, and a populated submodule's status runs its filters.
        # `--branch` says where HEAD is: commits since the base (finalize's) are asked of
        # `git diff` only when there are some, one git process less per call otherwise.
        out = self._git(
            [
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ]
        )
        paths, head = status_paths(out)
        if head != self.base_commit:
            committed = self._git(
                ["diff", "--name-only", "-z", "--ignore-submodules=all", self.base_commit, "HEAD"]
            )
            paths.extend(p for p in committed.split("\0") if p)
        return sorted(p for p in set(paths) if not is_linked(p, self.links))

    def untracked_entries(self) -> list[str]:
        """Every untracked and every git-ignored file (a nested repository: its folder, with a
        trailing `/`), dependency copies included: what git alone would never commit."""
        out = self._git(
            [
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--ignored=traditional",
                "--no-renames",
                "--ignore-submodules=all",
            ]
        )
        return [e[3:] for e in out.split("\0") if e[:3] in ("?? ", "!! ")]

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
        """Sort what a validation command changed since `before`. A file it created, or
        deleted, is its artifact (reports, caches, builds), not the change. A file that was
        there when it ran (one of the change's, or one the base commit tracks) and that it
        rewrote in place is the repository's own formatting (`ruff` with `fix = true`,
        `eslint --fix`, `prettier --write`, `gofmt -w`, black): the gate judged the rewritten
        file, so it stays the change and the commit holds it as rewritten."""
        for rel, digest in self.snapshot().items():
            was = before.get(rel, ABSENT)
            if was == digest or rel in self.artifacts:
                continue
            existed = was not in (ABSENT, None) or (rel not in before and self.in_base(rel))
            if digest is None or not existed:
                self.artifacts.add(rel)
            elif was == ABSENT:
                self.formatted.add(rel)

    def claim(self, rel: str) -> None:
        """The agent wrote `rel` itself: part of the change even if a command touched it too."""
        self.artifacts.discard(rel)
        self.formatted.discard(rel)

    def holds_change(self, paths: Sequence[str]) -> bool:
        """Whether `paths` hold more than the formatting commands did to files the change
        never touched."""
        return any(p not in self.formatted for p in paths)

    def agent_changes(self) -> list[str]:
        """The change: what the agent wrote, less what commands generated (caches, coverage,
        builds new since the base), unless the task named it in `outputs`."""
        return [
            p
            for p in self.changed_paths()
            if matches(p, self.named)
            or (
                p not in self.artifacts
                and not matches(p, ARTIFACT_GLOBS)
                and not (matches(p, GENERATED_GLOBS) and not self.in_base(p))
            )
        ]

    def in_base(self, rel: str) -> bool:
        return self._git_ok(["cat-file", "-e", f"{self.base_commit}:{rel}"])

    def base_text(self, rel: str) -> str | None:
        """`rel` as the base commit has it (a blob, no filter run); None when it has none."""
        if not self.in_base(rel):
            return None
        return self._git(["cat-file", "blob", f"{self.base_commit}:{rel}"], check=False)

    def protected_changes(self) -> list[str]:
        return [p for p in self.changed_paths() if matches(p, self.protected)]

    def restore_escaping_links(self) -> list[str]:
        """Restore every changed symlink out of the repository (paths.py); returns them."""
        restored: list[str] = []
        for check in (leaves, escapes):
            found = [
                p
                for p in self.changed_paths()
                if (self.path / p).is_symlink() and check(self.path, p)
            ]
            for rel in found:
                self.restore(rel)
            restored += found
        return restored

    def restore(self, rel: str) -> None:
        """Put `rel` back as it is in the base commit (or remove it if the base has none)."""
        if self.in_base(rel):
            self._git(["checkout", self.base_commit, "--", rel])
            self._git(["reset", "-q", "--", rel])
        else:
            target = self.path / rel
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)

    # --- result --------------------------------------------------------------------------

    def refuse_gitlinks(self, paths: Sequence[str]) -> list[str]:
        """`paths` less those at, above or inside a gitlink (of the base, of the worktree's
        index, or a nested repository on disk), which are refused (`commit_refusals`): no git
        command of ours is ever pointed at another repository."""
        self.git_tampering.extend(self.undo_git_tampering())
        linked = set(commit_guard.at_gitlinks(self.path, paths, base=self.base_commit))
        self.commit_refusals.extend((p, commit_guard.GITLINK_REFUSED) for p in sorted(linked))
        big = set(self.oversized(paths))
        self.commit_refusals.extend((p, commit_guard.OVERSIZED_REFUSED) for p in sorted(big))
        return [p for p in paths if p not in linked | big]

    def oversized(self, paths: Sequence[str]) -> list[str]:
        """Paths (not followed) whose apparent or allocated size is over the commit limit: a
        command can make a sparse terabyte in a moment, which git would read whole."""
        out = []
        for rel in paths:
            try:
                info = (self.path / rel).lstat()
            except OSError:
                continue
            size = max(info.st_size, info.st_blocks * 512)
            if stat.S_ISREG(info.st_mode) and size > commit_guard.MAX_COMMIT_FILE_BYTES:
                out.append(rel)
        return out

    def commit(self, paths: Sequence[str], message: str) -> str | None:
        """Commit exactly `paths` on the branch; returns the commit id (None: nothing to do).
        Gitlinks and symlinks into protected paths are left out (`commit_refusals`)."""
        if not paths:
            return None
        self.git_tampering.extend(self.undo_git_tampering())
        head = self._git(["rev-parse", "HEAD"]).strip()
        commit, refused = commit_guard.commit_paths(self.path, head, paths, message, self.protected)
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
        external diff program and no textconv (both run commands, and neither output applies);
        nothing at or in a gitlink (`add -N` there would ask the nested repository)."""
        self.git_tampering.extend(self.undo_git_tampering())
        linked = set(commit_guard.at_gitlinks(self.path, paths, base=self.base_commit))
        linked |= set(self.oversized(paths))  # (both refused by `refuse_gitlinks`)
        paths = [p for p in paths if p not in linked]
        if not paths:
            return ""
        self._git(["add", "-A", "-N", "--", *paths], check=False)
        args = ["diff", "--binary", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
        return self._git([*args, self.base_commit, "--", *paths])

    def remove(self) -> None:
        self.undo_refs()
        self.git_tampering.extend(self.undo_git_tampering())
        unlink_dependencies(self.path, self.links)
        try:
            worktree_git(self.repo, ["remove", "--force", str(self.path)])
        except GitError:
            shutil.rmtree(self.path, ignore_errors=True)
            worktree_git(self.repo, ["prune"], check=False)
        with contextlib.suppress(OSError):  # the repository's worktrees dir, once empty
            self.path.parent.rmdir()

    def discard(self) -> None:
        """Remove the worktree and delete its branch: the run leaves nothing behind (a dry
        run, a run that could not start, a run that committed nothing)."""
        self.remove()
        git.git(["branch", "-D", self.branch], self.repo, check=False)


HASH_LIMIT = 64 * 1024 * 1024


def _hash(path: Path) -> str:
    """The content's digest; for a file past HASH_LIMIT (a command can make a sparse file of
    terabytes in an instant) its size, time and inode instead. Opened without following a
    link or blocking on a FIFO swapped in since the caller looked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"special:{st.st_mode:o}"
        if max(st.st_size, st.st_blocks * 512) > HASH_LIMIT:
            return f"large:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        digest = hashlib.sha1(usedforsecurity=False)
        for chunk in iter(lambda: f.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- making worktrees ----------------------------------------------------------------------

# One `git worktree` command at a time in this process. When a repository's last linked
# worktree goes (`remove`, `prune`), git deletes its empty `worktrees/` folder; an `add` running
# at that moment has just made that folder and then fails to make its own entry in it ("could
# not create directory of '.git/worktrees/...'"). The runs of a batch, an eval's check (its dry
# runs share the user's repository) and a run's baseline and proof trees add and remove
# worktrees of one repository concurrently.
_WORKTREE_COMMANDS = threading.Lock()


def worktree_git(repo: Path, args: Sequence[str], *, check: bool = True) -> str:
    """`git worktree <args>` in `repo`, never at the same time as another of this process."""
    with _WORKTREE_COMMANDS:
        return git.git(["worktree", *args], repo, check=check)


def worktrees_root(repo: Path, environ: Mapping[str, str] | None = None) -> Path:
    """A new private folder (mkdtemp: 0700, ours, an unpredictable name) for one run's
    worktrees: under `$RUNNER_TEMP` in GitHub Actions, else under the temporary directory;
    never under `.git` and never inside the checkout (nothing of ours may show up in its
    `git status`). Its path is recorded in run.json (`resume` finds the worktree there)."""
    env = os.environ if environ is None else environ
    runner_temp = env.get("RUNNER_TEMP")
    base = Path(runner_temp) if env.get("GITHUB_ACTIONS") == "true" and runner_temp else None
    return private_folder(base, name=repo.resolve().name)


def create_worktree(
    repo: Path,
    path: Path,
    *,
    branch: str,
    base: str,
    protected: Sequence[str],
    reset_branch: bool = False,
    keep_branch: bool = False,
) -> Worktree:
    """A new worktree at `path` on a new `branch` from `base` (a commit-ish); `reset_branch`:
    an existing `branch` moved to `base`; `keep_branch`: an existing one checked out as it is
    (`resume`: it holds the run's commit), `base` still the run's base commit."""
    base_commit = git.rev_parse(repo, base)
    git.check_branch_name(repo, branch)
    # before it exists: a concurrent run's ref guard (this process's or another's) leaves it be
    claim_branch(branch, git.common_dir(repo))
    check_private(path.parent)
    trust_directory(path)
    if keep_branch:
        worktree_git(repo, ["add", "-q", str(path), branch])
    else:
        flag = "-B" if reset_branch else "-b"
        worktree_git(repo, ["add", "-q", flag, branch, str(path), base_commit])
    copy_times(repo, path)  # the checkout's build caches stay warm (file_times.py)
    links = link_dependencies(repo, path)
    return Worktree(repo, path, branch, base_commit, tuple(protected), links=links)


def attach_worktree(
    repo: Path, path: Path, *, commit: str, lender: Path | None = None
) -> tuple[Path, tuple[str, ...]]:
    """A detached worktree at `commit` (used for baseline runs) and its dependency links;
    `lender`: a worktree whose unwritten `node_modules` it borrows (dependency_links.py)."""
    check_private(path.parent)
    trust_directory(path)
    worktree_git(repo, ["add", "-q", "--detach", str(path), commit])
    copy_times(repo, path)
    return path, link_dependencies(repo, path, lender=lender)


def unique_branch(repo: Path, wanted: str) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`... when a local branch of that name exists."""
    name, n = wanted, 1
    while git.branch_exists(repo, name):
        n += 1
        name = f"{wanted}-{n}"
    return name


# `git status --porcelain=v2 -z` entries: the fields before the path, by the entry's kind
# (1: changed, 2: renamed or copied, u: unmerged, ?: untracked, !: ignored).
_V2_FIELDS = {"1": 8, "2": 9, "u": 10, "?": 1, "!": 1}


def status_paths(out: str) -> tuple[list[str], str]:
    """The paths of a `git status --porcelain=v2 --branch -z` listing, and HEAD's commit ("" on
    an unborn branch). A rename's entry is followed by its source path, listed as well."""
    paths: list[str] = []
    head = ""
    entries = out.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            head = "" if oid == "(initial)" else oid
            continue
        fields = _V2_FIELDS.get(entry[:1])
        if fields is None or entry[1:2] != " ":
            continue
        parts = entry.split(" ", fields)
        if len(parts) > fields:
            paths.append(parts[fields])
        if entry[:1] == "2" and i < len(entries):
            paths.append(entries[i])
            i += 1
    return paths, head
