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
from typing import Literal

from codegen_ci import runners
from codegen_ci.errors import CodegenError
from codegen_ci.report import CommandResult, Round
from codegen_ci.security.bwrap import SHM
from codegen_ci.security.sandbox import Sandbox
from codegen_ci.security.untrusted import strip_ansi
from codegen_ci.workspace.proc import read_head_tail

SCAN_CHARS = 40_000
_READ_ONLY = r"EROFS\b|[Rr]ead-only file system|\[Errno 30\]"
_DENIED = r"EACCES\b|[Pp]ermission denied|\[Errno 13\]"
_FULL = r"ENOSPC\b|No space left on device|\[Errno 28\]|EDQUOT\b|[Dd]isk quota exceeded"
ERRNO = re.compile(rf"(?P<rofs>{_READ_ONLY})|(?P<acces>{_DENIED})|(?P<full>{_FULL})")
# a quoted path ('/x', "x/y", `x`), else a bare absolute path
PATH = re.compile(r"""['"`‘’](?P<q>[^'"`‘’\s]*/[^'"`‘’]*)['"`‘’]|(?<![\w.])(?P<a>/[^\s'"`:,)]+)""")
# POSIX semaphores and shared memory are files in /dev/shm (glibc's sem_open and shm_open:
# Python's multiprocessing locks, queues and pools, among others). Bubblewrap gives each
# command a /dev/shm of its own; Landlock cannot (it makes no mounts) and keeps the machine's
# read-only, so the call fails with EACCES and names no path: the traceback names the call.
SHARED_MEMORY = re.compile(r"\bSemLock\b|\bsem_open\b|\bshm_open\b|/dev/shm\b|\bSharedMemory\b")
SHM_ADVICE = (
    "POSIX semaphores and shared memory (Python's multiprocessing, sem_open, shm_open) need a "
    "writable /dev/shm: bubblewrap gives each command one of its own; Landlock cannot, and "
    "keeps the machine's read-only. Install bubblewrap (docs/sandbox.md), or run with "
    "CODEGEN_SANDBOX=off where the machine is yours alone, then run again."
)
# Landlock gives a command without the network no inet socket at all (it cannot give it a
# loopback of its own, as bubblewrap does): a test's own server on 127.0.0.1 fails with an
# EACCES (EPERM) that names no path, next to the socket call that was refused.
SOCKET_CALL = re.compile(
    r"\b_?socket\b|\bsocket\.|\b(?:bind|listen|connect|dial|accept)\b|create_connection|"
    r"create_server|\bTcp(?:Listener|Stream)\b|\bUdpSocket\b|\bnet\.(?:Listen|Dial)|"
    r"127\.0\.0\.1|\blocalhost\b|\[::1\]"
)
_EPERM = re.compile(r"EPERM\b|Operation not permitted|\[Errno 1\]")
LOOPBACK_ADVICE = (
    "Landlock gives commands without the network no socket of their own, so a test's own "
    "server on 127.0.0.1 cannot start. Install bubblewrap (each command gets a loopback of its "
    "own; docs/sandbox.md), or give the tests the network (`validation.network: [test]`), "
    "then run again."
)
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
    loopback: Literal["own", "none"] | None = None  # Sandbox.loopback: "none" under Landlock


@dataclass(frozen=True)
class EnvironmentProblem:
    command: str
    kind: str
    errno: str
    line: str
    path: str | None
    advice: str = (
        "Make the place writable (or free disk space), or keep the tool's caches inside the "
        "repository or $TMPDIR, then run again (docs/ecosystems.md, 'Environment errors')."
    )
    cause: str = "The command could not write where it needed to"

    def message(self) -> str:
        where = f" on {self.path}" if self.path else ""
        return (
            f"environment error: {self.errno}{where}\n  command ({self.kind}): {self.command}\n"
            f"  output: {self.line}\n"
            f"{self.cause}; that is not a failure of the code, and the model is not asked to "
            f"fix it. {self.advice}"
        )


