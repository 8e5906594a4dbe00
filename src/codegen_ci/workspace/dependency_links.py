"""Dependencies installed in the checkout, made usable, and writable, in the run's worktrees.

A new `git worktree` holds only tracked files: `node_modules`, an in-repo `.venv` or an
untracked `vendor/` that the workflow installed before the run are missing there, and
`npm test` or `.venv/bin/python -m pytest` would fail. Each such directory (found among the
checkout's untracked and ignored entries, at any depth, so monorepo packages count too) is
given to the worktree as its own **copy** of the checkout's, made copy-on-write where the
file system can (`cp --reflink=auto`: btrfs, XFS, bcachefs, APFS share the blocks until a
file is written), a plain copy elsewhere. Nothing is reinstalled.

Why a copy and not a link: the repository's tools write inside their dependency folders
while they run (vitest's `--typecheck` writes `tsconfig.tmp.tsbuildinfo` into
`node_modules/vitest/dist`, bundlers keep `node_modules/.cache` and `.vite`, Python writes
`__pycache__` into a venv). Under confinement the checkout is read-only, so a link made such
a command fail (EROFS) for a reason the model cannot fix; unconfined, it changed the user's
copy. The copy is per worktree, so every backend (bwrap, landlock, off) gets the same
answer: the tools write where they need to, the checkout stays exactly as it was, and the
copy goes with the worktree. The checkout's caches (cargo's `target/`, `.mypy_cache`,
`.ruff_cache`: security/warm_caches.py) are copied the same way, so a warm cache outside is
warm inside; one too large to copy is left out, never linked. A Python venv is made to work
from its new place: scripts whose shebang names the checkout's venv, and
`.pth`/editable-install files that point into the checkout, are rewritten to the worktree's
paths. Cost: docs/ecosystems.md.

The proof's tree on the base commit (gate/proof.py) borrows the run's copies of `node_modules`
instead of making its own (`lender`): each is moved there (a rename, in the same folder of the
run's worktrees) when it still holds exactly what the checkout's holds, so the base run sees
the user's install, as a fresh copy would show it, and none of the change's commands' writes;
the caches tools keep at its top (`.vite`, `.vite-temp`, `.cache`) go along. A copy that was
written elsewhere (a `tsbuildinfo` in a package, a package added) is not lent: the proof tree
gets a copy of its own, as before. `give_back` moves it back before the coverage run. One
copy and one removal per run instead of two (docs/benchmarks.md, benchmark 16).

The copies are ours, not the change: `Worktree` leaves them out of every list of changed
paths, and they are removed before the worktree is. When a copy cannot be made (a full disk),
the directory is linked instead, as before, and the run says so on stderr.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from codegen_ci.security.warm_caches import CHECKOUT_CACHES, copy_tree, is_checkout_cache
from codegen_ci.workspace import git, isolated_repo
from codegen_ci.workspace.generated_files import copy_generated

DEPENDENCY_DIRS = frozenset(
    {"node_modules", "bower_components", ".venv", "venv", ".yarn", "vendor", ".bundle"}
)
DEPENDENCY_FILES = frozenset({".pnp.cjs", ".pnp.loader.mjs"})  # yarn plug'n'play
VENV_MARK = "pyvenv.cfg"
_SHEBANG_MAX = 4096  # only the first line of a script is read for its shebang


def installed_dependencies(checkout: Path) -> list[str]:
    """Untracked dependency directories (and yarn PnP files) in `checkout`, relative paths."""
    out = git.git(
        ["ls-files", "-z", "--others", "--directory", "--no-empty-directory"], checkout, check=False
    )
    found = []
    for entry in out.split("\0"):
        rel = entry.rstrip("/")
        name = rel.rsplit("/", 1)[-1]
        is_dir = entry.endswith("/")
        wanted = DEPENDENCY_DIRS | CHECKOUT_CACHES if is_dir else DEPENDENCY_FILES
        if name in wanted:
            found.append(rel)
    return sorted(found)


LENT_ALONG = frozenset({".vite", ".vite-temp", ".cache"})  # at its top: lent, never compared


def link_dependencies(checkout: Path, tree: Path, *, lender: Path | None = None) -> tuple[str, ...]:
    """Give `tree` its own copy of each of the checkout's installed dependencies; returns
    their relative paths. A copy (or link) already there from an earlier run of the same
    worktree counts (a resumed run); anything else at that path (a tracked `vendor/`) is
    left alone. `lender`: a worktree of the same run whose unwritten `node_modules` copies
    are moved here instead of copied (`give_back` returns them)."""
    placed = []
    checkout = isolated_repo.dependencies_of(checkout)  # a repository of ours: the user's
    for rel in installed_dependencies(checkout):
        source, target = checkout / rel, tree / rel
        if target.is_symlink() and target.readlink() == source:
            placed.append(rel)
            continue
        if target.exists() or target.is_symlink() or not target.parent.is_dir():
            if target.is_dir() and not target.is_symlink() and not _holds_tracked(tree, rel):
                placed.append(rel)  # our copy, from before an interruption
            continue
        if target.name in CHECKOUT_CACHES:  # a copy or nothing: never the user's, linked
            if is_checkout_cache(source) and copy_tree(source, target):
                placed.append(rel)
            continue
        if lender is not None and borrow(lender, rel, target, checkout):
            relocate_links(target, old=lender, new=tree)
        elif copy_dependency(source, target):
            if (target / VENV_MARK).is_file():
                relocate_venv(target, old=source, new=target)
            elif target.name == "node_modules":
                relocate_links(target, old=checkout, new=tree)
        elif target.name == "node_modules" and source.is_dir():
            link_entries(source, target, old=checkout, new=tree)
        else:
            target.symlink_to(source, target_is_directory=source.is_dir())
        placed.append(rel)
    placed += copy_generated(checkout, tree)  # a build's version file (generated_files.py)
    return tuple(placed)


def borrow(lender: Path, rel: str, target: Path, checkout: Path) -> bool:
    """Move the copy at `rel` in `lender` (another worktree of the run) to `target` when it
    is a `node_modules` that still holds what the checkout's holds; False, and nothing
    moved, otherwise."""
    lent = lender / rel
    if lent.name != "node_modules" or lent.is_symlink() or not lent.is_dir():
        return False
    if inventory(lent, lender) != inventory(checkout / rel, checkout):
        return False
    try:
        lent.rename(target)
    except OSError:  # another file system: a copy of its own
        return False
    return True


def give_back(tree: Path, lender: Path, links: tuple[str, ...], checkout: Path) -> None:
    """Return the copies `tree` borrowed from `lender` (each missing there now) before `tree`
    goes; one the borrower's commands removed is copied afresh from the checkout."""
    checkout = isolated_repo.dependencies_of(checkout)
    for rel in links:
        home, held = lender / rel, tree / rel
        if Path(rel).name != "node_modules" or home.exists() or home.is_symlink():
            continue
        if not home.parent.is_dir():
            continue
        if held.is_dir() and not held.is_symlink():
            try:
                held.rename(home)
            except OSError:
                pass
            else:
                relocate_links(home, old=tree, new=lender)
                continue
        if copy_dependency(checkout / rel, home):
            relocate_links(home, old=checkout, new=lender)


