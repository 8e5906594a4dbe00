"""The maintainers' standing instructions for agents: `AGENTS.md` at the repository root, else
`CLAUDE.md`, else `.github/copilot-instructions.md`, or the files `.codegen.yml` names under
`instructions:`.

They are read from one commit (the default branch's in the action, the base commit locally),
never from the working tree or a pull request's head: whoever opens a pull request must not
be able to rewrite what the model is told the maintainers want.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen_ci.errors import InputError
from codegen_ci.workspace import git

DEFAULT_NAMES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
MAX_BYTES = 32 * 1024


@dataclass(frozen=True)
class Instructions:
    name: str  # the file(s) read, as named in report.json
    text: str
    truncated: bool = False


def read_instructions(root: Path, commit: str, names: Sequence[str] = ()) -> Instructions | None:
    """Every file in `names` that exists at `commit`, or else the first default that does;
    None when there is none. The text is capped at MAX_BYTES, with a note when cut."""
    for name in names:
        _check_name(name)
    found = [n for n in names if _exists(root, commit, n)]
    if not names:
        found = [n for n in DEFAULT_NAMES if _exists(root, commit, n)][:1]
    if not found:
        return None
    parts = []
    for name in found:
        text = git.git(["show", f"{commit}:{name}"], root)
        parts.append(text if len(found) == 1 else f"## {name}\n\n{text}")
    return _capped(", ".join(found), "\n\n".join(parts).strip())


def _capped(name: str, text: str) -> Instructions:
    data = text.encode("utf-8")
    if len(data) <= MAX_BYTES:
        return Instructions(name, text)
    cut = data[:MAX_BYTES].decode("utf-8", errors="ignore")
    note = f"\n\n[{name} truncated: only the first {MAX_BYTES // 1024} KB are shown]"
    return Instructions(name, cut + note, truncated=True)


def _exists(root: Path, commit: str, name: str) -> bool:
    return git.ok(["cat-file", "-e", f"{commit}:{name}"], root)


def _check_name(name: str) -> None:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts:
        raise InputError(
            f".codegen.yml: instructions: {name!r} must be a path inside the repository"
        )


def system_section(instructions: Instructions) -> str:
    """How the instructions appear in the system prompt: labelled as the maintainers' own."""
    return (
        f"Maintainers' instructions for this repository (from {instructions.name} on the "
        "default branch; follow them unless they conflict with the rules above):\n\n"
        f"{instructions.text}"
    )
