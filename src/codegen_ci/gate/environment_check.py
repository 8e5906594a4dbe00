"""Telling a failure caused by the environment from a failure the model caused.

A command that fails because it could not write where it wanted to (EROFS: a read-only file
system; EACCES: permission denied) on a path the run's own places do not cover, or because
the disk is full (ENOSPC, EDQUOT), says nothing about the code: the model cannot fix it, and
handing it over as "your change broke the tests" spends rounds on nothing. Such a round ends
the run as an environment error (status `error`, reason `environment`, exit 3), with the
command, the error line and what to do; the model is never asked about it.

Which paths count: one outside the worktree and outside the run's scratch directory (HOME,
TMPDIR), or inside a dependency folder the run copied in (`node_modules`, `.venv`, ...) or
the worktree's `.git`; never a path the model changed (a test that the model's change made
write somewhere is the model's failure). A disk-full error counts wherever it happened.

Where it looks: the output of each command that failed (vitest, which writes its build info
into `node_modules`, reports the error after the tests: the exit code is 1 even when every
test passed). When the round also has failing JUnit cases, their messages are read first, and
the output then counts only for errors inside a dependency folder or `.git` (a passing test
that logs a permission error about the rest of the machine on purpose is not the cause).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.errors import CodegenError
from codegen_ci.gate.preflight import output_tail
from codegen_ci.report import CommandResult, Round

SCAN_CHARS = 40_000
_READ_ONLY = r"EROFS\b|[Rr]ead-only file system|\[Errno 30\]"
_DENIED = r"EACCES\b|[Pp]ermission denied|\[Errno 13\]"
_FULL = r"ENOSPC\b|No space left on device|\[Errno 28\]|EDQUOT\b|[Dd]isk quota exceeded"
ERRNO = re.compile(rf"(?P<rofs>{_READ_ONLY})|(?P<acces>{_DENIED})|(?P<full>{_FULL})")
# a quoted path ('/x', "x/y", `x`), else a bare absolute path
PATH = re.compile(r"""['"`‘’](?P<q>[^'"`‘’\s]*/[^'"`‘’]*)['"`‘’]|(?<![\w.])(?P<a>/[^\s'"`:,)]+)""")
NAMES = {
    "rofs": "EROFS (read-only file system)",
    "acces": "EACCES (permission denied)",
    "full": "ENOSPC (no space left on device)",
}


class EnvironmentFailure(CodegenError):
    """A command failed for a reason outside the code (exit 3, reason `environment`)."""


@dataclass(frozen=True)
class Places:
    """What the run's commands may write, and what the model changed."""

    worktree: Path
    dependency_dirs: tuple[str, ...] = ()  # relative to the worktree: copies of the checkout's
    writable: tuple[Path, ...] = ()  # the sandbox's scratch (HOME, TMPDIR), or the temp dir
    changed: frozenset[str] = frozenset()  # relative paths the model (or its commands) changed
    checkout: Path | None = None  # the user's checkout: its dependency folders count as tools'


@dataclass(frozen=True)
class EnvironmentProblem:
    command: str
    kind: str
    errno: str
    line: str
    path: str | None

    def message(self) -> str:
        where = f" on {self.path}" if self.path else ""
        return (
            f"environment error: {self.errno}{where}\n  command ({self.kind}): {self.command}\n"
            f"  output: {self.line}\n"
            "The command could not write where it needed to; that is not a failure of the "
            "code, and the model is not asked to fix it. Make the place writable (or free "
            "disk space), or keep the tool's caches inside the repository or $TMPDIR, then "
            "run again (docs/ecosystems.md, 'Environment errors')."
        )


def find_problem(rnd: Round, places: Places) -> EnvironmentProblem | None:
    """The first environment failure in a round that did not pass, or None."""
    failed = [c for c in rnd.commands if _failed(c)]
    if not failed:
        return None
    junit = [f for f in rnd.failures if f.kind in ("failure", "error")]
    for record in failed:
        log = output_tail(record, SCAN_CHARS)
        if record.kind == "test" and junit:
            for failure in junit:
                if found := _scan(failure.message, record, places):
                    return found
            # tests failed too: the log counts only for the tools' own places (a dependency
            # folder, .git), never for what a test may print about the rest of the machine
            if found := _scan(log, record, places, tools_only=True):
                return found
        elif found := _scan(log, record, places):
            return found
    return None


def _failed(record: CommandResult) -> bool:
    return not record.skipped and record.exit_code not in (None, 0)


def _scan(
    text: str, record: CommandResult, places: Places, *, tools_only: bool = False
) -> EnvironmentProblem | None:
    for line in text.splitlines():
        match = ERRNO.search(line)
        if not match:
            continue
        kind = match.lastgroup or "full"
        # nearest first: in `/bin/sh: 1: cannot create /x/y: Read-only file system` the place
        # is `/x/y`, not the shell that printed it
        found = list(PATH.finditer(line))
        before = [m for m in found if m.start() < match.start()]
        paths = [m.group("q") or m.group("a") for m in (before[::-1] or found)]
        path = next((p for p in paths if _outside_the_code(p, places, tools_only)), None)
        if (kind == "full" and not tools_only) or path is not None:
            short = line.strip()[:300]
            return EnvironmentProblem(record.command, record.kind, NAMES[kind], short, path)
    return None


def _outside_the_code(raw: str, places: Places, tools_only: bool = False) -> bool:
    """Whether an error on `raw` is the environment's: not a place the tests may write, nor
    one the model changed (`tools_only`: and inside a dependency folder or `.git`)."""
    path = Path(raw) if Path(raw).is_absolute() else places.worktree / raw
    path = Path(os.path.normpath(path))
    top = Path(os.path.normpath(places.worktree))
    if path == top or top in path.parents:
        rel = path.relative_to(top).as_posix()
        if _under(rel, places.changed):
            return False
        return _under(rel, (*places.dependency_dirs, ".git"))
    if places.checkout is not None:  # the checkout's own copy (a link, when no copy was made)
        source = Path(os.path.normpath(places.checkout))
        inside = path.relative_to(source).as_posix() if source in path.parents else None
        if inside is not None and _under(inside, (*places.dependency_dirs, ".git")):
            return True
    if tools_only:
        return False
    return not any(path == top or top in path.parents for top in places.writable)


def _under(rel: str, tops: Iterable[str]) -> bool:
    return any(rel == top or rel.startswith(top + "/") or top.startswith(rel + "/") for top in tops)


def check_environment(rounds: Sequence[Round | None], places: Places) -> None:
    """Raise `EnvironmentFailure` when a round failed because of the environment."""
    for rnd in rounds:
        if rnd is not None and not rnd.passed and (problem := find_problem(rnd, places)):
            raise EnvironmentFailure(problem.message())
