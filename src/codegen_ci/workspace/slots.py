"""A stable, private place per repository for a run's worktree, so what tools key by the
project's absolute path (jest's haste map and transform cache) is warm from one run to the
next, and the caches codegen-ci keeps per repository (docs/sandbox.md, "Warm caches").

    $CODEGEN_CACHE_DIR, else $XDG_CACHE_HOME/codegen-ci, else ~/.cache/codegen-ci
      <repo name>-<hash of its path>/     0700, ours, no symlink (private_dir.py's checks)
        caches/                           the kept caches (security/warm_caches.py)
        repository                        the checkout's path, to tell when it is gone
        slot-<n>.lock                     flock'ed for the life of the run that has slot n
        slot-<n>/<repo name>              the run's worktree (and its -base, -proof trees)

Each run (each spec of a batch) takes the first slot whose lock it gets, so concurrent runs
never share one; the lock is held until the run ends (`Slot.release`, or the process's exit).
A slot is made by us (0700) and checked, as every folder above it, to be ours, a real
directory and written by no one else: another user cannot make it first or plant a link. What
is refused, or cannot be made (a cache folder that is not writable), falls back to a fresh
temporary folder per run (`worktrees_root`), as before: cold, never shared.

What a slot may hold when a run takes it: an interrupted (or killed) run's worktree
(`<repo name>`, whose repository is still there: the user's, or a candidate's own) stays,
`resume` goes on in it, and the slot is skipped until then (or until the worktree is removed:
`git worktree remove PATH`); anything else (a base or proof tree a killed run left, a worktree
whose repository is gone, a stale registration) is removed first. A finished run (passed,
failed, an error) has removed its worktree already (workspace/finalize.py): only `resume`
of an interrupted run needs one.

By the same rule a repository's whole folder goes once its checkout is gone (a temporary
clone deleted): a run taking a slot removes the folders whose `repository` names a path that
holds no repository any more, with their kept caches (jest's, up to 1 GiB each) and slots,
unless a run holds one of their slots. A folder made before the path was noted stays.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.security import guarded_read
from codegen_ci.workspace import git
from codegen_ci.workspace.private_dir import check_private, refusal
from codegen_ci.workspace.worktree import worktree_git

CACHE_ENV = "CODEGEN_CACHE_DIR"  # the folder itself; `off`: a fresh temporary folder per run
OFF = frozenset({"off", "none", "0", "false", "no"})
MAX_SLOTS = 16
SLOT = re.compile(r"slot-(\d+)")
REPOSITORY = "repository"  # in a repository's folder: its checkout's path


@dataclass
class Slot:
    """Slot `index` of a repository's folder, locked by this process while `lock` is open."""

    folder: Path  # the repository's folder (`<repo name>-<hash>`)
    index: int
    name: str  # the worktree's name: the repository's folder name
    lock: int | None = field(default=None, repr=False)

    @property
    def path(self) -> Path:
        """The slot's folder: the run's worktrees go in it."""
        return self.folder / f"slot-{self.index}"

    @property
    def tree(self) -> Path:
        """The run's worktree: the same path for every run that takes this slot."""
        return self.path / self.name

    @property
    def caches(self) -> Path:
        """The caches codegen-ci keeps for the repository (security/warm_caches.py)."""
        return self.folder / "caches"

    def release(self) -> None:
        """Let another run take the slot (idempotent)."""
        fd, self.lock = self.lock, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock


def hidden(slot: Slot | None) -> tuple[Path, ...]:
    """What the run's commands must not see of the repository's folder: all of it (the
    other slots, the kept caches) but for their own worktrees, which the sandbox shows."""
    return (slot.folder,) if slot is not None else ()


def cache_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where codegen-ci keeps its per-repository folders; None: switched off."""
    env = os.environ if environ is None else environ
    chosen = env.get(CACHE_ENV, "").strip()
    if chosen.lower() in OFF:
        return None
    if chosen:
        return Path(chosen).absolute()
    xdg = env.get("XDG_CACHE_HOME", "")
    home = env.get("HOME") or str(Path.home())
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path(home) / ".cache"
    return base / "codegen-ci"


def repo_key(repo: Path) -> str:
    """`<name>-<12 hex of the path's hash>`: one folder per checkout."""
    real = repo.resolve()
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in real.name)[:40]
    return f"{name}-{digest}"


def take(repo: Path, environ: Mapping[str, str] | None = None) -> Slot | None:
    """The first free slot of `repo`'s folder, locked and emptied for a new worktree; None
    (with a notice) where no stable place can be had: the caller uses a fresh temporary one."""
    try:
        folder = repo_folder(repo, environ)
        if folder is None:
            return None
        _remove_gone(folder)
        for index in range(MAX_SLOTS):
            slot = _locked(folder, index, repo)
            if slot is None:
                continue
            try:
                if _clear(slot, repo, keep=False):
                    return slot
            except BaseException:
                slot.release()
                raise
            slot.release()
        _notice(f"all {MAX_SLOTS} slots of {folder} are in use")
    except (InputError, OSError) as exc:
        _notice(str(exc) if isinstance(exc, InputError) else f"{exc.filename}: {exc.strerror}")
    return None


def hold(repo: Path, tree: Path, environ: Mapping[str, str] | None = None) -> Slot | None:
    """The slot a stopped run's worktree `tree` is in, locked for its `resume`, emptied of all
    but the worktree; None when `tree` is in no slot (a temporary folder). Raises `InputError`
    when another process holds the slot (the run is still going) or a folder is not ours."""
    base = cache_folder(environ)
    match = SLOT.fullmatch(tree.parent.name)
    if base is None or match is None or tree.parent.parent.parent != base:
        return None
    folder = tree.parent.parent
    check_private(folder)
    slot = _locked(folder, int(match.group(1)), repo, name=tree.name)
    if slot is None:
        raise InputError(f"{tree}: another codegen-ci process is working in it")
    try:
        _clear(slot, repo, keep=True)
    except BaseException:
        slot.release()
        raise
    return slot


def repo_folder(repo: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """`repo`'s folder in the cache folder, made (0700) and checked; None: switched off."""
    base = cache_folder(environ)
    if base is None:
        return None
    parent = base.parent
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's cache home
    why = refusal(parent.resolve().stat())  # the user may link it elsewhere: where it leads
    if why:
        raise InputError(f"{parent} {why}")
    _private(base)
    folder = base / repo_key(repo)
    _private(folder)
    _note_repository(folder, repo)
    return folder


