"""Go coverage runs, for the changed lines the tests run (gate/coverage.py matches the result
against the change's diff with diff-cover).

The run: how a `go test` or `gotestsum` command is asked for a cover profile is the runner's
(runners/go.py, `coverage_command`); here, `-coverpkg`'s packages: those of the change's Go
files (import path: the module line of the nearest go.mod, and the folder below it), so a
changed line run by another package's tests counts, and only those packages are
instrumented.

The profile to LCov: diff-cover reads Cobertura, LCov and JaCoCo, not Go's cover profile, and
no maintained Python library converts one (the converters, gcov2lcov and gocover-cobertura,
are Go programs the module proxy would have to bring, which the sandbox does not reach). The
format is small and fixed (`go tool cover`'s): a `mode:` line, then one block a line,
`<import path>/<file>.go:<startLine>.<startCol>,<endLine>.<endCol> <statements> <count>`.
`profile_to_lcov` turns it into LCov `DA:<line>,<count>` records: a block's lines from its
first to its last are executable (Go's executable lines are its statements' line ranges), a
line in several blocks takes the highest count (a line whose statement ran is run even when a
block starting on it did not), blocks without statements are no lines, and a block seen more
than once (each test binary writes every `-coverpkg` package) takes the highest count too.
The file's import path becomes its path in the repository through the go.mod module lines;
files of other modules are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codegen_ci.security import guarded_read
from codegen_ci.security.guarded_read import Refused

MODULE_LINE = re.compile(r"^\s*module\s+\"?([^\s\"/]+[^\s\"]*)\"?", re.MULTILINE)
BLOCK = re.compile(r"^(.+\.go):(\d+)\.(\d+),(\d+)\.(\d+) (\d+) (\d+)$")
GO_MOD_BYTES = 1_000_000


@dataclass(frozen=True)
class GoModule:
    path: str  # the module's import path (`example.com/inventory`)
    folder: str  # its folder in the repository ("" at the top)


def modules(tree: Path, files: Iterable[str]) -> list[GoModule]:
    """The modules (nearest go.mod) that hold `files`, read through the guarded reader."""
    found: dict[str, GoModule] = {}
    for rel in files:
        folder = PurePosixPath(rel).parent
        for candidate in (folder, *folder.parents):
            key = "" if str(candidate) == "." else candidate.as_posix()
            if key in found:
                break
            go_mod = f"{key}/go.mod" if key else "go.mod"
            try:
                text = guarded_read.read_text(tree, go_mod, max_bytes=GO_MOD_BYTES)
            except (Refused, OSError):
                continue
            match = MODULE_LINE.search(text)
            if match:
                found[key] = GoModule(match[1], key)
            break
    return list(found.values())


def packages(files: Iterable[str], mods: Sequence[GoModule]) -> list[str]:
    """The import paths of the packages that hold `files`."""
    out: list[str] = []
    for rel in files:
        module = _module_of(rel, mods)
        if module is None:
            continue
        inner = PurePosixPath(rel).parent.as_posix()
        inner = inner[len(module.folder) :].strip("/") if module.folder else inner
        out.append(module.path if inner in ("", ".") else f"{module.path}/{inner}")
    return list(dict.fromkeys(out))


def _module_of(rel: str, mods: Sequence[GoModule]) -> GoModule | None:
    inside = [m for m in mods if not m.folder or rel.startswith(m.folder + "/")]
    return max(inside, key=lambda m: len(m.folder), default=None)


def repo_path(import_file: str, mods: Sequence[GoModule]) -> str | None:
    """`example.com/inventory/units/units.go` -> `units/units.go` (the longest module path
    that prefixes it); None for a file of no module of the repository."""
    best: GoModule | None = None
    for module in mods:
        if import_file.startswith(module.path + "/") and (
            best is None or len(module.path) > len(best.path)
        ):
            best = module
    if best is None:
        return None
    inner = import_file[len(best.path) + 1 :]
    return f"{best.folder}/{inner}" if best.folder else inner


def profile_to_lcov(profile: str, mods: Sequence[GoModule]) -> str:
    """A Go cover profile as LCov, paths relative to the repository (see the docstring)."""
    blocks: dict[tuple[str, int, int, int, int], tuple[int, int]] = {}
    for line in profile.splitlines():
        match = BLOCK.match(line.strip())
        if match is None:
            continue  # `mode: set`, blank lines
        key = (match[1], int(match[2]), int(match[3]), int(match[4]), int(match[5]))
        statements, count = int(match[6]), int(match[7])
        seen = blocks.get(key)
        if seen is not None:
            statements, count = max(statements, seen[0]), max(count, seen[1])
        blocks[key] = (statements, count)
    lines: dict[str, dict[int, int]] = {}
    for (name, first, _, last, _), (statements, count) in blocks.items():
        rel = repo_path(name, mods)
        if rel is None or statements == 0:
            continue
        hits = lines.setdefault(rel, {})
        for number in range(first, last + 1):
            hits[number] = max(hits.get(number, 0), count)
    records: list[str] = []
    for rel, hits in sorted(lines.items()):
        records.append(f"SF:{rel}")
        records += [f"DA:{number},{count}" for number, count in sorted(hits.items())]
        records.append("end_of_record")
    return "".join(f"{r}\n" for r in records)
