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
  they are never part of the change."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from codegen_ci import runners

MAX_SEED_BYTES = 1 << 30
# (variable, where the copy goes in the scratch): the user's caches, each runner's
# (runners/: `USER_CACHES`, found by its `user_caches`).
USER_CACHES = runners.user_cache_places()
# Cache folders in a checkout (untracked) copied into a new worktree that has none: mypy's,
# ruff's and the runners' (runners/: `CHECKOUT_CACHES`).
TOOL_CACHES = frozenset({".mypy_cache", ".ruff_cache"})
CHECKOUT_CACHES = TOOL_CACHES | runners.checkout_caches()


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