def find_problem(rnd: Round, places: Places) -> EnvironmentProblem | None:
    """The first environment failure in a round that did not pass, or None."""
    failed = [c for c in rnd.commands if _failed(c)]
    if not failed:
        return None
    junit = [f for f in rnd.failures if f.kind in ("failure", "error")]
    for record in failed:
        log = output_tail(record, SCAN_CHARS)
        if record.kind == "test" and (found := _shared_memory(log, record)):
            return found
        if record.kind == "test" and places.loopback == "none" and (found := _socket(log, record)):
            return found
        if record.kind == "test" and junit:
            for failure in junit:
                if found := _scan(failure.message.raw_for("matching"), record, places):
                    return found
            # tests failed too: the log counts only for the tools' own places (a dependency
            # folder, .git), never for what a test may print about the rest of the machine
            if found := _scan(log, record, places, tools_only=True):
                return found
        elif found := _scan(log, record, places):
            return found
    return None


def _shared_memory(log: str, record: CommandResult) -> EnvironmentProblem | None:
    """A semaphore or shared memory refused (`SHARED_MEMORY`): an EACCES or EROFS line that
    names no path, or /dev/shm, in an output that names the call. Asked of test commands,
    whose failures would otherwise be the model's; a lint that cannot start (flake8's
    process pool) fails on the base commit too, where it is the base's, not the model's."""
    if not SHARED_MEMORY.search(log):
        return None
    for line in log.splitlines():
        match = ERRNO.search(line)
        if match and match.lastgroup in ("rofs", "acces"):
            paths = {m.group("q") or m.group("a") for m in PATH.finditer(line)}
            if paths <= {SHM} or any(p.startswith(SHM + "/") for p in paths):
                kind = NAMES[match.lastgroup]
                return EnvironmentProblem(
                    record.command, record.kind, kind, line.strip()[:300], SHM, SHM_ADVICE
                )
    return None