def _note_repository(folder: Path, repo: Path) -> None:
    """Write the checkout's path in its folder (once), so a later run can tell it is gone."""
    note, real = folder / REPOSITORY, str(repo.resolve())
    if _noted(folder) == real:
        return
    new = folder / f".{REPOSITORY}-{os.getpid()}"
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(real)
    new.replace(note)


def _noted(folder: Path) -> str:
    """The checkout's path a repository's folder names; "" when it names none."""
    try:
        fd = os.open(folder / REPOSITORY, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
        return f.read(4096)


def _remove_gone(keep: Path) -> None:
    """Remove the folders beside `keep` whose checkout is gone (`_noted` names a path that
    holds no repository), as a slot's worktree whose repository is gone is (`_clear`): with
    their kept caches, never while a run holds one of their slots."""
    try:
        folders = sorted(keep.parent.iterdir())
    except OSError:
        return
    for folder in folders:
        noted = _noted(folder) if folder != keep and not folder.is_symlink() else ""
        if not noted or not _gone(Path(noted)):
            continue
        locks: list[Slot | None] = []
        try:
            check_private(folder)
            for match in _slots(folder):
                locks.append(_locked(folder, int(match[1]), Path(noted)))
            if all(locks):  # no run holds a slot: moved aside, then removed
                gone = folder.with_name(f".gone-{folder.name}-{os.getpid()}")
                folder.rename(gone)
                shutil.rmtree(gone, ignore_errors=True)
        except (InputError, OSError):
            continue
        finally:
            for slot in locks:
                if slot is not None:
                    slot.release()


def _gone(checkout: Path) -> bool:
    """No repository at `checkout` any more (a path that cannot be checked is not gone)."""
    for name in (".git", "HEAD"):  # a checkout, or a bare repository
        try:
            os.lstat(checkout / name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return False
        return False
    return True


def _slots(folder: Path) -> list[re.Match[str]]:
    names = (p.name.removesuffix(".lock") for p in folder.glob("slot-*.lock"))
    return [m for name in names if (m := SLOT.fullmatch(name))]


def _private(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    check_private(path)


def _locked(folder: Path, index: int, repo: Path, name: str | None = None) -> Slot | None:
    """Slot `index`, its lock taken; None when another run holds it."""
    lock = folder / f"slot-{index}.lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(lock, flags, 0o600)
    except OSError as exc:
        raise InputError(f"{lock} cannot be opened: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise InputError(f"{lock} is not a file of this user's")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    slot = Slot(folder, index, name or repo.resolve().name, fd)
    try:
        _private(slot.path)
    except BaseException:
        slot.release()
        raise
    return slot


def _clear(slot: Slot, repo: Path, *, keep: bool) -> bool:
    """Empty the slot for a run; False (nothing removed) when it holds an interrupted run's
    worktree, which `resume` needs. `keep`: that worktree is the one being resumed."""
    entries = sorted(p.name for p in slot.path.iterdir())
    if not entries:
        return True
    tree = slot.tree
    if not keep and tree.name in entries and _has_repository(tree):
        return False
    registered = _registered(repo)
    for entry in entries:
        place = slot.path / entry
        if keep and entry == tree.name:
            continue
        if os.path.realpath(place) in registered:
            worktree_git(repo, ["remove", "--force", str(place)], check=False)
        if place.is_dir() and not place.is_symlink():
            shutil.rmtree(place, ignore_errors=True)
        else:
            place.unlink(missing_ok=True)
    worktree_git(repo, ["prune"], check=False)
    return True


def _has_repository(tree: Path) -> bool:
    """Whether the worktree's repository is still there (its `.git` file's `gitdir:`, which
    may be a candidate's repository, not the user's): else it is debris no `resume` can use.
    Read through the guarded reader: commands wrote in the worktree."""
    try:
        text = guarded_read.read_text(tree, ".git", max_bytes=4096)
    except (guarded_read.Refused, OSError):
        return tree.is_dir() and not tree.is_symlink()  # unreadable: leave it be
    gitdir = text.removeprefix("gitdir:").strip()
    return text.startswith("gitdir:") and Path(gitdir).is_absolute() and Path(gitdir).is_dir()


def _registered(repo: Path) -> set[str]:
    listing = git.git(["worktree", "list", "--porcelain"], repo, check=False)
    return {
        os.path.realpath(line.removeprefix("worktree "))
        for line in listing.splitlines()
        if line.startswith("worktree ")
    }


def _notice(why: str) -> None:
    print(
        f"codegen-ci: no stable worktree place ({why}); this run works in a fresh temporary "
        "folder, its caches start cold",
        file=sys.stderr,
    )
