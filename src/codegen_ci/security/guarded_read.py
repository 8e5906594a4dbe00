"""The one way the tool's own (unconfined) process reads what confined code could have shaped:
the worktree, the sandbox's scratch, a command's JUnit folder, dependency folders, the files
of a CI artifact (SECURITY.md, "One trust boundary"; docs/architecture.md).

Every path is opened relative to a directory the tool itself made or chose (`root`), and:
- no symlink is followed at any level below `root`: `openat2` with RESOLVE_BENEATH |
  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it (Linux 5.6+), else one
  `openat` per component with O_NOFOLLOW, each relative to the directory opened before;
  `..` and absolute names are refused either way;
- only regular files are read (a FIFO, a device, a socket or a directory where a file should
  be is refused, without blocking: O_NONBLOCK);
- the size is checked on the open descriptor before a byte is read, both the apparent size
  (`st_size`: a 4 GiB sparse file is refused) and the allocated one (`st_blocks * 512`), and
  reading stops at the cap whatever the file does meanwhile.

What is refused raises `Refused`, whose message names the path and the reason; callers turn it
into a note for the user, never a traceback. Copies go to files the tool creates itself
(O_EXCL | O_NOFOLLOW) in places only it can write.
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

# openat2(2): struct open_how and its RESOLVE_* flags (linux/openat2.h).
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (a "common" syscall)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
CHUNK = 1 << 16
MAX_WALK_ENTRIES = 100_000  # a directory tree a command made may be arbitrarily large
MAX_WALK_DEPTH = 64


class Refused(Exception):
    """A path the guarded reader will not read; `message` says which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.message = path, reason, f"{path}: {reason}"


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - no libc to call through: component walk only
    _libc = None
_openat2_works: bool | None = None if _libc is not None else False


def openat2_available() -> bool:
    """Whether this kernel (and any seccomp filter around us) lets openat2 through."""
    global _openat2_works
    if _openat2_works is None:
        fd = os.open("/", _DIR_FLAGS)
        try:
            os.close(_openat2(fd, ".", _DIR_FLAGS))
            _openat2_works = True
        except OSError:
            _openat2_works = False
        finally:
            os.close(fd)
    return _openat2_works