def _socket(log: str, record: CommandResult) -> EnvironmentProblem | None:
    """A socket the sandbox refused (Landlock, no network): an EACCES or EPERM line that names
    no path, on or just below a line naming a socket call or the loopback address."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        match = ERRNO.search(line)
        denied = (match is not None and match.lastgroup == "acces") or _EPERM.search(line)
        if not denied or PATH.search(SOCKET_CALL.sub("", line)):
            continue
        if any(SOCKET_CALL.search(near) for near in lines[max(0, i - 3) : i + 1]):
            return EnvironmentProblem(
                record.command,
                record.kind,
                "permission denied",
                line.strip()[:300],
                None,
                LOOPBACK_ADVICE,
                cause="The sandbox refused the command a socket",
            )
    return None


def output_tail(record: CommandResult, chars: int) -> str:
    if not record.output_path or not Path(record.output_path).is_file():
        return ""
    return strip_ansi(read_head_tail(Path(record.output_path), chars)).strip()


def _failed(record: CommandResult) -> bool:
    return not record.skipped and record.exit_code not in (None, 0)


def _scan(
    text: str, record: CommandResult, places: Places, *, tools_only: bool = False
) -> EnvironmentProblem | None:
    for line in text.splitlines():
        match = ERRNO.search(line)
        if not match or runners.needed_download(line):  # a download to make, not a place
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


# The untouched code's run, failed for its environment: a configuration error (exit 2).

NETWORK = re.compile(
    r"Temporary failure in name resolution|Name or service not known|No address associated "
    r"with hostname|Could not resolve host|Couldn't resolve host|getaddrinfo\b.*(?:ENOTFOUND|"
    r"EAI_AGAIN)|\bEAI_AGAIN\b|\bENETUNREACH\b|Network is unreachable|Failed to establish a "
    r"new connection|NewConnectionError|dial tcp\b.*(?:lookup|connect)|No matching "
    r"distribution found for|Could not find a version that satisfies the requirement|module "
    r"lookup disabled by GOPROXY=off|spurious network error|failed to (?:download|fetch|"
    r"query|get) .*(?:crates\.io|registry|index)|\[Errno -[235]\]|npm (?:ERR!|error) code "
    r"E(?:NOTFOUND|AI_AGAIN|CONNREFUSED)"
)
_NOT_THERE = r"(?:not found|[Cc]ommand not found|No such file or directory)"
MISSING_PROGRAM = (
    # dash `sh: 1: x: not found`; bash `script.sh: line 2: x: command not found`
    re.compile(rf"^\S+: (?:line )?\d+: (?P<prog>[^:\s]+): {_NOT_THERE}$", re.M),
    re.compile(r"^(?:\S+: )?(?P<prog>[^:\s]+): (?:[Cc]ommand )?not found$", re.M),
    re.compile(rf"^make(?:\[\d+\])?: (?P<prog>[^:\s]+): {_NOT_THERE}$", re.M),
    re.compile(r"^(?:\S*/)?env: '?(?P<prog>[^':\s]+)'?: No such file or directory$", re.M),
    re.compile(r"(?P<prog>\S+): bad interpreter: No such file or directory"),
    re.compile(r"could not find executable:? '?(?P<prog>[^'\s]+)'?"),  # tox
    re.compile(r"^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error 127$", re.M),
)


# a test named as failing in a runner's own output (each runner's `FAILED_TEST`, runners/)
TEST_FAILED = runners.failed_test()


@dataclass(frozen=True)
class SandboxView:
    """What the commands saw of the machine, to say a failure in the user's terms: the
    sandbox's scratch (its HOME is an empty folder there), the user's HOME, and the folders of
    it the sandbox shows (read-only)."""

    home: Path
    scratch: Path | None = None
    shown: tuple[Path, ...] = ()

    @classmethod
    def of(cls, sandbox: Sandbox | None) -> SandboxView:
        home = Path(os.environ.get("HOME") or str(Path.home()))
        if sandbox is None or not sandbox.enabled:
            return cls(home)
        real = home.resolve()
        shown = tuple(t for t in sandbox.toolchains if real in t.parents)
        return cls(home, sandbox.scratch, shown)

    def user_terms(self, text: str) -> str:
        """`text` with the sandbox's scratch paths named as what they are: its HOME `~`,
        its TMPDIR, its scratch; never as if they were the user's."""
        if self.scratch is None:
            return text
        scratch = str(self.scratch)
        text = text.replace(str(self.scratch / "home"), "~")  # the sandbox's (empty) HOME
        text = text.replace(str(self.scratch / "tmp"), "$TMPDIR")
        text = text.replace(scratch, "<the sandbox's scratch folder>")
        root = str(self.scratch.parent)
        return text.replace(root, "<the sandbox's folder>")

    def home_note(self) -> str:
        """What HOME looks like to the commands."""
        if self.scratch is None:
            return ""
        shown = ", ".join(self._tilde(p) for p in self.shown) or "none"
        return (
            f"Inside the sandbox HOME (`~`) is an empty folder, fresh for each phase, not your "
            f"{self.home}; of yours only these folders are shown, read-only: {shown}."
        )

    def _tilde(self, path: Path) -> str:
        real = self.home.resolve()
        return "~/" + path.relative_to(real).as_posix() if real in path.parents else str(path)


@dataclass(frozen=True)
class Cause:
    record: CommandResult
    what: str  # what failed, in the user's terms
    line: str  # the output line that says so
    advice: str  # what to do


def untouched_code_cause(rnd: Round, network: Sequence[str], view: SandboxView) -> Cause | None:
    """Why the untouched code's run (the pre-flight, the dry run) failed for its environment
    when no test says otherwise: a program, interpreter or toolchain not found, the network
    refused, a dependency that could not be downloaded. None when a failing test (from
    JUnit) names a reason of its own: that is the code's, maybe the task itself."""
    tests_failing = [f for f in rnd.failures if f.kind in ("failure", "error")]
    named = [f for f in tests_failing if not NETWORK.search(f.message.raw_for("matching"))]
    for record in rnd.commands:
        if record.skipped or record.timed_out or record.exit_code in (0, None):
            continue
        if record.kind == "test" and named:
            continue  # a test failed for a reason of its own
        if record.kind == "test" and tests_failing:  # every failing test: the network
            line = next(
                text
                for text in (f.message.raw_for("shown") for f in tests_failing)
                if NETWORK.search(text)
            )
            return _network(record, line.strip().splitlines()[0], network, "", view)
        if cause := record_cause(record, network, view):
            return cause
    return None


