"""What the repository's own CI runs, for `codegen-ci init`: the shell lines of the `run:` steps
of its workflows (those on pushes and pull requests), each with the place it came from.

A line is taken as CI runs it: multi-line scripts split into lines (a trailing `\\` joins the
next one) and `&&` chains into their parts, `cd dir` and `working-directory` (the step's or
the job's `defaults.run`) put in front as `cd dir && …`, `${{ matrix.x }}` expanded to
each value of a simple matrix list, and variables CI sets written out: the workflow's, job's
and step's `env:` values and the script's own assignments before the line (`PACKAGE_NAMES=$(go
list ./...)` then `gotestsum ... $PACKAGE_NAMES`), since locally they are unset and the line
would test nothing or write to `/`. What cannot run on a developer's machine is left out with
the reason: steps and jobs that need secrets, services or a deployment environment, jobs that
run only on Windows or macOS, and expressions only CI can evaluate. Actions (`uses:`) are not
commands: setup-*, checkout and cache are dropped silently, those that only run a tool's
subcommand (`actions-rs/cargo`) become that command line, the others are named.

Which lines are checks (and which kind) is `init_checks.py`'s decision, not this module's."""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MATRIX_REF = re.compile(r"\$\{\{\s*matrix\.([A-Za-z0-9_-]+)\s*\}\}")
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
SECRET = re.compile(r"\$\{\{\s*secrets\.")
QUIET_ACTIONS = re.compile(
    r"^(?:actions/(?:checkout|cache|upload-artifact|download-artifact)|.*(?:setup|cache|"
    r"toolchain|install))",
    re.I,
)
# Actions that are checks: the command they run, with the step's `with: args`.
CHECK_ACTIONS = {
    "golangci/golangci-lint-action": "golangci-lint run",
    "astral-sh/ruff-action": "ruff check",
    "chartboost/ruff-action": "ruff check",
    "psf/black": "black --check .",
}
# Actions that run every pre-commit hook (`with: extra_args`, default `--all-files`): the
# line `pre-commit run` would be, unfolded to its hooks' checks like one (init_precommit.py).
PRE_COMMIT_ACTIONS = ("pre-commit/action", "j178/prek-action")
# Actions that run a tool's subcommand named by the step's `with: command` (and `args`):
# `actions-rs/cargo` with `command: clippy`, `args: --no-default-features` is that cargo line.
COMMAND_ACTIONS = {
    "actions-rs/cargo": "cargo",
}