Entry = tuple[str, str, str, str, str]  # path, type and mode, size, modification time, target


def inventory(folder: Path, root: Path) -> frozenset[Entry]:
    """What a dependency folder holds, as a comparable set: each entry's path, type and mode,
    and a file's size and modification time (`cp -a` keeps both) or a link's target (one
    naming `root`, the tree it is in, by its absolute path counts relative to it); the
    caches at its top (LENT_ALONG) left out. GNU find lists it (26.6k files: 0.3 s against
    1.2 s for the same walk in Python); without find, Python walks it."""
    prefix = str(root) + os.sep
    listed = _listed(folder)
    found: set[Entry] = set()
    for rel, kind, size, mtime, target in listed:
        if not rel or rel.split("/", 1)[0] in LENT_ALONG:
            continue
        if kind[:1] in ("d", "l"):  # a folder: the set of paths says it; a link: its target
            size = mtime = ""
        if target.startswith(prefix):
            target = target.removeprefix(prefix)
        found.add((rel, kind, size, mtime, target))
    return frozenset(found)


def _listed(folder: Path) -> list[Entry]:
    if shutil.which("find"):
        argv = ["find", str(folder), "-printf", "%P\\0%y%m\\0%s\\0%T@\\0%l\\0"]
        done = subprocess.run(argv, capture_output=True, check=False)
        if done.returncode == 0:
            fields = done.stdout.decode(errors="surrogateescape").split("\0")[:-1]
            it = iter(fields)
            return list(zip(it, it, it, it, it, strict=True))
    found: list[Entry] = []
    todo = [folder]
    while todo:
        here = todo.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            rel = os.path.relpath(entry.path, folder)
            mode = f"{stat.S_IMODE(st.st_mode):o}"
            if stat.S_ISLNK(st.st_mode):
                found.append((rel, "l" + mode, "", "", str(Path(entry.path).readlink())))
            elif stat.S_ISDIR(st.st_mode):
                found.append((rel, "d" + mode, "", "", ""))
                todo.append(Path(entry.path))
            else:
                found.append((rel, "f" + mode, str(st.st_size), str(st.st_mtime_ns), ""))
    return found


