"""A command's log of bounded size, written while the command runs.

The first `head` bytes go to the file as they come; after that only the last `tail` bytes are
kept (in memory, as a queue of chunks) and the bytes between are counted, never stored. At the
end the file gets a line saying how many bytes were omitted, then the tail. A command that
prints without end (`yes`) so costs a log of at most `head + tail` bytes, and everything that
reads the log afterwards (redaction, excerpts for the model) works on bounded text.
"""

from __future__ import annotations

from collections import deque
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
