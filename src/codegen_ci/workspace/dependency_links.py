"""Dependencies installed in the checkout, made usable in the run's worktrees.

A new `git worktree` holds only tracked files: `node_modules`, an in-repo `.venv` or an
untracked `vendor/` that the workflow installed before the run are missing there, and
`npm test` or `.venv/bin/python -m pytest` would fail. Each such directory (found among the
checkout's untracked and ignored entries, at any depth, so monorepo packages count too) is
linked into the worktree as a symlink to the checkout's copy: nothing is copied or
reinstalled. The links are ours, not the change: `Worktree` leaves them out of every list
of changed paths, and they are removed before the worktree is.

The model's file tools cannot write through them (a path that resolves outside the worktree
is refused); a shell command can, and then changes the checkout's copy, unless the commands
run confined (the checkout read-only). See docs/ecosystems.md.
"""

from __future__ import annotations

from pathlib import Path

from codegen_ci.workspace import git

DEPENDENCY_DIRS = frozenset(
    {"node_modules", "bower_components", ".venv", "venv", ".yarn", "vendor", ".bundle"}
)
DEPENDENCY_FILES = frozenset({".pnp.cjs", ".pnp.loader.mjs"})  # yarn plug'n'play


def installed_dependencies(checkout: Path) -> list[str]:
    """Untracked dependency directories (and yarn PnP files) in `checkout`, relative paths."""
    out = git.git(["ls-files", "-z", "--others", "--directory", "--no-empty-directory"],
                  checkout, check=False)  # fmt: skip
    found = []
    for entry in out.split("\0"):
        rel = entry.rstrip("/")
        name = rel.rsplit("/", 1)[-1]
        is_dir = entry.endswith("/")
        if (is_dir and name in DEPENDENCY_DIRS) or (not is_dir and name in DEPENDENCY_FILES):
            found.append(rel)
    return sorted(found)


def link_dependencies(checkout: Path, tree: Path) -> tuple[str, ...]:
    """Symlink the checkout's installed dependencies into `tree`; returns the links (relative
    paths). An existing link to the same place counts (a resumed run); anything else already
    at that path (a tracked `vendor/`) is left alone."""
    links = []
    for rel in installed_dependencies(checkout):
        source, target = checkout / rel, tree / rel
        if target.is_symlink() and target.readlink() == source:
            links.append(rel)
            continue
        if target.exists() or target.is_symlink() or not target.parent.is_dir():
            continue
        target.symlink_to(source, target_is_directory=source.is_dir())
        links.append(rel)
    return tuple(links)


def unlink_dependencies(tree: Path, links: tuple[str, ...]) -> None:
    """Remove our links (never what they point to) before the worktree goes."""
    for rel in links:
        path = tree / rel
        if path.is_symlink():
            path.unlink()


def is_linked(rel: str, links: tuple[str, ...]) -> bool:
    """`rel` is one of the links or a path through one."""
    return any(rel == link or rel.startswith(link + "/") for link in links)
