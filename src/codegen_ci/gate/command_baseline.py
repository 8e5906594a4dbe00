"""Did a failing command without per-test results fail the same way on the base commit?

A test command that wrote no JUnit (or whose failure its JUnit does not explain) is one
failure in the report (`test: <command>`, kind `command`). Its `new` is answered from the
base-commit run of the same command (the pre-flight's full run, or the baseline's), by what
can be compared without per-test results, its exit code and its error lines:

- `True`: the command passed on the base commit (the change broke it);
- `False` ("also fails on the base commit"): it failed there with the same exit code, and
  every error line of the round's output was printed by the base run too (paths, times,
  durations and addresses aside): the same failure, not one the change added;
- `None` (unknown): anything else: it failed there for another reason (other error lines,
  another exit code), a run timed out, or the output shows no line to compare. A command
  that fails on the base commit for one reason and in the round for another is not thereby
  pre-existing; nor is it provably the change's.

A failed command's output read here serves the report too: `summary_line`, the one line that
says what went wrong (report.json `failures[].message`). An error line is one that reads as an
error (`Error: ...`, `E   assert ...`, `not ok`, `... not found`); when no line does, every line
that is not noise (stack frames, package managers' epilogues) counts: `7 problems found`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.report import Round
from codegen_ci.security.untrusted import strip_ansi, strip_nondeterminism
from codegen_ci.workspace.proc import read_head_tail

OUTPUT_CHARS = 200_000
# Directories of an absolute path: the base tree and the agent's worktree are elsewhere, so
# `/tmp/x/base/tests/a.py:3` and `/tmp/y/run/tests/a.py:3` compare as `a.py:3`.
ABSOLUTE_DIRS = re.compile(r"(?<![\w.~-])/(?:[^/\s'\"`:()\[\]<>]+/)+")


# Lines that say nothing about what failed: closing brackets of a printed object, package
# managers' epilogues, runtime banners, stack frames (in dependency folders or anywhere).
NOISE = re.compile(
    r"^\s*(?:[\]})>,;]+|[\[{(]+|at .*|\.\.\. \d+ lines? .*|\^+|"
    r"(?:npm|pnpm|yarn) (?:ERR!|error|ERROR|WARN).*|.*ELIFECYCLE.*|.*See above for more.*|"
    r"Node\.js v[\d.]+|error Command failed with exit code \d+\.?|"
    r"info Visit https://yarnpkg.*|Traceback \(most recent call last\):|"
    r"make(?:\[\d+\])?: \*\*\*.*|exit status \d+|FAIL(?:ED)?|"
    r"\d+ (?:passing|failing|pending).*|Tests?:? .*\d+ (?:failed|passed).*|"
    r"(?:ERROR|error): (?:Test failed|command failed|Recipe for target).*)\s*$"
)
ERROR_LINE = re.compile(
    r"\b(?:[A-Z]\w*(?:Error|Exception)|Error|ERR_[A-Z_]+|FAIL|AssertionError|panic|"
    r"not ok|fatal|failed|cannot|Cannot|No such|not found)\b|[✗✕×]"
)


# A line that starts by stating an error: `TypeError: ...`, `Error: ...`, `E   assert ...`,
# `FAIL src/x.test.ts > adds`, `not ok 1 - adds`, `panic: ...`, `error[E0308]: ...`,
# rustfmt's `Diff in src/lib.rs:12:` (`cargo fmt --check`).
STATES_ERROR = re.compile(
    r"(?:\w*(?:Error|Exception)\b(?: \[\w+\])?:|E\s{2,}\S|FAIL\s+\S|not ok\b|panic:|"
    r"error(?:\[\w+\])?:|fatal:|ERROR:?\s|Diff in \S+:\d+:$)"
)


def summary_line(text: str) -> str:
    """One line that says what went wrong: the first line that reads as an error (not a
    stack frame, a lone bracket or a package manager's `ELIFECYCLE ... See above`), else the
    last line that is not noise, else the last line."""
    lines = [ln.strip() for ln in strip_ansi(text).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not NOISE.fullmatch(ln) and "node_modules/" not in ln]
    chosen = next((ln for ln in useful if STATES_ERROR.match(ln)), None)
    chosen = chosen or next((ln for ln in useful if ERROR_LINE.search(ln)), None)
    chosen = chosen or (useful[-1] if useful else lines[-1] if lines else "(no output)")
    return chosen[:300]


@dataclass(frozen=True)
class CommandEnd:
    """How one run of a command ended, in the terms two runs can be compared by."""

    exit_code: int | None
    timed_out: bool
    errors: frozenset[str]  # its error lines, normalised; empty when none could be read

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def command_end(
    exit_code: int | None, timed_out: bool, output_path: str | Path | None
) -> CommandEnd:
    """Read a run's log (its head and tail) into a `CommandEnd`."""
    path = Path(output_path) if output_path else None
    text = read_head_tail(path, OUTPUT_CHARS) if path and path.is_file() else ""
    return CommandEnd(exit_code, timed_out, error_lines(text))


def error_lines(text: str) -> frozenset[str]:
    """The lines of `text` that read as errors, normalised; else all that are not noise."""
    text = strip_nondeterminism(ABSOLUTE_DIRS.sub("", strip_ansi(text)))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not NOISE.fullmatch(ln) and "node_modules/" not in ln]
    errors = {ln for ln in useful if STATES_ERROR.match(ln) or ERROR_LINE.search(ln)}
    return frozenset(errors or useful)


def new_failure(base: CommandEnd | None, now: CommandEnd | None) -> bool | None:
    """The report's `new` for a command that failed in a round (`now`), given its run on the
    base commit (`base`); None (unknown) when either run is missing."""
    if base is None or now is None or base.timed_out or now.timed_out:
        return None
    if base.passed:
        return True
    same = base.exit_code == now.exit_code and bool(now.errors) and now.errors <= base.errors
    return False if same else None


def round_end(rnd: Round, command: str) -> CommandEnd | None:
    """The last run of test `command` in round `rnd`, or None when it did not run there."""
    record = next(
        (
            c
            for c in reversed(rnd.commands)
            if c.kind == "test" and c.command == command and not c.skipped
        ),
        None,
    )
    return command_end(record.exit_code, record.timed_out, record.output_path) if record else None