MAX_MATRIX = 8
CD = re.compile(r"^cd\s+(\S+)$")
# `$GITHUB_WORKSPACE/golangci-lint run`: a tool CI downloaded into the workspace, run by its path
WORKSPACE_TOOL = re.compile(r"^\$(?:GITHUB_WORKSPACE|\{GITHUB_WORKSPACE\})/([\w.-]+)(?=\s|$)")
# `NAME=value` alone on a line (or after `export`): a variable for the lines after it. The value
# is one word, one quoted string or one `$(...)`.
ASSIGNMENT = re.compile(
    r"""^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\$\([^()]*\)|"[^"]*"|'[^']*'|[^\s;&|<>()"'`]*)\s*$"""
)
ENV_REF = re.compile(r"\$\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
SHELL_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# Shell lines that are not checks and deserve no "left out" line of their own.
NOISE = re.compile(
    r"^(?:#|set\s+-|echo\b|export\s|printf\b|true$|:$|shopt\b|ulimit\b|"
    r"[A-Za-z_][A-Za-z0-9_]*=\S*$|(?:mkdir|touch|rm|cp|mv|chmod|ln|sleep|pwd|which|env|"
    r"printenv|ls|cat|du|df|uname|date)\b)"
)


@dataclass(frozen=True)
class CiLine:
    """One command a CI job runs: `command` as a shell line from the repository's root."""

    command: str
    workflow: str  # ".github/workflows/ci.yml"
    job: str

    @property
    def origin(self) -> str:
        return f"from {self.workflow}, job {self.job}"


@dataclass(frozen=True)
class LeftOut:
    """Something CI does that `init` does not turn into a command, and why."""

    what: str
    why: str
    # a lint command that does it (CI runs it: then it is not left out)
    done_by: re.Pattern[str] | None = field(default=None, compare=False)


@dataclass
class CiRuns:
    lines: list[CiLine]
    left_out: list[LeftOut]


def ci_workflows(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """The repository's own workflows that run on pushes or pull requests: (name, document).
    A workflow without `name:` is called by its path, as GitHub does."""
    return [(name, doc) for name, _, doc in _workflow_files(root)]


def ci_runs(root: Path) -> CiRuns:
    runs = CiRuns([], [])
    for _, path, doc in _workflow_files(root):
        jobs = doc.get("jobs")
        env = _plain_env(doc.get("env"), {})
        for job_id, job in jobs.items() if isinstance(jobs, dict) else []:
            if isinstance(job, dict):
                _job(runs, f".github/workflows/{path.name}", str(job_id), job, env)
    return runs


def _workflow_files(root: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    found = []
    folder = root / ".github" / "workflows"
    for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]):
        if path.name.startswith("codegen-"):
            continue
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(doc, dict):
            continue
        if _runs_on_changes(doc.get("on", doc.get(True))):  # YAML 1.1 reads `on` as true
            name = doc.get("name")
            label = name if isinstance(name, str) else f".github/workflows/{path.name}"
            found.append((label, path, doc))
    return found


def _runs_on_changes(triggers: object) -> bool:
    """Whether a workflow with these `on:` triggers checks changes: it runs on pull requests,
    or on pushes of branches. A push filtered by `tags` alone runs for tags only (GitHub runs
    it for no branch): a release (boltons' publish.yml), whose steps are no check."""
    names = set(triggers) if isinstance(triggers, dict | list) else {triggers}
    if "pull_request" in names:
        return True
    if "push" not in names:
        return False
    push = triggers.get("push") if isinstance(triggers, dict) else None
    if not isinstance(push, dict):
        return True
    return not (push.keys() & {"tags", "tags-ignore"}) or bool(
        push.keys() & {"branches", "branches-ignore"}
    )


def _job(
    runs: CiRuns, workflow: str, job_id: str, job: dict[str, Any], env: dict[str, str]
) -> None:
    where = f"{workflow}, job {job_id}"
    why = _job_cannot_run(job)
    if why:
        runs.left_out.append(LeftOut(f"job {job_id} ({workflow})", why))
        return
    env = _plain_env(job.get("env"), env)
    matrix = _matrix(job)
    defaults = job.get("defaults")
    job_run = defaults.get("run") if isinstance(defaults, dict) else None
    job_dir = _working_directory(job_run)
    job_shell = job_run.get("shell") if isinstance(job_run, dict) else None
    steps = job.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        uses = step.get("uses")
        if isinstance(uses, str):
            check = CHECK_ACTIONS.get(uses.split("@")[0])
            if uses.split("@")[0] in PRE_COMMIT_ACTIONS:
                settings = step.get("with")
                extra = settings.get("extra_args") if isinstance(settings, dict) else None
                extra = extra if isinstance(extra, str) and extra.strip() else "--all-files"
                runs.lines.append(CiLine(f"pre-commit run {extra.strip()}", workflow, job_id))
            elif command := _command_action(uses, step):
                for expanded in _expand(command, matrix):
                    runs.lines.append(CiLine(expanded, workflow, job_id))
            elif check:
                args = (
                    step.get("with", {}).get("args") if isinstance(step.get("with"), dict) else ""
                )
                command = f"{check} {args}".strip() if isinstance(args, str) else check
                runs.lines.append(CiLine(command, workflow, job_id))
            elif not QUIET_ACTIONS.match(uses):
                runs.left_out.append(LeftOut(f"{uses} ({where})", "an action, not a command"))
            continue
        run = step.get("run")
        if not isinstance(run, str):
            continue
        shell = step.get("shell") or job_shell
        if isinstance(shell, str) and not re.match(r"^(?:bash|sh)\b", shell):
            runs.left_out.append(LeftOut(f"{_first_line(run)} ({where})", f"runs in {shell}"))
            continue
        if SECRET.search(str(step.get("env", ""))) or SECRET.search(run):
            runs.left_out.append(LeftOut(f"{_first_line(run)} ({where})", "needs secrets"))
            continue
        folder = _working_directory(step) or job_dir
        alternatives: list[str] = []
        for line in _lines(run, folder, _plain_env(step.get("env"), env), alternatives):
            for expanded in _expand(line, matrix):
                if EXPRESSION.search(expanded):
                    runs.left_out.append(
                        LeftOut(f"{expanded} ({where})", "uses an expression only CI knows")
                    )
                else:
                    runs.lines.append(CiLine(expanded, workflow, job_id))
        for line in dict.fromkeys(alternatives):
            why = "a branch of an `if` whose `else` is taken (CI runs one of the two)"
            runs.left_out.append(LeftOut(f"{line} ({where})", why))


def _command_action(uses: str, step: dict[str, Any]) -> str | None:
    """The shell line a `COMMAND_ACTIONS` step runs (`cargo clippy --no-default-features`);
    None for any other step, or one whose `with: command` is missing."""
    tool = COMMAND_ACTIONS.get(uses.split("@")[0])
    settings = step.get("with")
    if tool is None or not isinstance(settings, dict):
        return None
    command, args = settings.get("command"), settings.get("args", "")
    if not isinstance(command, str) or not command.strip():
        return None
    return " ".join(part for part in (tool, command.strip(), str(args or "").strip()) if part)


def _job_cannot_run(job: dict[str, Any]) -> str | None:
    if job.get("services"):
        services = job["services"]
        names = ", ".join(services) if isinstance(services, dict) else "services"
        return f"needs services ({names})"
    if job.get("environment"):
        return "a deployment job (environment)"
    runs_on = job.get("runs-on")
    if isinstance(runs_on, str) and re.search(r"windows|macos", runs_on, re.I):
        return f"runs on {runs_on}"
    if SECRET.search(str(job.get("env", ""))):
        return "needs secrets"
    return None


def _working_directory(settings: Any) -> str | None:
    if not isinstance(settings, dict):
        return None
    folder = settings.get("working-directory")
    if isinstance(folder, str) and folder.strip() not in ("", ".", "./"):
        return folder.strip().removeprefix("./").rstrip("/")
    return None


@dataclass(frozen=True)
class Matrix:
    """A job's `strategy.matrix`: its lists of plain values by key, and its `include:` entries
    (each one job of its own: `{python-version: "3.11", session: "mypy"}`)."""

    lists: dict[str, list[str]]
    include: list[dict[str, str]]


def _matrix(job: dict[str, Any]) -> Matrix:
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return Matrix({}, [])
    lists = {
        str(key): [str(v) for v in values]
        for key, values in matrix.items()
        if isinstance(values, list) and all(isinstance(v, str | int | float) for v in values)
    }
    entries = matrix.get("include")
    include = [
        {str(k): str(v) for k, v in entry.items() if isinstance(v, str | int | float)}
        for entry in (entries if isinstance(entries, list) else [])
        if isinstance(entry, dict)
    ]
    return Matrix(lists, include)


def _expand(line: str, matrix: Matrix) -> list[str]:
    """`line` once for each combination of the matrix values it names: the product of the
    lists, then each `include:` entry that gives every one (tox -e ${{ matrix.session }} over
    a matrix of `include:` entries only: one line per session); `line` as it is when a value
    it names is in neither."""
    keys = list(dict.fromkeys(MATRIX_REF.findall(line)))
    if not keys:
        return [line]
    combos: list[tuple[str, ...]] = []
    if all(k in matrix.lists for k in keys):
        combos += itertools.islice(itertools.product(*(matrix.lists[k] for k in keys)), MAX_MATRIX)
    combos += [tuple(e[k] for k in keys) for e in matrix.include if all(k in e for k in keys)]
    if not combos:
        return [line]
    lines = []
    for values in combos[:MAX_MATRIX]:
        chosen = dict(zip(keys, values, strict=True))
        lines.append(MATRIX_REF.sub(functools.partial(_value, chosen), line))
    return list(dict.fromkeys(lines))


def _value(chosen: dict[str, str], match: re.Match[str]) -> str:
    return chosen[match[1]]


def _plain_env(settings: Any, outer: dict[str, str]) -> dict[str, str]:
    """`outer` with an `env:` mapping's values on top: those a shell line can hold as they
    are (no expression only CI evaluates, no quote or `$` of their own); a variable whose value
    is not such is dropped (its lines keep `$NAME`)."""
    env = dict(outer)
    for name, value in settings.items() if isinstance(settings, dict) else []:
        text = str(value) if isinstance(value, str | int | float) else None
        if text is not None and not re.search(r"[$`\\\"'\n]", text):
            env[str(name)] = text
        else:
            env.pop(str(name), None)
    return env


def _resolved(line: str, variables: dict[str, str]) -> str:
    """`$NAME`, `${NAME}` and `${{ env.NAME }}` written out where `variables` knows NAME."""
    line = ENV_REF.sub(lambda m: variables.get(m[1], m[0]), line)
    return SHELL_REF.sub(lambda m: variables.get(m[1] or m[2], m[0]), line)


# A shell `if` over lines of its own: `if COND; then` (or `if COND` then `then`), `elif COND;
# then`, `else`, `fi`. Its branches are alternatives: CI runs one of them.
IF_OPEN = re.compile(r"^if\s.*?(?:;\s*then)?$")
ELIF = re.compile(r"^elif\s.*?(?:;\s*then)?$")


@dataclass
class _IfBlock:
    branches: list[list[str]] = field(default_factory=lambda: [[]])
    has_else: bool = False


def _lines(
    script: str,
    folder: str | None,
    env: dict[str, str] | None = None,
    alternatives: list[str] | None = None,
) -> list[str]:
    """The commands of a `run:` script, each with the folder it runs in put in front and the
    variables `env` and the script's own assignments set written out. Of an `if` with an
    `else`, the `else` branch (the general case: vary's `if npm ls nyc; then npm run test-ci;
    else npm test; fi` is one test run either way, not two); the other branches' commands go
    to `alternatives`."""
    joined = re.sub(r"[ \t]*\\\n\s*", " ", script)
    variables = dict(env or {})
    commands: list[str] = []
    blocks: list[_IfBlock] = []

    def add(command: str) -> None:
        (blocks[-1].branches[-1] if blocks else commands).append(command)

    for raw in joined.splitlines():
        stripped = raw.strip()
        if IF_OPEN.match(stripped) and not re.search(r";\s*fi$", stripped):
            blocks.append(_IfBlock())
            continue
        if blocks and (stripped in ("then", "else") or ELIF.match(stripped)):
            if stripped != "then":
                blocks[-1].branches.append([])
                blocks[-1].has_else = stripped == "else"
            continue
        if blocks and stripped == "fi":
            done = blocks.pop()
            if done.has_else:
                kept = done.branches[-1]
                if alternatives is not None:
                    alternatives += [c for branch in done.branches[:-1] for c in branch]
            else:
                kept = [c for branch in done.branches for c in branch]
            for command in kept:
                add(command)
            continue
        line = _resolved(stripped, variables)
        if assignment := ASSIGNMENT.match(line):
            value = assignment[2]
            if value[:1] in ("'", '"'):
                value = value[1:-1]
            variables[assignment[1]] = value
            continue
        if not line or NOISE.match(line):
            continue
        for part in _and_parts(line):
            cd = CD.match(part)
            if cd:
                target = cd[1].strip("'\"").removeprefix("./").rstrip("/")
                folder = (
                    None
                    if target in ("", ".", "$GITHUB_WORKSPACE")
                    else (f"{folder}/{target}" if folder else target)
                )
                continue
            part = WORKSPACE_TOOL.sub(r"\1", part)  # here it is on PATH, or init names it
            add(f"cd {folder} && {part}" if folder else part)
    for block in reversed(blocks):  # an `if` never closed: every branch, as written
        commands += [c for branch in block.branches for c in branch]
    return commands


def _and_parts(line: str) -> list[str]:
    """`a && b` -> [a, b], unless a quote makes the split uncertain."""
    if "'" in line or '"' in line or "&&" not in line:
        return [line]
    return [part.strip() for part in line.split("&&") if part.strip()]


def _first_line(script: str) -> str:
    return next((line.strip() for line in script.splitlines() if line.strip()), script)
