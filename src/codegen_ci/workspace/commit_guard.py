"""What one of our commits may hold: exactly the agent's paths, and nothing that reaches a
protected path or another repository.

The commit is built in an index of our own, read from the base commit, so whatever a command
staged in the worktree's index (a workflow added with `git update-index`, an entry hidden by
flags) never rides along. Before committing, every staged entry is checked: a gitlink (a nested
repository or submodule) is refused, and so is a symlink at, into or above a protected path
(`.github/workflows -> ../ci` would make `ci/*.yml` workflows). A path at or above a gitlink of
that index, of the base or of a nested repository on disk never reaches `git add`: add asks the
nested repository whether it is dirty (a `git status` in there, which runs the filters its
config names), whatever our config says. Paths are literal (git.py): a changed file named
`:(glob)**` is that file, never a pattern that reaches the gitlink.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from codegen_ci.workspace import git
from codegen_ci.workspace.paths import matches

GITLINK, SYMLINK = "160000", "120000"
GITLINK_REFUSED = "gitlink (nested repository) refused in the commit"
# GitHub refuses a pushed file over 100 MB; our own git would read it whole to hash or diff it.
MAX_COMMIT_FILE_BYTES = 100 * 1000 * 1000
OVERSIZED_REFUSED = "file over 100 MB (apparent or allocated size) refused in the commit"
Refused = tuple[str, str]  # (path, reason)


def commit_paths(
    tree: Path, base: str, paths: Sequence[str], message: str, protected: Sequence[str]
) -> tuple[str | None, list[Refused]]:
    """Commit `paths` of the worktree `tree` on top of its HEAD (the base); returns the commit
    id (None: nothing to commit) and the entries refused."""
    folder = Path(tempfile.mkdtemp(prefix="codegen-index-"))
    env = {"GIT_INDEX_FILE": str(folder / "index")}
    try:
        git.git(["read-tree", base], tree, env=env)
        present = [p for p in paths if (tree / p).is_symlink() or (tree / p).exists()]
        present += _in_base(tree, base, [p for p in paths if p not in present])
        linked = at_gitlinks(tree, present, env, base)
        present = [p for p in present if p not in linked]
        if present:
            git.git(["add", "-A", "--", *present], tree, env=env)
        refused = unsafe_entries(tree, base, protected, env)
        for path, _ in refused:
            _unstage(tree, base, path, env)
        refused += [(p, GITLINK_REFUSED) for p in linked]
        if not git.git(["diff", "--cached", "--name-only", base], tree, env=env).strip():
            return None, refused
        git.git(
            ["commit", "-q", "--no-verify", "-F", "-"], tree, env=env, input_bytes=message.encode()
        )
        git.git(["reset", "-q"], tree, check=False)  # the worktree's own index follows HEAD
        return git.git(["rev-parse", "HEAD"], tree).strip(), refused
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unsafe_entries(
    tree: Path, base: str, protected: Sequence[str], env: dict[str, str]
) -> list[Refused]:
    # --ignore-submodules=none: list gitlinks too (comparing index and commit enters none)
    args = ["diff", "--cached", "--raw", "-z", "--no-renames", "--ignore-submodules=none", base]
    raw = git.git(args, tree, env=env)
    fields = raw.split("\0")
    refused: list[Refused] = []
    for meta, path in zip(fields[::2], fields[1::2], strict=False):
        parts = meta.split()
        if len(parts) < 5:
            continue
        mode, blob = parts[1], parts[3]
        if mode == GITLINK:
            refused.append((path, GITLINK_REFUSED))
        elif matches(path, protected):
            refused.append((path, "protected path staged in the index; left out of the commit"))
        elif mode == SYMLINK:
            target = git.git(["cat-file", "blob", blob], tree)
            if reaches_protected(path, target, protected):
                refused.append((path, "symlink at or into a protected path; left out"))
    return refused


def at_gitlinks(
    tree: Path, paths: Sequence[str], env: dict[str, str] | None = None, base: str | None = None
) -> list[str]:
    """Those of `paths` at, above or inside a gitlink of the index `env` names (default: the
    worktree's own), of the `base` commit, or of a nested repository on disk (a directory of
    the worktree holding a `.git`, which `git add` would make a gitlink)."""
    out = git.git(["ls-files", "-s", "-z"], tree, env=env)
    links = {e.partition("\t")[2] for e in out.split("\0") if e.startswith(f"{GITLINK} ")}
    if base is not None:
        out = git.git(["ls-tree", "-r", "-z", "--full-tree", base], tree)
        links |= {e.partition("\t")[2] for e in out.split("\0") if e.startswith(f"{GITLINK} ")}
    found = []
    for path in paths:
        plain = path.rstrip("/")
        if any(
            plain == link or link.startswith(f"{plain}/") or plain.startswith(f"{link}/")
            for link in links
        ) or nested_repository(tree, plain):
            found.append(path)
    return found


def nested_repository(tree: Path, rel: str) -> bool:
    """Whether `rel`, one of the folders above it, or (for a folder) anything below it holds a
    `.git` (a file or a folder: a repository of its own). Symlinks are never followed."""
    parts = [p for p in rel.split("/") if p]
    for n in range(1, len(parts) + 1):
        if os.path.lexists(tree.joinpath(*parts[:n], ".git")):
            return True
        if not tree.joinpath(*parts[:n]).is_dir() or tree.joinpath(*parts[:n]).is_symlink():
            return False
    top = tree.joinpath(*parts)
    if not parts or top.is_symlink() or not top.is_dir():
        return False
    # os.walk follows no symlink by default
    return any(".git" in folders or ".git" in files for _, folders, files in os.walk(top))


def reaches_protected(path: str, target: str, protected: Sequence[str]) -> bool:
    """Whether a symlink at `path` pointing to `target` is at, into or above a protected path."""
    candidates = [path]
    if not target.startswith("/"):
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if not resolved.startswith(".."):
            candidates.append(resolved)
    prefixes = [_literal_dir(p) for p in protected]
    for place in candidates:
        if matches(place, protected) or matches(f"{place}/x", protected):
            return True
        for prefix in filter(None, prefixes):
            if (
                place in (prefix, ".")
                or prefix.startswith(f"{place}/")
                or place.startswith(f"{prefix}/")
            ):
                return True
    return False


def _literal_dir(pattern: str) -> str:
    """The directory part of a glob before its first wildcard (`.github/workflows/**` ->
    `.github/workflows`); empty for a pattern that may match anywhere."""
    head = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
    return head.rstrip("/") if "/" in head else ""


def _in_base(tree: Path, base: str, paths: list[str]) -> list[str]:
    """Those of `paths` that the base commit has (deleted in the worktree)."""
    if not paths:
        return []
    out = git.git(["ls-tree", "-r", "-z", "--name-only", base, "--", *paths], tree)
    listed = set(out.split("\0"))
    return [p for p in paths if p in listed]


def _unstage(tree: Path, base: str, path: str, env: dict[str, str]) -> None:
    if _in_base(tree, base, [path]):
        git.git(["reset", "-q", base, "--", path], tree, env=env)
    else:
        git.git(["rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", path], tree, env=env)