def record_cause(record: CommandResult, network: Sequence[str], view: SandboxView) -> Cause | None:
    """What in one failed command's output says the environment failed it, if anything."""
    text = output_tail(record, SCAN_CHARS)
    if record.kind == "test" and TEST_FAILED.search(text):
        return None  # a test failed by name: whatever else the output says, that is the code's
    return _cause(record, text, network, view)


def _cause(
    record: CommandResult, text: str, network: Sequence[str], view: SandboxView
) -> Cause | None:
    for toolchain in runners.no_toolchain():
        if match := toolchain.pattern.search(text):
            advice = toolchain.advice.format(home_note=view.home_note(), home=view.home)
            return Cause(record, toolchain.what, _line(text, match.start()), advice)
    for pattern in MISSING_PROGRAM:
        if match := pattern.search(text):
            prog = match.groupdict().get("prog") or ""
            return _missing(record, prog, _line(text, match.start()), view)
    if match := NETWORK.search(text):
        return _network(record, _line(text, match.start()), network, text, view)
    if needed := runners.needed_download(text):  # a cache shown read-only lacks it
        what, found = needed
        line = view.user_terms(_line(text, found.start()))
        return Cause(record, what.what, line, _needed_advice(what, found, view))
    return None


def _needed_advice(
    advice: runners.EnvironmentAdvice, found: re.Match[str], view: SandboxView
) -> str:
    """The advice for a download a cache lacked: naming the cache the runner used, when its
    line says which (not a default the user may have changed)."""
    place = found.groupdict().get("place")
    if advice.needed_advice and place:
        return advice.needed_advice.format(place=view.user_terms(place)).strip()
    return advice.advice.format(home_note=view.home_note(), home=view.home).strip()


def _missing(record: CommandResult, prog: str, line: str, view: SandboxView) -> Cause:
    shown = view.user_terms(prog)
    what = f"`{shown}` was not found" if prog else "a program the command starts was not found"
    if prog and shown.startswith("~"):
        advice = (
            f"`{shown}` is under HOME. {view.home_note()} Activate that virtualenv or "
            "toolchain for the run instead (its `bin` on PATH, or VIRTUAL_ENV set: the sandbox "
            "then shows it read-only), or install it in validation.setup."
        )
    else:
        advice = (
            "Install it before the run (validation.setup, or the workflow) or put the folder "
            "that holds it on PATH; a program on PATH is shown to the sandbox read-only. "
            + view.home_note()
        )
    return Cause(record, what + " inside the sandbox", view.user_terms(line), advice.strip())


def _network(
    record: CommandResult, line: str, network: Sequence[str], text: str, view: SandboxView
) -> Cause:
    kind = record.kind
    if kind in network:
        advice = (
            f"`validation.network` already lets `{kind}` commands reach the network; the "
            "download itself failed (a proxy, a registry, the machine's connection)."
        )
    else:
        kinds = ", ".join(dict.fromkeys([*network, kind]))
        advice = (
            f"Commands run without network unless `validation.network` names their kind: add "
            f"`validation.network: [{kinds}]`, or download what it needs beforehand (in "
            "validation.setup with `network: [setup]`, or in the workflow)."
        )
    if download := runners.download(record.command, text):  # where the runner keeps it
        advice += " " + download.advice.format(home_note=view.home_note(), home=view.home)
    what = "it tried to reach the network, which the sandbox refused"
    if kind in network:
        what = "it could not download what it needs"
    return Cause(record, what, view.user_terms(line), advice.strip())


def _line(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)].strip()[:300]
