"""The output's size: each command's log bounded while it is written, and the output
directory's cap.

A command's log (`CappedLog`): the first `head` bytes go to the file as they come; after that
only the last `tail` bytes are kept (in memory, as a queue of chunks) and the bytes between are
counted, never stored. At the end the file gets a line saying how many bytes were omitted, then
the tail. A command that prints without end (`yes`) so costs a log of at most `head + tail`
bytes, and everything that reads the log afterwards (redaction, excerpts for the model) works on
bounded text.

The output directory (`enforce`): every log is capped as it is written, but a run makes many:
hundreds of commands, JUnit copies of any size. After each command, if the output directory
holds more than its cap (`CODEGEN_OUTPUT_CAP_MB`, default 200 MB, counting each file's apparent
or allocated size, whichever is larger) or more files (`CODEGEN_OUTPUT_MAX_FILES`, default
10,000), what that command added is cut down: its log to its first and last few KB, its JUnit
copies left out (they were parsed already). Each cut is a line in `capped.txt` in the output
directory, and `report.json` lists them (`output_capped`). report.json, the transcript and
diff.patch are never cut.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

HEAD_BYTES = 256 * 1024
TAIL_BYTES = 512 * 1024


class CappedLog:
    def __init__(self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("wb")
        self._head_left = head
        self._tail_max = tail
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0  # every byte the command wrote

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self._head_left:
            part = data[: self._head_left]
            self._file.write(part)
            self._head_left -= len(part)
            data = data[len(part) :]
        if not data:
            return
        self._tail.append(data)
        self._tail_len += len(data)
        while self._tail_len - len(self._tail[0]) >= self._tail_max:
            self._tail_len -= len(self._tail.popleft())

    def close(self, note: str = "") -> None:
        """Write the omitted-bytes line and the tail (and `note`), then close the file."""
        tail = b"".join(self._tail)[-self._tail_max :] if self._tail else b""
        written = self._file.tell()
        omitted = self.total - written - len(tail)
        if omitted:
            self._file.write(
                f"\n[codegen-ci: {omitted} bytes omitted here; the log keeps the first "
                f"{written} and the last {len(tail)} bytes]\n".encode()
            )
        self._file.write(tail)
        if note:
            self._file.write(note.encode())
        self._file.close()
        self._tail.clear()

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._file.closed:
            self.close()


# --- the output directory's cap --------------------------------------------------------

DEFAULT_CAP_MB = 200
DEFAULT_MAX_FILES = 10_000  # CODEGEN_OUTPUT_MAX_FILES
SHRUNK_LOG_BYTES = 32 * 1024
NOTES = "capped.txt"


def cap_bytes() -> int:
    raw = os.environ.get("CODEGEN_OUTPUT_CAP_MB", "")
    try:
        megabytes = float(raw) if raw else DEFAULT_CAP_MB
    except ValueError:
        megabytes = DEFAULT_CAP_MB
    return int(max(megabytes, 0.1) * 1024 * 1024)


def max_files() -> int:
    raw = os.environ.get("CODEGEN_OUTPUT_MAX_FILES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_FILES


def used_bytes(root: Path) -> int:
    return usage(root)[0]


def usage(root: Path) -> tuple[int, int]:
    """Bytes (apparent or allocated, the larger) and files under `root`."""
    total = files = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            try:
                st = (Path(dirpath) / name).lstat()
            except OSError:
                continue
            total += max(st.st_size, st.st_blocks * 512)
            files += 1
    return total, files


def enforce(output_dir: Path, logs: Iterable[Path], copies: Iterable[Path] = ()) -> list[str]:
    """Cut what one command added (`logs`, JUnit `copies`) while the directory is over its
    cap; returns the notes (also appended to `capped.txt`)."""
    cap, most, copies = cap_bytes(), max_files(), list(copies)
    used, files = usage(output_dir)
    notes: list[str] = []
    for path in [*copies, *logs]:
        if used <= cap and files <= most:
            break
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if path in copies:
            path.unlink()
            used, files = used - size, files - 1
            notes.append(f"{path.relative_to(output_dir)}: left out ({size} bytes; parsed)")
        elif used <= cap:
            continue  # over the file count only: a log is one file either way
        elif size > SHRUNK_LOG_BYTES:
            used -= size - _shrink(path)
            notes.append(
                f"{path.relative_to(output_dir)}: cut to its first and last "
                f"{SHRUNK_LOG_BYTES // 2048} KB ({size} bytes)"
            )
    if notes:
        with (output_dir / NOTES).open("a", encoding="utf-8") as f:
            f.writelines(
                f"{note} (output directory over its {cap / 2**20:g} MB cap or {most} files)\n"
                for note in notes
            )
    return notes


def read_notes(output_dir: Path) -> list[str]:
    path = output_dir / NOTES
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def _shrink(path: Path) -> int:
    half = SHRUNK_LOG_BYTES // 2
    with path.open("rb") as f:
        head = f.read(half)
        f.seek(-half, os.SEEK_END)
        tail = f.read()
    size = path.stat().st_size
    note = (
        f"\n[codegen-ci: the output directory is over its size cap; {size - 2 * half} "
        "bytes of this log omitted here]\n"
    ).encode()
    path.write_bytes(head + note + tail)
    return len(head) + len(note) + len(tail)