def package_entries(modules: Path) -> list[Path]:
    """The packages of a `node_modules` folder: its entries, and those of its `@scope`s."""
    found: list[Path] = []
    for entry in sorted(modules.iterdir()) if modules.is_dir() else ():
        if entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink():
            found += sorted(entry.iterdir())
        else:
            found.append(entry)
    return found


def workspace_target(link: Path, checkout: Path) -> Path | None:
    """Where a package link of the checkout's `node_modules` leads inside the checkout's own
    code (a workspace package: `node_modules/lib -> ../packages/lib`), relative to the
    checkout; None when it leads elsewhere (a dependency folder, outside the checkout)."""
    if not link.is_symlink():
        return None
    real, top = link.resolve(), checkout.resolve()
    if top not in real.parents:
        return None
    rel = real.relative_to(top)
    if any(part in DEPENDENCY_DIRS for part in rel.parts):
        return None
    return rel


def relocate_links(modules: Path, *, old: Path, new: Path) -> None:
    """In a copied `node_modules`, package links that name the checkout's own code by its
    absolute path name the worktree's instead (relative links already do)."""
    for entry in package_entries(modules):
        if entry.is_symlink() and entry.readlink().is_absolute():
            rel = workspace_target(entry, old)
            if rel is not None:
                entry.unlink()
                entry.symlink_to(new / rel, target_is_directory=True)


def link_entries(source: Path, target: Path, *, old: Path, new: Path) -> None:
    """When `node_modules` cannot be copied: a folder of links instead of one link, so the
    workspace's own packages (links into the checkout's code) lead to the worktree's copy of
    that code, and every other package to the checkout's install."""
    target.mkdir()
    for entry in package_entries(source):
        place = target / entry.relative_to(source)
        place.parent.mkdir(exist_ok=True)
        rel = workspace_target(entry, old)
        place.symlink_to(new / rel if rel is not None else entry, target_is_directory=True)


def copy_dependency(source: Path, target: Path) -> bool:
    """Copy `source` to `target` (links stay links, modes and times kept), copy-on-write
    where the file system can; False (and nothing left behind) when it cannot be done."""
    if shutil.which("cp"):
        argv = ["cp", "-a", "--reflink=auto", str(source), str(target)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return True
        problem = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
    else:  # no GNU cp (never on the supported runners): the same copy, byte by byte
        try:
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
            return True
        except OSError as exc:
            problem = [str(exc)]
    remove_dependency(target)
    print(
        f"codegen-ci: warning: could not copy {source} into the worktree ({problem[0]}); "
        "linked it instead: tools cannot write inside it",
        file=sys.stderr,
    )
    return False


def relocate_venv(venv: Path, *, old: Path, new: Path) -> None:
    """Make a copied virtualenv use itself: script shebangs and `.pth`/editable-install files
    that name the checkout (`old` venv, or the checkout's tree above it) name `new` instead."""
    old_root, new_root = str(old.parent), str(new.parent)
    old_bin = (str(old / "bin") + "/").encode()
    for script in (venv / "bin").iterdir() if (venv / "bin").is_dir() else ():
        if script.is_symlink() or not script.is_file():
            continue
        with script.open("rb") as handle:
            head = handle.read(_SHEBANG_MAX)
        if head.startswith(b"#!") and old_bin in head.split(b"\n", 1)[0]:
            _replace_in(script, str(old), str(new))
    for site in venv.glob("lib*/python*/site-packages"):
        for entry in site.iterdir():
            if (
                entry.is_file()
                and not entry.is_symlink()
                and (entry.suffix == ".pth" or entry.name.startswith("__editable__"))
            ):
                _replace_in(entry, old_root, new_root)


def _replace_in(path: Path, old: str, new: str) -> None:
    try:
        data = path.read_bytes()
    except OSError:
        return
    changed = data.replace(old.encode(), new.encode())
    if changed != data:
        mode = path.stat().st_mode
        path.write_bytes(changed)
        path.chmod(mode)


def _holds_tracked(tree: Path, rel: str) -> bool:
    return bool(git.git(["ls-files", "-z", "--", rel], tree, check=False).strip("\0"))


def remove_dependency(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def unlink_dependencies(tree: Path, links: tuple[str, ...]) -> None:
    """Remove our copies and links (never what a link points to) before the worktree goes."""
    for rel in links:
        remove_dependency(tree / rel)


def is_linked(rel: str, links: tuple[str, ...]) -> bool:
    """`rel` is one of the copies/links or a path through one."""
    return any(rel == link or rel.startswith(link + "/") for link in links)
