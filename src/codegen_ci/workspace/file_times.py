"""A new worktree's files that are exactly the checkout's get the checkout's modification times,
so the build caches copied from the checkout (cargo's `target/`, security/warm_caches.py) stay
warm in the worktree.

`git worktree add` writes every file now. Build tools that decide freshness by times then see
every source newer than its build output and rebuild all of it: cargo compares each source's
mtime with the time in its fingerprint's dep-info ("Compiling <crate>" in every worktree, though
`target/` was copied warm); ts-jest keys its transform cache on the times of the files a test
imports; make, tsc's `--incremental` and others do the same. A worktree made by a copy that kept
the times (`cp -a`) builds Fresh.

`copy_times` gives a tracked file of the new worktree the checkout file's times when both are
regular files (never a symlink, never through one: `os.utime` does not follow, and a folder on
the way that is a link in either tree is skipped) with the same content:
- git says the checkout's file holds what the worktree's commit holds (`git diff --name-only
  <commit>` in the checkout, working tree against that commit; our git calls run without
  fsmonitor: git looks at the file, trusting its index only where the stat data match); files
  the checkout marks assume-unchanged or skip-worktree, whose content git does not look at, are
  left out;
- and the bytes are the same: each candidate is compared byte for byte (sizes first), so a
  line-ending or encoding conversion between the index and the files never counts as equal.

Why a build tool can never skip a real rebuild because of this: a file gets the checkout's time
only when its bytes are the checkout file's bytes, so for every file (path, content, time) is
the same in both trees; the copied cache was built from the checkout, so whatever a tool
concludes from (path, content, time) in the worktree it would conclude in the checkout, where
the same cache is, and there it is right (if the checkout's cache is stale for a file, the
tool rebuilds there and here alike). Every other file keeps git's fresh time (now), later than
anything in the copied cache, so tools rebuild what it touches; a file the model writes later
gets a newer time still. A file the checkout lacks, or has untracked, is not touched.

Cost: two git calls that read the checkout's index (stat data, no hashing where it is clean),
one listing of the commit's tree and, per file, two `lstat`s and one comparison of bytes that
were just written (docs/benchmarks.md, "Build caches warm in the worktree").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.workspace import git, isolated_repo

REGULAR_MODES = frozenset({"100644", "100755"})
_CHUNK = 1 << 20


def copy_times(repo: Path, tree: Path) -> int:
    """Give each tracked file of the new worktree `tree` that is byte for byte the same file
    in the checkout (`repo`'s, or the user's for a repository of ours) the checkout file's
    access and modification times; returns how many got them. Nothing happens when the
    checkout cannot tell (the commit unknown there, git failing)."""
    checkout = isolated_repo.dependencies_of(repo)
    try:
        if checkout.resolve() == tree.resolve():
            return 0
        commit = git.rev_parse(tree, "HEAD")
        differing = _names(git.git([*_DIFF, commit, "--"], checkout))
        unlooked = _not_looked_at(git.git(["ls-files", "-v", "-z"], checkout))
        listing = git.git(["ls-tree", "-r", "-z", "--full-tree", commit], tree)
    except (GitError, OSError):
        return 0
    guard = _FolderGuard(checkout, tree)
    source, target = f"{checkout}/", f"{tree}/"
    copied = 0
    for entry in listing.split("\0"):
        meta, _, rel = entry.partition("\t")
        if not rel or meta.split(" ", 1)[0] not in REGULAR_MODES:
            continue
        if rel in differing or rel in unlooked or not guard.safe(rel):
            continue
        copied += _copy_time(source + rel, target + rel)
    return copied


# working tree against the commit: content compared wherever the index's stat data differ
_DIFF = ["diff", "--name-only", "-z", "--no-renames", "--ignore-submodules=all"]


def _names(out: str) -> set[str]:
    return {name for name in out.split("\0") if name}


def _not_looked_at(out: str) -> set[str]:
    """Paths the checkout's index marks assume-unchanged (a lowercase tag) or skip-worktree
    (`S`): git takes their content on trust, so their files may hold anything."""
    found = set()
    for entry in out.split("\0"):
        tag, _, rel = entry.partition(" ")
        if rel and (tag.islower() or tag == "S"):
            found.add(rel)
    return found


class _FolderGuard:
    """Whether a path's folders are plain folders, no symlink, in both trees (each folder
    checked once)."""

    def __init__(self, *roots: Path) -> None:
        self.roots = roots
        self.known: dict[str, bool] = {"": True}

    def safe(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return False
        return self._folder("/".join(parts[:-1]))

    def _folder(self, rel: str) -> bool:
        found = self.known.get(rel)
        if found is None:
            parent, _, _ = rel.rpartition("/")
            found = self._folder(parent) and all(_plain_folder(root / rel) for root in self.roots)
            self.known[rel] = found
        return found


def _plain_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _copy_time(source: str, target: str) -> int:
    """1 when `target` got `source`'s times (both regular files, the same bytes), else 0."""
    try:
        src, dst = os.lstat(source), os.lstat(target)
        if not (stat.S_ISREG(src.st_mode) and stat.S_ISREG(dst.st_mode)):
            return 0
        if src.st_size != dst.st_size or not _same_bytes(source, target):
            return 0
        os.utime(target, ns=(src.st_atime_ns, src.st_mtime_ns), follow_symlinks=False)
    except OSError:
        return 0
    return 1


_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _same_bytes(one: str, other: str) -> bool:
    """Whether two regular files hold the same bytes (opened without following a link or
    blocking on a FIFO swapped in since they were looked at)."""
    a = os.open(one, _OPEN)
    try:
        b = os.open(other, _OPEN)
        try:
            if not (stat.S_ISREG(os.fstat(a).st_mode) and stat.S_ISREG(os.fstat(b).st_mode)):
                return False
            while True:
                left, right = os.read(a, _CHUNK), os.read(b, _CHUNK)
                if left != right:
                    return False
                if not left:
                    return True
        finally:
            os.close(b)
    finally:
        os.close(a)