def _openat2(dirfd: int, rel: str, flags: int) -> int:
    assert _libc is not None
    how = _OpenHow(flags=flags, mode=0, resolve=_RESOLVE)
    fd = int(
        _libc.syscall(_SYS_OPENAT2, dirfd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel)
    return fd


def _parts(rel: str | PurePosixPath) -> list[str]:
    text = str(rel)
    if text.startswith("/"):
        raise Refused(text, "an absolute path where a relative one was expected")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused(text, "leaves its folder (`..`)")
    return parts


def open_beneath(dirfd: int, rel: str | PurePosixPath, *, directory: bool = False) -> int:
    """A descriptor for `rel` under the open directory `dirfd`, no symlink followed on the way
    or at the end; `directory`: it must be a directory (else a file, not yet checked)."""
    parts = _parts(rel)
    flags = _DIR_FLAGS if directory else _FILE_FLAGS
    name = str(rel) or "."
    try:
        if not parts:
            return os.open(".", _DIR_FLAGS, dir_fd=dirfd)
        if openat2_available():
            return _openat2(dirfd, "/".join(parts), flags)
        current = dirfd
        try:
            for part in parts[:-1]:
                if Path(f"/proc/self/fd/{current}", part).is_symlink():  # for the message
                    raise OSError(errno.ELOOP, "a symlink", part)
                fd = os.open(part, _DIR_FLAGS, dir_fd=current)
                if current != dirfd:
                    os.close(current)
                current = fd
            return os.open(parts[-1], flags, dir_fd=current)
        finally:
            if current != dirfd:
                os.close(current)
    except OSError as exc:
        raise _refusal(name, exc, directory) from None


def _refusal(name: str, exc: OSError, directory: bool) -> Refused:
    if exc.errno in (errno.ELOOP, errno.EXDEV, errno.EMLINK):
        return Refused(name, "is or passes through a symlink (never followed)")
    if exc.errno == errno.ENOTDIR:
        return Refused(
            name,
            "a folder was expected and a file is there"
            if directory
            else "passes through a file where a folder was expected",
        )
    if exc.errno == errno.ENOENT:
        return Refused(name, "does not exist")
    return Refused(name, exc.strerror or str(exc))


def open_root(path: Path) -> int:
    """A descriptor for a directory the tool made or chose itself (the worktree, the scratch
    directory): its own path is trusted, what lies below it is not."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _refusal(str(path), exc, True) from None


@dataclass(frozen=True)
class FileInfo:
    rel: str
    size: int  # apparent
    allocated: int  # st_blocks * 512
    mtime_ns: int = 0


def _check(fd: int, name: str, max_bytes: int) -> os.stat_result:
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise Refused(name, "a file was expected and a folder is there")
    if not stat.S_ISREG(st.st_mode):
        raise Refused(name, "not a regular file")
    if st.st_size > max_bytes:
        raise Refused(name, f"too large ({st.st_size} bytes; at most {max_bytes} are read)")
    if st.st_blocks * 512 > max_bytes + CHUNK:  # a block's rounding is no reason to refuse
        raise Refused(
            name, f"takes {st.st_blocks * 512} bytes on disk (at most {max_bytes} are read)"
        )
    return st


def read_bytes(root: Path | int, rel: str | PurePosixPath, *, max_bytes: int) -> bytes:
    """The content of the regular file `rel` under `root` (a path or an open directory)."""
    dirfd = open_root(root) if isinstance(root, Path) else root
    try:
        fd = open_beneath(dirfd, rel)
        try:
            _check(fd, str(rel), max_bytes)
            chunks, left = [], max_bytes
            while left > 0:
                chunk = os.read(fd, min(CHUNK, left))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        if isinstance(root, Path):
            os.close(dirfd)


def read_text(root: Path | int, rel: str | PurePosixPath, *, max_bytes: int) -> str:
    return read_bytes(root, rel, max_bytes=max_bytes).decode("utf-8", errors="replace")


def copy_file(root: Path | int, rel: str | PurePosixPath, dest: Path, *, max_bytes: int) -> int:
    """Copy the regular file `rel` under `root` to `dest`, a new file in a directory only the
    tool writes (an existing `dest` is replaced, never written through). Returns the bytes."""
    dirfd = open_root(root) if isinstance(root, Path) else root
    try:
        fd = open_beneath(dirfd, rel)
        try:
            _check(fd, str(rel), max_bytes)
            dest.unlink(missing_ok=True)
            out = os.open(
                dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
            )
            copied = 0
            try:
                while copied < max_bytes:
                    chunk = os.read(fd, min(CHUNK, max_bytes - copied))
                    if not chunk:
                        break
                    os.write(out, chunk)
                    copied += len(chunk)
            finally:
                os.close(out)
            return copied
        finally:
            os.close(fd)
    finally:
        if isinstance(root, Path):
            os.close(dirfd)


def is_dir(root: Path, rel: str | PurePosixPath) -> bool:
    """Whether `rel` under `root` is a real directory reached without any symlink."""
    try:
        os.close(_open_dir(root, rel))
    except Refused:
        return False
    return True


def _open_dir(root: Path, rel: str | PurePosixPath) -> int:
    dirfd = open_root(root)
    try:
        return open_beneath(dirfd, rel, directory=True)
    finally:
        os.close(dirfd)


def walk(
    root: Path,
    rel: str | PurePosixPath = "",
    *,
    max_entries: int = MAX_WALK_ENTRIES,
    skip: frozenset[str] = frozenset(),
) -> Iterator[FileInfo]:
    """The regular files under `rel` (relative to `root`), never through a symlink; symlinks,
    FIFOs and the like are left out. `skip`: directory names not entered (".git"). An entry
    named `.git` is never listed, whatever its type: in a linked worktree it is a file naming
    the host's git directory (a path on the runner), not part of the repository."""
    start = PurePosixPath(*_parts(rel)) if _parts(rel) else PurePosixPath()
    top = _open_dir(root, rel)
    seen = 0
    stack: list[tuple[int, PurePosixPath, int]] = [(top, start, 0)]
    try:
        while stack:
            fd, where, depth = stack.pop()
            try:
                names = sorted(os.listdir(fd))  # noqa: PTH208 - a descriptor
                for name in names:
                    seen += 1
                    if seen > max_entries:
                        return
                    if name == ".git":
                        continue
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        yield FileInfo(
                            str(where / name), st.st_size, st.st_blocks * 512, st.st_mtime_ns
                        )
                    elif stat.S_ISDIR(st.st_mode) and name not in skip and depth < MAX_WALK_DEPTH:
                        try:
                            sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                        except OSError:
                            continue  # swapped for a symlink meanwhile: not followed
                        stack.append((sub, where / name, depth + 1))
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def glob(root: Path, pattern: str, *, skip: frozenset[str] = frozenset({".git"})) -> list[str]:
    """The regular files under `root` whose relative path matches the glob `pattern` (`*`,
    `?`, `[...]` within one name, `**` across folders), found without following a symlink."""
    return [info.rel for info in glob_files(root, pattern, skip=skip)]


def glob_files(
    root: Path, pattern: str, *, skip: frozenset[str] = frozenset({".git"})
) -> list[FileInfo]:
    """`glob`, with each file's sizes and modification time."""
    parts = _parts(pattern)
    fixed: list[str] = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    base = "/".join(fixed)
    if len(fixed) == len(parts):  # no wildcard: the one file, if it is one
        one = stat_file(root, base)
        return [one] if one is not None else []
    regex = re.compile(_glob_regex(parts[len(fixed) :]))
    try:
        found = list(walk(root, base, skip=skip))
    except Refused:
        return []
    prefix = len(base) + 1 if base else 0
    return sorted((i for i in found if regex.fullmatch(i.rel[prefix:])), key=lambda i: i.rel)


def stat_file(root: Path, rel: str) -> FileInfo | None:
    """`rel`'s sizes and time when it is a regular file reached without a symlink; else None."""
    try:
        dirfd = open_root(root)
    except Refused:
        return None
    try:
        fd = open_beneath(dirfd, rel)
    except Refused:
        return None
    finally:
        os.close(dirfd)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileInfo(rel, st.st_size, st.st_blocks * 512, st.st_mtime_ns)


def _glob_regex(parts: list[str]) -> str:
    pieces = []
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if part == "**":
            pieces.append("(?:.*/)?" if not last else ".*")
        else:
            one = fnmatch.translate(part).removeprefix("(?s:").removesuffix(")\\Z")
            pieces.append(one.replace(".*", "[^/]*") + ("" if last else "/"))
    return "".join(pieces)


@dataclass
class TreeCopy:
    """What `copy_tree` did: files copied, bytes, and what it left out (with why)."""

    files: int = 0
    bytes: int = 0
    left_out: list[str] = field(default_factory=list)


def copy_tree(
    root: Path, rel: str, dest: Path, *, max_files: int, max_bytes: int, max_file_bytes: int
) -> TreeCopy:
    """Copy the regular files under `rel` (relative to `root`) into `dest` (made by the tool),
    bounded in count, in total bytes and per file; symlinks and special files left out."""
    done = TreeCopy()
    try:
        infos = list(walk(root, rel, max_entries=max_files * 4 + 16))
    except Refused as exc:
        done.left_out.append(exc.message)
        return done
    start = len(rel.strip("/")) + 1 if rel.strip("/") else 0
    for info in infos:
        if done.files >= max_files:
            done.left_out.append(f"{info.rel}: more than {max_files} files")
            continue
        too_big = info.size > max_file_bytes or info.allocated > max_file_bytes + CHUNK
        if too_big or done.bytes + info.size > max_bytes:
            done.left_out.append(f"{info.rel}: too large ({info.size} bytes)")
            continue
        target = dest / info.rel[start:]
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            done.bytes += copy_file(root, info.rel, target, max_bytes=max_file_bytes)
            done.files += 1
        except Refused as exc:
            done.left_out.append(exc.message)
    return done


def make_fresh_dir(root: Path, name: str) -> Path:
    """Make the new directory `name` directly in `root` (which confined code may write):
    `mkdirat` never follows a symlink at `name`, so a name taken in advance is refused."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(name)
    dirfd = open_root(root)
    try:
        os.mkdir(name, 0o755, dir_fd=dirfd)
    except FileExistsError:
        raise Refused(str(root / name), "already exists (made by a command?)") from None
    finally:
        os.close(dirfd)
    return root / name
