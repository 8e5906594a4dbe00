"""Walking the repository for the tools, and finding the lines a failed edit meant."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", "dist", "build", ".nox", ".hypothesis"}  # fmt: skip


def closest(text: str, old_text: str) -> str:
    """The lines of `text` most like `old_text`, numbered, so the model can correct itself."""
    lines = text.splitlines()
    want = old_text.splitlines() or [old_text]
    size = max(1, len(want))
    best, best_at = 0.0, 0
    for i in range(max(1, len(lines) - size + 1)):
        ratio = difflib.SequenceMatcher(None, "\n".join(lines[i : i + size]), old_text)
        score = ratio.quick_ratio() and ratio.ratio()
        if score > best:
            best, best_at = score, i
    lo, hi = max(0, best_at - 2), min(len(lines), best_at + size + 2)
    shown = "\n".join(f"{n + 1}\t{lines[n]}" for n in range(lo, hi))
    return f"Closest lines ({best:.0%} similar; copy text exactly, without line numbers):\n{shown}"


def list_tree(root: Path, repo: Path, limit: int) -> list[str]:
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        base = Path(dirpath)
        for name in sorted(filenames):
            entries.append((base / name).relative_to(repo).as_posix())
            if len(entries) >= limit:
                return [*entries, f"[stopped after {limit} entries; list a subdirectory]"]
    return entries


def iter_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        out.extend(Path(dirpath) / n for n in sorted(filenames))
    return out
