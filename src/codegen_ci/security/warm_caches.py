"""Caches that are warm outside stay warm inside (docs/sandbox.md, "Warm caches"), without a
confined command ever writing into the user's own cache.

Two kinds, both copied by the tool (never linked: a hard link would let a command write
through to the user's file), with `cp -a --reflink=auto` (copy-on-write where the filesystem
has it):
- **the user's build caches** (`USER_CACHES`: Go's build cache): copied into each phase's
  fresh scratch (security/sandbox.py `new_phase`), and the command's variable points there. A
  phase starts from the user's cache, never from what an earlier phase's commands wrote, so a
  cache poisoned by one phase does not reach the next. A cache larger than `MAX_SEED_BYTES`
  is not copied (the phase starts cold, as before).
- **the checkout's caches** (`CHECKOUT_CACHES`: cargo's `target/`, mypy's and ruff's): copied
  into each worktree the run makes, beside its dependency folders
  (workspace/dependency_links.py), where the run's commands write anyway; like those copies
  they are never part of the change.
- **the pre-flight's caches in TMPDIR** (`TMPDIR_CACHES`: jest's `jest_<uid>`, named by a hash
  of the project's absolute path, so the user's, made in the checkout, never matches a
  worktree): TMPDIR is fresh in every phase, so what the pre-flight's own commands wrote there,
  on the untouched code in the run's own worktree before any model call, is kept
  (`keep_tmp_caches`, through the guarded reader: regular files only, no link followed) and
  each later phase of the run starts from a copy of it (`seed_tmp_caches`), never from what a
  round's commands wrote. Each run (each candidate) keeps its own, in its own sandbox root.
  The run's worktree is at the same path in every run (workspace/slots.py), so the same copy
  also becomes the caches kept for the repository (`save_caches`, beside the slots), which the
  next run's pre-flight starts from: warm from its first command."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from codegen_ci import runners
from codegen_ci.security import guarded_read

MAX_SEED_BYTES = 1 << 30
# (variable, where the copy goes in the scratch): the user's caches, each runner's
# (runners/: `USER_CACHES`, found by its `user_caches`).
USER_CACHES = runners.user_cache_places()
# Cache folders in a checkout (untracked) copied into a new worktree that has none: mypy's,
# ruff's and the runners' (runners/: `CHECKOUT_CACHES`).
TOOL_CACHES = frozenset({".mypy_cache", ".ruff_cache"})
CHECKOUT_CACHES = TOOL_CACHES | runners.checkout_caches()
# Cache folders commands write directly in TMPDIR (runners/: `TMPDIR_CACHES`, jest's), kept
# from the pre-flight.
TMPDIR_CACHES = runners.tmpdir_caches()
MAX_KEPT_FILES = 200_000
MAX_KEPT_FILE_BYTES = 1 << 28


def user_caches(environ: Mapping[str, str]) -> tuple[tuple[str, Path], ...]:
    """The user's caches that exist, by variable (Go's build cache: runners/go.py)."""
    return runners.user_caches(environ)


def seed_scratch(scratch: Path, caches: tuple[tuple[str, Path], ...]) -> dict[str, str]:
    """Copy each user cache into this phase's scratch; the variables that point there (set
    for every cache, copied or not: the command's writes always land in the scratch)."""
    env = {}
    for name, target in USER_CACHES:
        place = scratch / target
        source = dict(caches).get(name)
        if source is not None and not place.exists():
            copy_tree(source, place)
        place.mkdir(parents=True, exist_ok=True)
        env[name] = str(place)
    return env


def scratch_env(scratch: Path) -> dict[str, str]:
    """The variables `seed_scratch` set, for a command's environment."""
    return {name: str(scratch / target) for name, target in USER_CACHES}


def is_checkout_cache(folder: Path) -> bool:
    """A cache folder in a checkout: `.mypy_cache`, `.ruff_cache`, or a runner's (a `target/`
    beside a `Cargo.toml`; elsewhere `target` may be anything)."""
    return folder.name in TOOL_CACHES or runners.is_checkout_cache(folder)


