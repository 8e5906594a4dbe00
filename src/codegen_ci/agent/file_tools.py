"""Walking the repository for the tools, and finding the lines a failed edit meant."""

from __future__ import annotations

import difflib
import os
import time
from pathlib import Path

PROBE_CHARS = 4000
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", "dist", "build", ".nox", ".hypothesis"}  # fmt: skip


def closest(text: str, old_text: str, time_limit: float = 5.0) -> str:
    """The lines of `text` most like `old_text`, numbered, so the model can correct itself."""
    lines = text.splitlines()
    old_text = old_text[:PROBE_CHARS]  # similarity is quadratic in the worst case
    want = old_text.splitlines() or [old_text]
    size = max(1, len(want))
    best, best_at = 0.0, 0
    deadline = time.monotonic() + time_limit
    for i in range(max(1, len(lines) - size + 1)):
        if time.monotonic() > deadline:
            break  # the best so far: a hint, not an answer
        window = "\n".join(lines[i : i + size])[: PROBE_CHARS * 2]
        ratio = difflib.SequenceMatcher(None, window, old_text)
        score = ratio.quick_ratio() and ratio.ratio()
        if score > best:
            best, best_at = score, i
    lo, hi = max(0, best_at - 2), min(len(lines), best_at + size + 2)
    shown = "\n".join(f"{n + 1}\t{lines[n]}" for n in range(lo, hi))
    return f"Closest lines ({best:.0%} similar; copy text exactly, without line numbers):\n{shown}"


def list_tree(root: Path, repo: Path, limit: int, time_limit: float = 10.0) -> list[str]:
    entries: list[str] = []
    deadline = time.monotonic() + time_limit
    for dirpath, dirnames, filenames in os.walk(root):
        if time.monotonic() > deadline:
            return [*entries, f"[stopped after {time_limit:g}s; list a subdirectory]"]
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        base = Path(dirpath)
        for name in sorted(filenames):
            entries.append((base / name).relative_to(repo).as_posix())
            if len(entries) >= limit:
                return [*entries, f"[stopped after {limit} entries; list a subdirectory]"]
    return entries
