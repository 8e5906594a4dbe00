"""What jest's, vitest's and node --test's coverage runs share (a module whose name starts
with `_` holds what several runners share; it is no runner): which of them a command runs,
itself or through a package.json script, and where a runner's coverage flags (its
`coverage_flags`) go in that command. Each run writes LCov of its V8 or istanbul coverage;
gate/coverage.py runs it, confined like every command, after the proof run, and reads the
report (its `SF:` paths made relative to the worktree; one that names none of the changed
files, as a runner rooted in a monorepo package writes, is not measured).

Where the flags go: appended to a command that runs the runner itself (`npx vitest run ...`,
`jest`; `node --test` gets them right after `node`), or to an `npm test`/`npm run <script>`
after `--` (pnpm, yarn: without it) whose package.json script ends by running the runner;
the command is kept as written (its quoting and `$VARIABLES` stay the shell's). A chain or
pipe in the command, a script that runs the runner earlier in a chain (`jest && tsc`) or
through a pipe, or a script's `node --test` that names its test files (Node would read the
appended options as files), is not measured, and the reason says so.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from codegen_ci.runners.base import CoverageAsk, CoveragePlan, Read, Totals

NodeRunner = Literal["jest", "vitest", "node"]
MEASURED_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
SCRIPT_RUNNERS = ("npm", "pnpm", "yarn")
SHELL_OPERATOR = re.compile(r"^[();<>|&]+$")
NODE_WORD = re.compile(r"(?:^|(?<=\s))(?:\S*/)?node(?=\s)")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
CHAIN = re.compile(r"&&|\|\||;")

# A runner's flags for the change's `sources`, written under the io folder: (flags, the
# report's path there), or the reason they cannot be asked for (vitest without a provider).
Flags = Callable[[Sequence[str], Path], "tuple[list[str], str] | str"]


# `K skipped` and `K todo` in jest's and vitest's summary lines (`summary_totals`)
SKIPS = re.compile(r"(\d+) (?:skipped|todo)\b")


def summary_totals(summary: re.Pattern[str], text: str) -> Totals | None:
    """The totals of the summary lines `summary` finds in `text` (group 1: the counts before
    the total, group 2: the total), with their `K skipped` and `K todo`; None without one."""
    found = summary.findall(text)
    if not found:
        return None
    skipped = sum(int(n) for parts, _ in found for n in SKIPS.findall(parts))
    return Totals(sum(int(total) for _, total in found), skipped)


def runner_of(command: str, read: Read) -> NodeRunner | None:
    """The JavaScript test runner `command` runs, itself or through a package.json script."""
    for text in (command, _script(command, read)):
        if found := _runner([w for w in re.split(r"[\s|&;()<>]+", text) if w]):
            return found
    return None


def coverage_plan(
    command: str, ask: CoverageAsk, runner: NodeRunner, flags_for: Flags
) -> CoveragePlan | str | None:
    """The coverage run of `command` for the change's source files when `command` runs
    `runner`; a reason when it cannot be measured; None when it runs another runner."""
    if runner_of(command, ask.read) != runner:
        return None
    sources = tuple(p for p in ask.sources if p.endswith(MEASURED_SUFFIXES))
    if not sources:
        return "the change has no JavaScript or TypeScript source file to measure"
    tokens = _tokens(command)
    if tokens is None:
        return f"{runner} coverage: the command is a shell pipeline or chain ({command})"
    script = ""
    direct = _runner(tokens) == runner
    if not direct:
        script = _script(command, ask.read)
        last = _tokens(_last_step(script))
        if last is None or _runner(last) != runner or not _ends_script(script):
            return (
                f"{runner} coverage: the package.json script does not end by running {runner} "
                f"(`{script}`), so its coverage flags have nowhere to go"
            )
    asked = flags_for(sources, ask.io_dir)
    if isinstance(asked, str):
        return asked
    flags, report = asked
    with_flags = f"{command.rstrip()} {_join(flags)}"
    if runner == "node":  # Node's options go before the test files
        if direct:
            found = NODE_WORD.search(command)
            if found is None:
                return "node --test coverage: where `node` starts in the command is unclear"
            at = found.end()
            return _plan(runner, f"{command[:at]} {_join(flags)}{command[at:]}", report, sources)
        last = _tokens(_last_step(script)) or []
        at = next(i for i, t in enumerate(last) if _name(t) == "node")
        if any(not t.startswith("-") for t in last[at + 1 :]):
            return (
                "node --test coverage: the script names test files, and Node reads options "
                "after them as files; run `node --test` directly in validation.test"
            )
    if not direct and _program(tokens)[:1] == ["npm"] and "--" not in tokens:
        with_flags = f"{command.rstrip()} {_join(['--', *flags])}"
    # appended to the command as written: its quoting and `$VARIABLES` stay the shell's
    return _plan(runner, with_flags, report, sources)


def _plan(runner: NodeRunner, command: str, report: str, sources: tuple[str, ...]) -> CoveragePlan:
    return CoveragePlan(
        command=command,  # a `coverage/` folder is not the change
        report=report,
        format="lcov",
        sources=sources,
        missing=f"no coverage report: {runner} wrote no LCov (see coverage/logs/coverage.log)",
        unnamed=f"the {runner} coverage report names none of the changed files "
        "(is the runner rooted elsewhere than the repository?)",
    )


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


def _script(command: str, read: Read) -> str:
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
    text = read("package.json")
    if text is None:
        return ""
    try:
        scripts = json.loads(text).get("scripts")
    except (ValueError, AttributeError):
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
