"""Changed lines run by the tests, for JavaScript/TypeScript runners: jest, vitest and node's
own test runner, each asked for an LCov report of its V8 or istanbul coverage.

The test command runs once more with the runner's own coverage flags (each runner's
`coverage_flags`: runners/jest.py, runners/vitest.py, runners/node_test.py; gate/coverage.py
runs it, confined like every command, after the proof run):

- jest: `--coverage --coverageReporters=lcovonly --coverageDirectory=<dir>` and one
  `--collectCoverageFrom=<file>` per changed source file, so only those files are
  instrumented (the repository's `coverageProvider`, babel/istanbul or v8, stays as it is);
- vitest: `--coverage.enabled --coverage.provider=v8 --coverage.reporter=lcovonly
  --coverage.reportsDirectory=<dir>` and one `--coverage.include=<file>` per changed source.
  V8 coverage needs `@vitest/coverage-v8` in the repository's `node_modules`
  (`@vitest/coverage-istanbul` serves where only that one is there); codegen-ci installs
  nothing into the repository, so without either `ChangedLines.reason` says what to add;
- node's test runner (`node --test`): `--experimental-test-coverage --test-reporter=lcov
  --test-reporter-destination=<file>` before its other arguments (Node 20.11+ has the lcov
  reporter; Node 20 cannot limit coverage to some files: every loaded file is measured).

Where the flags go: appended to a command that runs the runner itself (`npx vitest run ...`,
`jest`; `node --test` gets them right after `node`), or to an `npm test`/`npm run <script>`
after `--` (pnpm, yarn: without it) whose package.json script ends by running the runner;
the command is kept as written (its quoting and `$VARIABLES` stay the shell's). A chain or
pipe in the command, a script that runs the runner earlier in a chain (`jest && tsc`) or
through a pipe, or a script's `node --test` that names its test files (Node would read the
appended options as files), is not measured, and the reason says so.

The report is read through the guarded reader, its `SF:` paths made relative to the worktree,
copied into an anonymous temporary file of ours and parsed there by diff-cover's
`LcovCoverageReporter` (never from a path a command could swap); gate/coverage.py matches it
against the change's own diff. A report that names none of the changed files (a runner
rooted in a monorepo package reports paths relative to it) is not measured, and says so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from diff_cover.violationsreporters.violations_reporter import LcovCoverageReporter

from codegen_ci.runners import jest, node_test, vitest
from codegen_ci.security import guarded_read
from codegen_ci.workspace.file_kinds import is_test_file

NodeRunner = Literal["jest", "vitest", "node"]
MEASURED_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
MAX_PACKAGE_BYTES = 1024 * 1024
SCRIPT_RUNNERS = ("npm", "pnpm", "yarn")
SHELL_OPERATOR = re.compile(r"^[();<>|&]+$")
NODE_WORD = re.compile(r"(?:^|(?<=\s))(?:\S*/)?node(?=\s)")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
CHAIN = re.compile(r"&&|\|\||;")


@dataclass(frozen=True)
class NodePlan:
    """The coverage run of one test command: `command` writes LCov to `report` (relative to
    the run's io folder) for `sources`, the change's files the runner can measure."""

    runner: NodeRunner
    command: str
    report: str
    sources: tuple[str, ...]


def runner_of(command: str, cwd: Path) -> NodeRunner | None:
    """The JavaScript test runner `command` runs, itself or through a package.json script."""
    for text in (command, _script(command, cwd)):
        if found := _runner([w for w in re.split(r"[\s|&;()<>]+", text) if w]):
            return found
    return None


def plan(command: str, change: Sequence[str], cwd: Path, io_dir: Path) -> NodePlan | str | None:
    """The coverage run of `command` for the change's source files (`change`: every path it
    touched); a reason when it cannot be measured; None when `command` runs no JavaScript
    test runner (another runner's business)."""
    runner = runner_of(command, cwd)
    if runner is None:
        return None
    sources = tuple(p for p in change if p.endswith(MEASURED_SUFFIXES) and not is_test_file(p))
    if not sources:
        return "the change has no JavaScript or TypeScript source file to measure"
    tokens = _tokens(command)
    if tokens is None:
        return f"{runner} coverage: the command is a shell pipeline or chain ({command})"
    if _runner(tokens) == runner:
        direct = True
    else:
        script = _script(command, cwd)
        last = _tokens(_last_step(script))
        if last is None or _runner(last) != runner or not _ends_script(script):
            return (
                f"{runner} coverage: the package.json script does not end by running {runner} "
                f"(`{script}`), so its coverage flags have nowhere to go"
            )
        direct = False
    if runner == "vitest":
        provider = _vitest_provider(cwd)
        if provider is None:
            return (
                "vitest coverage needs @vitest/coverage-v8 in the repository's node_modules "
                "(`npm install --save-dev @vitest/coverage-v8` at vitest's version); "
                "codegen-ci installs nothing into the repository"
            )
        flags, report = vitest.coverage_flags(provider, sources, io_dir)
    elif runner == "jest":
        flags, report = jest.coverage_flags(sources, io_dir)
    else:
        flags, report = node_test.coverage_flags(io_dir)
        if direct:  # Node's options go before the test files
            found = NODE_WORD.search(command)
            if found is None:
                return "node --test coverage: where `node` starts in the command is unclear"
            at = found.end()
            with_flags = f"{command[:at]} {_join(flags)}{command[at:]}"
            return NodePlan(runner, with_flags, report, sources)
        last = _tokens(_last_step(_script(command, cwd))) or []
        at = next(i for i, t in enumerate(last) if _name(t) == "node")
        if any(not t.startswith("-") for t in last[at + 1 :]):
            return (
                "node --test coverage: the script names test files, and Node reads options "
                "after them as files; run `node --test` directly in validation.test"
            )
    if not direct and _program(tokens)[:1] == ["npm"] and "--" not in tokens:
        flags = ["--", *flags]
    # appended to the command as written: its quoting and `$VARIABLES` stay the shell's
    return NodePlan(runner, f"{command.rstrip()} {_join(flags)}", report, sources)


def lcov_report(data: bytes, tree: Path, sources: Sequence[str]) -> LcovCoverageReporter | None:
    """diff-cover's reader over the LCov bytes `data`; `SF:` paths under `tree` made relative
    to it, as the diff names them. None when it names none of `sources`."""
    roots = {str(tree).rstrip("/") + "/", os.path.realpath(tree).rstrip("/") + "/"}
    lines = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        root = next((r for r in roots if line.startswith("SF:" + r)), None)
        if root:
            line = "SF:" + line[3 + len(root) :]
        elif line.startswith("SF:"):
            line = "SF:" + PurePosixPath(line[3:].replace("\\", "/")).as_posix()
        if line.strip():  # diff-cover refuses blank lines
            lines.append(line)
    # diff-cover's parser opens what it is given: an anonymous file of ours, never a path a
    # command could swap
    with tempfile.TemporaryFile() as copy:
        copy.write("\n".join(lines).encode() + b"\n")
        copy.flush()
        copy.seek(0)
        parsed = LcovCoverageReporter.parse(os.dup(copy.fileno()))
    if not any(s in parsed for s in sources):
        return None
    return LcovCoverageReporter([parsed], src_roots=[str(tree)])


def _vitest_provider(cwd: Path) -> str | None:
    for provider, package in vitest.COVERAGE_PROVIDERS:
        # lexists: a pnpm layout links the package from node_modules/.pnpm
        if os.path.lexists(cwd / "node_modules" / package):
            return provider
    return None


def _runner(tokens: Sequence[str]) -> NodeRunner | None:
    names = [_name(t) for t in tokens]
    if "vitest" in names:
        return "vitest"
    if "jest" in names:
        return "jest"
    if "node" in names and "--test" in tokens:
        return "node"
    return None


def _name(token: str) -> str:
    return PurePosixPath(token).name


def _tokens(command: str) -> list[str] | None:
    """`command`'s words; None for a chain, pipe or redirection (flags could not be added)."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if not tokens or any(SHELL_OPERATOR.match(t) for t in tokens) or CHAIN.search(command):
        return None
    if any(t.startswith(("<", ">", "|")) or t.endswith((";", "&")) for t in tokens):
        return None
    return tokens


def _last_step(script: str) -> str:
    return CHAIN.split(script)[-1].strip()


def _ends_script(script: str) -> bool:
    """The script's last step takes arguments appended to it (no pipe or redirection)."""
    step = _last_step(script)
    return bool(step) and not re.search(r"[|<>&]", step)


def _script(command: str, cwd: Path) -> str:
    """The package.json script `npm test`/`npm run x` (pnpm, yarn) runs; "" if none."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return ""
    tokens = _program(tokens)
    if len(tokens) < 2 or tokens[0] not in SCRIPT_RUNNERS:
        return ""
    name = tokens[1]
    if name in ("run", "run-script") and len(tokens) > 2:
        name = tokens[2]
    try:
        text = guarded_read.read_text(cwd, "package.json", max_bytes=MAX_PACKAGE_BYTES)
        scripts = json.loads(text).get("scripts")
    except (guarded_read.Refused, OSError, ValueError, AttributeError):
        return ""
    value = scripts.get(name) if isinstance(scripts, dict) else None
    return value if isinstance(value, str) else ""


def _program(tokens: list[str]) -> list[str]:
    """`tokens` from the program on: `CI=1 npm test` -> `npm test`."""
    at = 0
    while at < len(tokens) and ASSIGNMENT.match(tokens[at]):
        at += 1
    return tokens[at:]


def _join(tokens: Sequence[str]) -> str:
    return " ".join(shlex.quote(t) for t in tokens)