def copy_tree(source: Path, target: Path) -> bool:
    """`cp -a --reflink=auto` of `source` to `target` when it is under `MAX_SEED_BYTES`."""
    if tree_size(source, MAX_SEED_BYTES) > MAX_SEED_BYTES:
        print(
            f"codegen-ci: {source} is larger than {MAX_SEED_BYTES >> 30} GiB: "
            "not copied, commands start with an empty cache",
            file=sys.stderr,
        )
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            ["cp", "-a", "--reflink=auto", "--", str(source), str(target)],
            capture_output=True,
            check=False,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def tree_size(root: Path, stop: int) -> int:
    """Bytes of regular files under `root` (links not followed), counting stops past `stop`."""
    total = 0
    stack = [root]
    while stack and total <= stop:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def keep_tmp_caches(scratch: Path, kept: Path) -> list[str]:
    """Copy the caches the pre-flight's commands wrote in the scratch's TMPDIR (`tmp/`) into
    `kept` (the tool's, outside the scratch), regular files only, through the guarded reader
    (confined code may write the scratch); the names of those kept. A cache kept already (a
    second pre-flight) stays as it was."""
    try:
        root = guarded_read.open_root(scratch)
        try:
            tmp = guarded_read.open_beneath(root, "tmp", directory=True)
        finally:
            os.close(root)
    except guarded_read.Refused:
        return []
    try:
        names = sorted(os.listdir(tmp))  # noqa: PTH208 - a descriptor
    finally:
        os.close(tmp)
    done = []
    for name in names:
        wanted = any(fnmatch.fnmatchcase(name, glob) for glob in TMPDIR_CACHES)
        if not wanted or (kept / name).exists() or not guarded_read.is_dir(scratch, f"tmp/{name}"):
            continue
        kept.mkdir(mode=0o700, parents=True, exist_ok=True)
        copied = guarded_read.copy_tree(
            scratch,
            f"tmp/{name}",
            kept / name,
            max_files=MAX_KEPT_FILES,
            max_bytes=MAX_SEED_BYTES,
            max_file_bytes=MAX_KEPT_FILE_BYTES,
        )
        if copied.files:
            done.append(name)
    return done


def seed_tmp_caches(kept: Path | None, scratch: Path) -> None:
    """Copy each kept cache into this phase's fresh TMPDIR (`tmp/` of the scratch), in place
    of the copy of what `setup` left there (no command has run in this phase yet)."""
    for entry in sorted(kept.iterdir()) if kept is not None and kept.is_dir() else ():
        target = scratch / "tmp" / entry.name
        if target.is_symlink() or not target.is_dir():
            target.unlink(missing_ok=True)
        else:
            shutil.rmtree(target)
        copy_tree(entry, target)


def drop_tmp_caches(scratch: Path) -> None:
    """Remove the TMPDIR caches from a copy of the scratch (the tool's own `seed`): every phase
    gets them from the kept ones (`seed_tmp_caches`), so they are not copied twice."""
    tmp = scratch / "tmp"
    for entry in sorted(tmp.iterdir()) if tmp.is_dir() and not tmp.is_symlink() else ():
        if any(fnmatch.fnmatchcase(entry.name, glob) for glob in TMPDIR_CACHES):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def save_caches(kept: Path, target: Path) -> bool:
    """Make `target` (the caches kept for the repository, workspace/slots.py) a copy of `kept`
    (the run's, which `keep_tmp_caches` read through the guarded reader): copied beside it,
    then swapped in, so a run reading it meanwhile sees the old one or the new one."""
    token = secrets.token_hex(4)
    new = target.with_name(f".{target.name}-new-{token}")
    old = target.with_name(f".{target.name}-old-{token}")
    if not copy_tree(kept, new):
        shutil.rmtree(new, ignore_errors=True)
        return False
    with contextlib.suppress(FileNotFoundError):
        target.rename(old)
    try:
        new.rename(target)
    except OSError:  # a concurrent run's went in first: it is as good
        shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    return True
