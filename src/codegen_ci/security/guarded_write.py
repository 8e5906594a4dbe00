"""The one way the tool writes into a folder someone else may have shaped: a repository
`init` writes into (a clone whose `.github` may be a symlink to anywhere), an output
directory, a JUnit or artifact copy. The writer beside the guarded reader
(security/guarded_read.py), with the same rules:

- every path is relative to a directory the tool chose (`root`: its own path is trusted, what
  lies below it is not), and no symlink is followed on the way: each folder is opened with
  `openat2` RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (or one O_NOFOLLOW `openat` per component),
  a missing folder is made with `mkdirat` relative to its parent's descriptor;
- a file is written to a new temporary name in its folder (O_CREAT | O_EXCL | O_NOFOLLOW) and
  renamed over the final name within that folder's descriptor: whatever sits at the name
  (a symlink to a file outside, a FIFO) is never opened, never written through;
- a symlink at the final name is refused outright (it was planted: the tool never makes one),
  and so is any existing entry when the caller does not mean to replace it.

What is refused raises `guarded_read.Refused`, whose message names the path and the reason."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from codegen_ci.security.guarded_read import Refused, open_beneath, open_root

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
LINK_REFUSED = "is a symlink (codegen-ci never writes through a link)"


def _split(rel: str | PurePosixPath) -> tuple[list[str], str]:
    text = str(rel)
    if text.startswith("/"):
        raise Refused(text, "an absolute path where a relative one was expected")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Refused(text, "not a name inside its folder")
    return parts[:-1], parts[-1]


def open_folder(root: Path | int, rel: str | PurePosixPath, *, create: bool = True) -> int:
    """A descriptor for the folder `rel` under `root`, each missing component made (`create`)
    with `mkdirat`, none followed through a symlink."""
    current = open_root(root) if isinstance(root, Path) else os.dup(root)
    done: list[str] = []
    try:
        for part in [p for p in str(rel).split("/") if p not in ("", ".")]:
            if part == "..":
                raise Refused(str(rel), "leaves its folder (`..`)")
            done.append(part)
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=current)
            st = _existing(current, part)
            if st is not None and stat.S_ISLNK(st.st_mode):  # refused below too; said plainly
                raise Refused("/".join(done), LINK_REFUSED)
            try:
                fd = open_beneath(current, part, directory=True)
            except Refused as exc:
                raise Refused("/".join(done), exc.reason) from None
            os.close(current)
            current = fd
        return current
    except BaseException:
        os.close(current)
        raise


def _existing(dirfd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextmanager
def _staged(dirfd: int, name: str, shown: str, *, replace: bool, mode: int) -> Iterator[int]:
    """A new temporary file beside `name` in the open folder `dirfd`, renamed to `name` when
    the block ends without an error (removed otherwise)."""
    st = _existing(dirfd, name)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise Refused(shown, LINK_REFUSED)
        if not replace:
            raise Refused(shown, "already exists")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(shown, "is there and is not a regular file")
    tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, _CREATE, mode, dir_fd=dirfd)
    try:
        try:
            yield fd
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dirfd)
        raise


def write_bytes(
    root: Path | int,
    rel: str | PurePosixPath,
    data: bytes,
    *,
    replace: bool = True,
    mode: int = 0o644,
) -> None:
    """Write `data` as the file `rel` under `root` (see the module docstring); `replace`: an
    existing regular file there is replaced (never a symlink, never written through)."""
    folders, name = _split(rel)
    dirfd = open_folder(root, "/".join(folders))
    try:
        with _staged(dirfd, name, str(rel), replace=replace, mode=mode) as fd:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(dirfd)


def write_text(
    root: Path | int, rel: str | PurePosixPath, text: str, *, replace: bool = True
) -> None:
    write_bytes(root, rel, text.encode("utf-8"), replace=replace)


def write_into(path: Path, data: bytes | str) -> None:
    """Write the file `path` in a folder the tool made itself (its output directory, a copy's
    destination): the folder is trusted, the name is not (a link there is refused)."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    write_bytes(path.parent, path.name, blob)


@contextmanager
def create(path: Path, *, mode: int = 0o644) -> Iterator[int]:
    """A descriptor to stream the new file `path` into (folder trusted, name not: a link or a
    special file there is refused, a regular one replaced when the block ends)."""
    dirfd = open_root(path.parent)
    try:
        with _staged(dirfd, path.name, str(path), replace=True, mode=mode) as fd:
            yield fd
    finally:
        os.close(dirfd)


def copy_into(source: Path, dest: Path) -> None:
    """Copy the tool's own file `source` to `dest` (see `create`)."""
    with source.open("rb") as src, create(dest) as fd:
        for chunk in iter(lambda: src.read(1 << 16), b""):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]


def links_in(root: Path, *, max_entries: int = 100_000) -> list[str]:
    """Symlinks beneath `root` (never followed), relative paths; an empty list for a folder
    the tool may write into without a second thought."""
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            seen += 1
            if seen > max_entries:
                return found
            path = Path(folder, name)
            if path.is_symlink():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)
