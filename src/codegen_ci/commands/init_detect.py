"""Guess a repository's own test and lint commands, for `codegen-ci init`.

What the repository's CI runs decides (`_follow_ci`: the workflows' lines from `init_ci.py`,
judged and written in their explicit form by `init_checks.py`): every check CI runs becomes a
command, and a check only the build files suggest is left out, with the reason. The build
files fill in what CI does not say, and everything when there is no CI: every ecosystem found
contributes (a Python backend with a Node frontend gets both test commands); Makefile targets
are used only for a kind nothing else provided, since they usually wrap the same tools. Setup
commands are suggestions: `init` writes them commented out, because a local run's setup would
install into the user's own environment.

Where the build files name no runner, the test commands come from elsewhere: unittest suites
(run through pytest when pytest is installed and can collect them, for JUnit), tests inside
the package (`pkg/tests/`), tox's environments (`init_tox.py`) and nox's sessions. Python
commands name the interpreter (`init_env.py`), and a src layout gets `PYTHONPATH=src`, unless
the package imports only once installed (a version file the build writes, the version read
from the installed metadata): init then says to install it. Node projects are `init_node.py`'s.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from codegen_ci import runners
from codegen_ci.commands.init_checks import (
    DIR_PREFIX,
    INSTALL,
    PIPED_INSTALL,
    CheckKind,
    bare,
    explicit,
    folder_of,
    judge,
    seen_from,
)
from codegen_ci.commands.init_ci import CiLine, LeftOut, ci_runs, ci_workflows
from codegen_ci.commands.init_env import Toolchain, missing_tool, toolchain
from codegen_ci.commands.init_install import REQUIREMENT_NAME, declared
from codegen_ci.commands.init_make import unfold
from codegen_ci.commands.init_node import NodeProject, node_project, run_elsewhere, runner_in_ci
from codegen_ci.commands.init_nox import nox_sessions, sessions_named
from codegen_ci.commands.init_precommit import hooks
from codegen_ci.commands.init_tox import tox_envs
from codegen_ci.runners import RUNNERS, InitAsk, InitJUnit, InitTests, TestRunner, pytest, unittest
from codegen_ci.runners.unittest import junit_command as unittest_junit_command
from codegen_ci.workspace import generated_files

__all__ = ["Detected", "ci_workflows", "detect"]


def _marked(root: Path, runner: TestRunner) -> bool:
    """Whether a file at the root says the repository uses `runner` (its `MARKERS`)."""
    return any((root / marker).is_file() for marker in runner.MARKERS)


def _init(runner: TestRunner) -> InitJUnit:
    assert runner.INIT is not None
    return runner.INIT


# What init writes for each runner's JUnit is the runner's (runners/: `INIT`, `ci_tests`).
PYTEST_REPORT = _init(pytest).report
MAKE_TARGET = re.compile(r"^(tests?|check|unittest|lint|style)\s*::?(?!=)", re.M)
# Test files pytest collects by default; unittest discovers `test*.py`.
PYTEST_FILE = re.compile(r"^(?:test_.*|.*_test)\.py$")
PYTEST_FUNCTION = re.compile(r"^\s*(?:async\s+)?def test_?\w*\s*\(", re.M)
UNITTEST_IMPORT = unittest.TEST_FILE_IMPORT
TEST_DIRS = ("tests", "test", "testing")
MAX_FILES = 200
NPM_TEST = re.compile(r"^(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test$")
TOX = re.compile(r"^tox\b(.*)$")
NOX = re.compile(r"^(?:python3?\s+-m\s+)?nox\b(.*)$")
PYTEST_RUN = re.compile(r"-m pytest\b")
# `pip install tox tox-gh-actions`: an install of tox and its plugins only
TOX_INSTALL = re.compile(
    r"\binstall(?:\s+-\S+)*(?:\s+['\"]?tox(?:-[\w-]+)?(?:[<>=~!][^\s'\"]*)?['\"]?)+\s*$"
)
KINDS = ("test", "lint")
TASK_RUNNERS = {"npm", "pnpm", "yarn", "bun", "npx", "make", "just", "tox", "nox", "cargo"}


@dataclass
class Detected:
    test: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)  # "pyproject.toml (pytest, ruff)"
    junit: list[str] = field(default_factory=list)  # reports the test commands write
    install: list[str] = field(default_factory=list)  # a workflow's install step
    ecosystems: list[str] = field(default_factory=list)  # python, node, go, rust
    node: NodeProject | None = None
    origins: dict[str, str] = field(default_factory=dict)  # command -> "from tox.ini, env lint"
    left_out: list[LeftOut] = field(default_factory=list)  # what init did not write, and why
    missing: list[tuple[str, str]] = field(default_factory=list)  # (tool, how to install it)
    ci_installs: list[CiLine] = field(default_factory=list)  # CI's install lines, for `missing`
    notes: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # further files to write: path -> text
    network: list[str] = field(default_factory=list)  # kinds of command that must download
    added: list[tuple[str, list[str]]] = field(default_factory=list)  # (source, its tools)
    # a tool named by the commands it wrote (tox's envs): named while one of them is written
    tool_commands: dict[str, list[str]] = field(default_factory=dict)

    def add(self, source: str, tools: Iterable[str], **commands: list[str]) -> None:
        names = list(tools)
        self.added.append((source, names))
        self.found.append(f"{source} ({', '.join(names)})" if names else source)
        for kind, values in commands.items():
            getattr(self, kind).extend(values)
            if kind in ("test", "lint"):
                for value in values:
                    self.origins.setdefault(value, f"from {source}")


def detect(root: Path) -> Detected:
    found = Detected()
    tools = toolchain(root)
    _python(root, found, tools)
    _node(root, found)
    for runner in RUNNERS.values():
        _marked_tests(root, found, tools, runner)
    _makefile(root, found)
    _follow_ci(root, found, tools)
    _src_layout(root, found, tools)
    found.lint = list(dict.fromkeys(found.lint))
    # `pytest -q test.py` from one workflow and `pytest test.py` from tox: one suite, run once
    found.test = list({_quiet(c): c for c in reversed(found.test)}.values())[::-1]
    _pytest_junit(found)
    written = {bare(c) for c in [*found.lint, *found.test]}
    found.left_out = [
        item
        for item in dict.fromkeys(found.left_out)
        if not any(item.what == w or w.endswith(f"-m {item.what}") for w in written)
    ]
    _once_each(root, found)
    _tools_written(found)
    for kind in ("lint", "test"):
        if any(bare(c).startswith("tox") for c in getattr(found, kind)):
            # tox builds each environment's virtualenv from downloads
            found.network.append(kind)
            found.notes.append(
                f"a {kind} command runs tox itself, which downloads each environment's "
                f"dependencies: validation.network lets {kind} commands use the network"
            )
    for command in [*found.lint, *found.test]:
        gap = missing_tool(command, tools, found.ci_installs, found.origins.get(command, ""))
        if gap and gap not in found.missing:
            found.missing.append(gap)
    return found


def _pytest_junit(found: Detected) -> None:
    """Explicit JUnit globs turn off pytest's automatic report: each pytest command names its
    own (one report each, so two commands do not overwrite one file)."""
    if not found.junit:
        return
    n = 0
    for i, command in enumerate(found.test):
        if PYTEST_RUN.search(command) and "--junitxml" not in command and "&&" not in bare(command):
            n += 1
            report = PYTEST_REPORT if n == 1 else PYTEST_REPORT.replace(".xml", f"-{n}.xml")
            found.test[i] = f"{command} --junitxml={report}"
            found.origins[found.test[i]] = found.origins.get(command, "")
            found.junit.append(report)


def _marked_tests(root: Path, found: Detected, tools: Toolchain, runner: TestRunner) -> None:
    """What a runner writes for a repository its root file marks (its `marked_tests`: go.mod's
    gotestsum and go vet, Cargo.toml's nextest or `cargo test`), with the checks it leaves out
    unless CI runs them (clippy)."""
    if not _marked(root, runner):
        return
    tests = runner.marked_tests(_init_ask(root, tools))
    if tests is None:
        return
    _init_tests(found, tests)
    found.add(
        runner.MARKERS[0],
        tests.tools,
        test=list(tests.test),
        lint=list(tests.lint),
        setup=list(tests.setup),
        install=list(tests.setup),
        junit=list(tests.junit),
    )
    found.left_out.extend(LeftOut(o.what, o.why, o.done_by) for o in tests.left_out)
    found.ecosystems.append(tests.ecosystem)


def _init_ask(root: Path, tools: Toolchain) -> InitAsk:
    """What a runner's init answers may look at: the repository's files, the user's PATH."""

    def read(rel: str) -> str | None:
        path = root / rel
        return _text(path) if path.is_file() else None

    return InitAsk(read=read, installed=tools.has_command, environ=os.environ)


def _init_tests(found: Detected, tests: InitTests) -> InitTests:
    """A runner's notes and files taken into `found` (each note once); its tests returned."""
    found.notes.extend(n for n in tests.notes if n not in found.notes)
    found.files.update(tests.files)
    return tests


# -- what CI runs -----------------------------------------------------------------------------


def _follow_ci(root: Path, found: Detected, tools: Toolchain) -> None:
    """The checks of the repository's CI replace the build files' guesses: each CI line that is
    a test or lint becomes a command (in its explicit, checking form), and a check CI does not
    run is left out. Only when CI runs no test at all do the build files' tests stay (the gate
    needs tests); when CI runs no recognisable check, nothing changes."""
    runs = ci_runs(root)
    found.left_out.extend(runs.left_out)
    scripts = _scripts(root)
    checks: list[tuple[CheckKind, str, str]] = []
    setup: list[tuple[str, str]] = []  # (command, the job's origin)
    for line in _make_unfolded(root, runs.lines, found, tools):
        if INSTALL.match(bare(line.command)) or PIPED_INSTALL.search(line.command):
            found.ci_installs.append(line)
        package = _package_json(root, line.command)
        here = scripts if package == root / "package.json" else _scripts(package.parent)
        judged = judge(line.command, here, tools.venv_in_repo, package=package.is_file())
        if judged.kind is None:
            found.left_out.append(
                LeftOut(f"{line.command} ({line.origin.removeprefix('from ')})", judged.why)
            )
        elif judged.kind == "setup":
            setup.append((explicit(line.command, tools.python), line.origin))
        else:
            checks.extend(_as_commands(root, found, tools, judged.kind, line))
    if not checks:
        return
    tests = [(c, o) for kind, c, o in checks if kind == "test"]
    lints = [(c, o) for kind, c, o in checks if kind == "lint"]
    for command in found.lint:
        if _script_call(command) not in [_script_call(c) for c, _ in lints]:
            found.left_out.append(LeftOut(command, "the repository's CI does not run it"))
    found.lint = list(dict.fromkeys(c for c, _ in lints))
    if tests:
        ran = [_program(c) for c, _ in tests]
        for command in found.test:
            if _program(command) and _program(command) in ran:
                continue  # init's guess of the same runner, replaced by how CI runs it
            if _script_call(command) not in [_script_call(c) for c, _ in tests]:
                found.left_out.append(
                    LeftOut(command, "the repository's CI runs its tests otherwise")
                )
        found.test = list(dict.fromkeys(c for c, _ in tests))
    else:
        found.notes.append(
            "the CI workflows run no test command init recognises: the build files' tests are kept"
        )
    found.left_out = [
        item
        for item in found.left_out
        if not (item.done_by and any(item.done_by.search(c) for c in found.lint))
    ]
    first: dict[str, str] = {}  # a command several jobs run came from the first of them
    for command, origin in [*tests, *lints]:
        first.setdefault(command, origin)
    found.origins.update(first)
    written = " ".join(found.test)
    configured = _configured_reports(root, found, tools)
    found.junit = [
        g for g in found.junit if g in written or g in configured or _from_folder(g, written)
    ]
    kept = _setup_for(setup, {origin for _, _, origin in checks}, [*found.lint, *found.test])
    if found.node is not None:  # CI's `npm install` beside the lockfile's `npm ci`: one install
        node, origins = found.node, dict(reversed(setup))
        instead = f"init installs the dependencies with `{node.install[0]}`" + (
            f" ({node.lockfile})" if node.lockfile else ""
        )
        found.left_out.extend(
            LeftOut(f"{c} ({origins[c].removeprefix('from ')})", instead)
            for c in kept
            if node.installs_otherwise(c)
        )
        kept = [c for c in kept if not node.installs_otherwise(c)]
    found.setup = list(dict.fromkeys([*kept, *found.setup])) if kept else found.setup
    sources = dict.fromkeys(origin.split(",")[0].removeprefix("from ") for _, _, origin in checks)
    found.found.append(f"{', '.join(sources)} (the checks CI runs)")


def _configured_reports(root: Path, found: Detected, tools: Toolchain) -> set[str]:
    """The reports the test commands write because the repository's config asks it (nextest's
    profile), the files init writes (`found.files`) read as written."""
    read = _init_ask(root, tools).read

    def with_files(rel: str) -> str | None:
        return found.files[rel] if rel in found.files else read(rel)

    return {r for c in found.test for r in runners.configured_reports(c, {}, with_files)}


def _from_folder(glob: str, written: str) -> bool:
    """A report a command run from a folder writes (`cd arc && gotestsum --junitfile
    reports/junit-go.xml`: `arc/reports/junit-go.xml`)."""
    return any(
        glob.startswith(f"{folder}/") and glob[len(folder) + 1 :] in written
        for folder in re.findall(r"\bcd\s+(\S+)\s+&&", written)
    )


def _tests_in(
    root: Path, found: Detected, tools: Toolchain, command: str, prefix: str
) -> list[str]:
    """`cd arc && go test ARGS` in a folder that is a project of its own (a runner's marker
    there: hashicorp/golang-lru's `arc/go.mod`): the runner's own form of the line, run from
    the folder, its report under the folder (`arc/reports/junit-go.xml`), so its tests are
    named and counted as the root's are; nothing for anything else."""
    folder = PurePosixPath(prefix.split()[1])
    sub = root / folder
    if folder.is_absolute() or ".." in folder.parts or not sub.is_dir():
        return []
    body = command[len(prefix) :].strip()
    ran = runners.ci_tests(body, _init_ask(sub, tools), lambda r: _marked(sub, r))
    if ran is None:
        return []
    found.notes.extend(n for n in ran.notes if n not in found.notes)
    found.files.update({f"{folder.as_posix()}/{rel}": text for rel, text in ran.files.items()})
    reports = (f"{folder.as_posix()}/{report}" for report in ran.junit)
    found.junit.extend(g for g in reports if g not in found.junit)
    return [f"{prefix}{c}" for c in ran.test]


def _make_unfolded(
    root: Path, lines: list[CiLine], found: Detected, tools: Toolchain
) -> list[CiLine]:
    """CI's lines with each `make target ...` replaced by the lines its targets run
    (`init_make.py`), and each `pre-commit run` by its hooks' tools (`init_precommit.py`),
    when one of those is a test or lint; else the line stays as written."""
    out: list[CiLine] = []
    for line in lines:
        body = bare(line.command)
        left_out: list[tuple[str, str]] = []
        recipe: list[CiLine] = []
        if DIR_PREFIX.match(line.command):
            pass
        elif unfolded := unfold(root, body):
            recipe = [
                CiLine(r.command, line.workflow, f"{line.job}, Makefile target {r.target}")
                for r in unfolded.lines
            ]
            left_out = unfolded.left_out
        elif hooked := hooks(root, body):
            recipe = [
                CiLine(c, line.workflow, f"{line.job}, pre-commit hook {hook}")
                for c, hook in hooked.commands
            ]
            left_out = [(f"pre-commit hook {hook}", why) for hook, why in hooked.left_out]
        checks = [r for r in recipe if judge(r.command, {}, tools.venv_in_repo).kind in KINDS]
        if not checks:
            out.append(line)
            continue
        out.extend(recipe)
        found.left_out.extend(
            LeftOut(f"{what} ({line.origin.removeprefix('from ')})", why) for what, why in left_out
        )
    return out


def _setup_for(setup: list[tuple[str, str]], origins: set[str], written: list[str]) -> list[str]:
    """CI's install lines for the commands written: those of a job a check came from (a
    release job's `pip install build twine` is not), less an install of tox when no command
    runs tox (its environments were unfolded)."""
    jobs = {origin.split(": ", 1)[0] for origin in origins}
    runs_tox = any(bare(c).startswith("tox") for c in written)
    return [
        command
        for command, job in setup
        if job in jobs and (runs_tox or not TOX_INSTALL.search(command))
    ]


def _as_commands(
    root: Path, found: Detected, tools: Toolchain, kind: CheckKind, line: CiLine
) -> list[tuple[CheckKind, str, str]]:
    """A CI line as the commands init writes: `npm test` as the test script's JUnit commands,
    `go test` through gotestsum, `cargo test` through nextest, `tox` as its environments'
    commands, `nox` as its sessions'; anything else in its explicit form."""
    origin = f"{line.origin}: {line.command}"
    body = bare(line.command)
    if folder := DIR_PREFIX.match(line.command):  # another project's folder: as CI runs it
        if kind == "test" and (inside := _tests_in(root, found, tools, line.command, folder[1])):
            return [("test", c, origin) for c in inside]
        return [(kind, explicit(line.command, tools.python), origin)]
    if NPM_TEST.match(body) and found.node is not None and found.node.test:
        return [("test", c, origin) for c in found.node.test]
    if kind == "test" and found.node is not None and (runner := runner_in_ci(root, body)):
        found.junit.extend(g for g in runner.junit if g not in found.junit)
        found.setup.extend(c for c in runner.reporters if c not in found.setup)
        return [("test", c, origin) for c in runner.test]
    ask = _init_ask(root, tools)
    if (ran := runners.ci_tests(body, ask, lambda r: _marked(root, r))) is not None:
        tests = _init_tests(found, ran)  # go test through gotestsum, cargo test through nextest
        found.junit.extend(g for g in tests.junit if g not in found.junit)
        return [("test", c, origin) for c in tests.test]
    if tox := TOX.match(body):
        envs = _tox_envs_named(tox[1])
        unfolded = tox_envs(root, envs, lambda: tools.python_factor)
        found.left_out.extend(unfolded.left_out)
        if unfolded.commands:
            return [
                (env_kind, explicit(c, tools.python), f"{origin} (env {env} of {unfolded.source})")
                for env_kind, c, env in unfolded.commands
            ]
    if nox := NOX.match(body):
        named, posargs = sessions_named(nox[1])
        sessions = nox_sessions(root, named, posargs)
        found.left_out.extend(sessions.left_out)
        if sessions.source is not None:  # each session's commands; each one left out is said
            return [
                (s_kind, explicit(c, tools.python), f"{origin} (session {s} of {sessions.source})")
                for s_kind, c, s in sessions.commands
            ]
    script = re.match(r"^python3?\s+(\S+\.py)$", body)
    if (
        kind == "test"
        and script
        and UNITTEST_IMPORT.search(_text(root / script[1]))
        and tools.has_module("pytest")
    ):
        # a unittest module run as a script: through pytest, for JUnit and test counts
        return [("test", f"{tools.python} -m pytest -q {script[1]}", origin)]
    return [(kind, explicit(line.command, tools.python), origin)]


def _program(command: str) -> str:
    """The test runner a command runs: `gotestsum`, `pytest` (of `python -m pytest`); ""
    for a script a package manager or task runner names (`pnpm run test`, `make test`): the
    repository's own, not a runner init chose."""
    words = bare(command).split() or [""]
    if "-m" in words[:-1]:
        return words[words.index("-m") + 1]
    program = words[0].rsplit("/", 1)[-1]
    return "" if program in TASK_RUNNERS else program


def _once_each(root: Path, found: Detected) -> None:
    """A check another written command runs too (through package.json's scripts) is written
    once: tj/commander.js's `npm test` ends `&& npm run check:type:ts`, which CI's `npm run
    check` runs as well."""
    for command, other in run_elsewhere(root, [*found.lint, *found.test]).items():
        if found.test == [command]:
            continue  # the gate needs a test command
        found.lint = [c for c in found.lint if c != command]
        found.test = [c for c in found.test if c != command]
        found.left_out.append(LeftOut(command, f"`{other}` runs it too"))


def _tools_written(found: Detected) -> None:
    """`Detected: go.mod (gotestsum, go vet)` names no tool whose every command was left out,
    and no source whose tools all wrote commands none of which is written (tox's envs, when
    CI's own commands replaced them)."""
    written = " ".join([*found.lint, *found.test, *found.setup])
    gone = " ".join(item.what for item in found.left_out)
    kept_commands = {_quiet(_script_call(c)) for c in [*found.lint, *found.test]}

    def still_written(tool: str) -> bool:
        if (commands := found.tool_commands.get(tool)) is not None:
            return any(_quiet(_script_call(c)) in kept_commands for c in commands)
        return tool in written or tool not in gone

    for n, (source, names) in enumerate(found.added):
        kept = [t for t in names if still_written(t)]
        if kept != names:
            entry = f"{source} ({', '.join(names)})"
            dropped = not kept and all(t in found.tool_commands for t in names)
            found.found = [
                (f"{source} ({', '.join(kept)})" if kept else source) if f == entry else f
                for f in found.found
                if f != entry or not dropped
            ]
            found.added[n] = (source, kept)


def _quiet(command: str) -> str:
    return re.sub(r"\s-(?:q+|v+)(?=\s|$)", "", command)


def _script_call(command: str) -> str:
    """`pnpm lint` and `pnpm run lint` are one check."""
    return re.sub(r"^(npm|pnpm|yarn|bun)\s+run\s+", r"\1 ", command)


def _tox_envs_named(args: str) -> list[str] | None:
    match = re.search(r"(?:-e|--env)\s*=?\s*(\S+)", args)
    return [e for e in match[1].split(",") if e] if match else None


def _package_json(root: Path, command: str) -> Path:
    """The package.json a CI line's `npm run` reads: the nearest one from the folder it runs in
    (`cd web && ...`) up to the repository's root, as npm finds it; the root's (perhaps absent)
    when there is none."""
    prefix = DIR_PREFIX.match(command)
    folder = (root / prefix[1].split()[1]).resolve() if prefix else root
    top = root.resolve()
    while folder != top and folder.is_relative_to(top):
        if (folder / "package.json").is_file():
            return folder / "package.json"
        folder = folder.parent
    return root / "package.json"


def _scripts(root: Path) -> dict[str, str]:
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    scripts = package.get("scripts") if isinstance(package, dict) else None
    return {str(k): str(v) for k, v in scripts.items()} if isinstance(scripts, dict) else {}


def _src_layout(root: Path, found: Detected, tools: Toolchain) -> None:
    """A package under `src/` is importable in the worktree only when installed or on the path:
    `PYTHONPATH=src` in front of the Python test commands needs no install (and no network);
    nothing when pytest's `pythonpath` or an editable install in the repository's venv does it."""
    src = root / "src"
    if "python" not in found.ecosystems or not src.is_dir():
        return
    if not any((p / "__init__.py").is_file() for p in src.iterdir() if p.is_dir()) and not any(
        src.glob("*.py")
    ):
        return
    options = _table(_toml(root / "pyproject.toml"), "tool", "pytest", "ini_options")
    if "src" in str(options.get("pythonpath", "")) or "pythonpath" in _text(root / "pytest.ini"):
        return
    if tools.venv_in_repo and _editable_install(root, tools):
        found.notes.append(
            "src layout: the repository's venv has the project installed in editable mode "
            "(the worktree's copy imports the worktree's code)"
        )
        return
    if needs := _install_needed(root, src):
        found.notes.append(
            f"src layout: {needs}, so PYTHONPATH=src does not make the package importable; "
            "installing the project does: `pip install -e .` with the interpreter the test "
            f"commands use ({tools.python}), in the workflow before the run or in "
            "validation.setup (with `network: [setup]`); codegen-ci copies the version file "
            "the build wrote into each worktree"
        )
        return
    changed = False
    for i, command in enumerate(found.test):
        words = bare(command).split()
        if (
            words
            and (words[0] in (tools.python, "python", "python3"))
            and "PYTHONPATH=" not in command
        ):
            prefix = DIR_PREFIX.match(command)
            head = prefix[1] if prefix else ""
            src_here = seen_from(folder_of(command), "src/")  # `cd tests && …`: ../src
            found.test[i] = f"{head}PYTHONPATH={src_here.rstrip('/')} {command[len(head) :]}"
            found.origins[found.test[i]] = found.origins.pop(command, "")
            changed = True
    if changed:
        found.notes.append(
            "src layout: PYTHONPATH=src in front of the Python test commands makes the package "
            "importable in the worktree without installing it (no network needed); "
            "`pip install -e .` into a venv in the repository would do it too"
        )


def _install_needed(root: Path, src: Path) -> str | None:
    """Why the package under `src/` imports only once installed, or None: the build writes a
    file into it that the package imports (a version file pyproject.toml names), or it reads
    its version from the installed metadata."""
    written = [rel for rel in generated_files.declared(root) if rel.startswith("src/")]
    if written:
        return f"the build writes {', '.join(written)} (pyproject.toml), which the package imports"
    for init in sorted(src.glob("*/__init__.py"))[:20]:
        text = _text(init)
        if INSTALLED_VERSION.search(text):
            rel = init.relative_to(root).as_posix()
            return f"{rel} reads its version from the installed metadata (importlib.metadata)"
    return None


INSTALLED_VERSION = re.compile(r"^\s*__version__\s*(?::\s*str\s*)?=\s*(?:[\w.]*\.)?version\(", re.M)


def _editable_install(root: Path, tools: Toolchain) -> bool:
    venv = (root / tools.python).parent.parent
    for pth in venv.glob("lib/python*/site-packages/*.pth"):
        text = _text(pth)
        if pth.name.startswith("__editable__") or str(root / "src") in text:
            return True
    return False


def _python(root: Path, found: Detected, env: Toolchain) -> None:
    pyproject = _toml(root / "pyproject.toml")
    tool = _table(pyproject, "tool")
    ini = _ini_sections(root, "setup.cfg", "tox.ini", "pytest.ini", "mypy.ini", ".flake8")
    deps = _python_requirements(root)
    py = env.python
    suite = unittest_suite(root, lambda: "pytest" in deps or env.has_module("pytest"))
    plain = pytest_files(root)
    tox = tox_envs(root, prefer=lambda: env.python_factor)
    if not (pyproject or ini or (root / "setup.py").is_file() or deps or suite or plain):
        return
    tools, test, lint = [], [], []
    if tox.commands:
        # tox names the project's own checks, paths and options: its commands, unfolded
        found.left_out.extend(tox.left_out)
        envs = list(dict.fromkeys(name for _, _, name in tox.commands))
        label = f"tox envs {', '.join(envs)}, unfolded"
        found.add(str(tox.source), [label])
        for kind, command, name in tox.commands:
            written = explicit(command, py)
            getattr(found, kind).append(written)
            found.origins.setdefault(written, f"from {tox.source}, env {name}")
            found.tool_commands.setdefault(label, []).append(written)
    if any(kind == "test" for kind, _, _ in tox.commands):
        pass  # tox's test environments are the tests
    elif (
        "pytest" in tool
        or {"pytest", "tool:pytest"} & ini
        or "pytest" in deps
        or (root / "conftest.py").is_file()
    ):
        tools.append("pytest")
        test.append(f"{py} -m pytest -q")
    elif suite:
        command, through_pytest = suite
        tools.append("unittest suite, run through pytest" if through_pytest else "unittest")
        written = command.replace("python ", f"{py} ", 1)
        test.append(written)
        # a plain `python -m unittest` writes JUnit through codegen-ci's runner all the same
        counted = unittest_junit_command(written) is not None
        if not through_pytest and not counted and not env.has_module("pytest"):
            found.notes.append(
                f"pytest is not installed for {py}: the unittest suite runs through unittest, "
                f"which writes no JUnit, so test counts stay unknown (install pytest: {py} -m "
                "pip install pytest, and run init again)"
            )
    elif nox := nox_commands(root):
        tools.append("noxfile's pytest session")
        test.extend(c.replace("python ", f"{py} ", 1) for c in nox)
    elif plain:
        tools.append("pytest-style test files")
        test.append(plain.replace("python ", f"{py} ", 1))
    if (
        "ruff" in tool
        or "ruff" in deps
        or any((root / n).is_file() for n in ("ruff.toml", ".ruff.toml"))
    ):
        tools.append("ruff")
        lint.append(explicit("ruff check .", py))
    if "flake8" in ini or "flake8" in deps:
        tools.append("flake8")
        lint.append(explicit("flake8", py))
    if "mypy" in tool or "mypy" in ini or "mypy" in deps:
        if "mypy" in deps or (env.venv_in_repo and env.has_module("mypy")):
            tools.append("mypy")
            lint.append(explicit("mypy" if "files" in _table(tool, "mypy") else "mypy .", py))
        else:
            found.left_out.append(LeftOut("mypy", "configured, but no requirement installs it"))
    extras = _table(pyproject, "project", "optional-dependencies")
    extra = next((e for e in ("test", "tests", "dev") if e in extras), None)
    pip = env.pip_install
    setup = [f"{pip} -e '.[{extra}]'" if extra else f"{pip} -e ."]
    if (root / "uv.lock").is_file() and env.venv_in_repo:
        setup = ["uv sync --locked"]  # the project and its default groups, as its users do
    if any("pytest" in t for t in test) and "pytest" not in deps:
        setup.append(f"{pip} pytest")  # runs the unittest suite, writes JUnit
    source = "pyproject.toml" if pyproject else "Python project"
    found.add(source, tools, test=test, lint=lint, setup=setup, install=setup)
    found.ecosystems.append("python")
    if env.python_origin:
        found.notes.append(f"Python commands use {py}, {env.python_origin}")


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _ini_sections(root: Path, *names: str) -> set[str]:
    """Section names of INI-style config files; a `.flake8` or `mypy.ini` counts by itself."""
    sections: set[str] = set()
    for name in names:
        path = root / name
        if not path.is_file():
            continue
        sections |= {"flake8"} if name == ".flake8" else {"mypy"} if name == "mypy.ini" else set()
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        sections |= set(parser.sections())
    return sections


def _python_requirements(root: Path) -> set[str]:
    """Lower-case names of the packages the project declares, in any of the usual places:
    pyproject.toml's dependencies, extras and groups (PEP 735's, Poetry's), and the root's
    requirements files."""
    packages = declared(root)
    names = set(packages.dependencies).union(
        *packages.own_groups.values(), *packages.extras.values(), *packages.poetry.values()
    )
    for req in sorted(root.glob("requirements*.txt")):
        for line in _text(req).splitlines():
            if match := REQUIREMENT_NAME.match(line):
                names.add(match[1].lower().replace("_", "-"))
    return names


def _table(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`config[k1][k2]...`, or an empty table where one is missing or not a table (a
    pyproject.toml init reads is the repository's, whatever its shape)."""
    table: Any = config
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table if isinstance(table, dict) else {}


def _node(root: Path, found: Detected) -> None:
    project = node_project(root)
    if project is None:
        return
    found.add(
        "package.json",
        [project.manager, *project.tools],
        test=project.test,
        lint=project.lint,
        setup=project.install,
        install=project.install,
        junit=project.junit,
    )
    found.ecosystems.append("node")
    found.node = project
    found.tool_commands.update(project.tool_commands)


def _makefile(root: Path, found: Detected) -> None:
    path = next(
        (root / n for n in ("GNUmakefile", "makefile", "Makefile") if (root / n).is_file()), None
    )
    if path is None:
        return
    targets = set(MAKE_TARGET.findall(path.read_text(encoding="utf-8", errors="replace")))
    test_target = next((t for t in ("test", "tests", "check", "unittest") if t in targets), None)
    lint_target = next((t for t in ("lint", "style") if t in targets), None)
    test = [f"make {test_target}"] if test_target and not found.test else []
    lint = [f"make {lint_target}"] if lint_target and not found.lint else []
    if test or lint:
        found.add(path.name, [c.split()[1] + " target" for c in test + lint], test=test, lint=lint)


# -- elsewhere: unittest suites, tox, nox, the CI workflows -------------------------------


def test_folders(root: Path) -> list[str]:
    """Where tests live: the usual top folders, then `tests/` inside a package (`pkg/tests`,
    `src/pkg/tests`)."""
    folders = list(TEST_DIRS)
    for base in (root, root / "src"):
        packages = sorted(base.iterdir()) if base.is_dir() else []
        for package in packages[:MAX_FILES]:
            if package.is_dir() and (package / "__init__.py").is_file():
                folders.extend(
                    (package / name).relative_to(root).as_posix()
                    for name in ("tests", "test")
                    if (package / name).is_dir()
                )
    return folders


def unittest_suite(
    root: Path, pytest_ok: Callable[[], bool] = lambda: True
) -> tuple[str, bool] | None:
    """(test command, through pytest) for a unittest suite under a test folder: pytest when
    it is installed (or declared) and every unittest file is one pytest collects (it then
    writes JUnit), else unittest's own discovery (exit codes only); else unittest modules at
    the top (`test.py`), through pytest."""
    for folder in test_folders(root):
        base = root / folder
        if not base.is_dir():
            continue
        files = [p for p in sorted(base.rglob("test*.py"))[:MAX_FILES] if p.is_file()]
        suites = [p for p in files if UNITTEST_IMPORT.search(_text(p))]
        if not suites:
            continue
        if all(PYTEST_FILE.match(p.name) for p in suites) and pytest_ok():
            return f"python -m pytest -q {folder}", True
        # `-t .` needs the folder to be a package; without it the folder is the top
        top_level = " -t ." if (base / "__init__.py").is_file() else ""
        return f"python -m unittest discover -s {folder}{top_level}", False
    # a unittest module at the top (`test.py`, run as `python test.py` or by coverage): pytest
    # collects a file it is given by name, whatever its name, and writes JUnit for it
    top = [
        p.name
        for p in sorted(root.glob("test*.py"))
        if p.is_file() and UNITTEST_IMPORT.search(_text(p))
    ]
    if top:
        return "python -m pytest -q " + " ".join(top[:20]), True
    return None


def pytest_files(root: Path) -> str | None:
    """A pytest command for plain test files (`test_*.py` or `*_test.py` with a `def test_`
    function) in a test folder or at the top, when nothing else names the runner: such files
    are pytest's by convention, with no configuration at all."""
    for folder in test_folders(root):
        base = root / folder
        if base.is_dir() and any(
            PYTEST_FILE.match(p.name) and PYTEST_FUNCTION.search(_text(p))
            for p in sorted(base.rglob("*.py"))[:MAX_FILES]
            if p.is_file()
        ):
            return f"python -m pytest -q {folder}"
    top = [p for p in sorted(root.glob("*.py"))[:MAX_FILES] if p.is_file()]
    if any(PYTEST_FILE.match(p.name) and PYTEST_FUNCTION.search(_text(p)) for p in top):
        return "python -m pytest -q"
    return None


def nox_commands(root: Path) -> list[str]:
    text = _text(root / "noxfile.py")
    if re.search(r"""session\.run\(\s*["']pytest["']|["']-m["'],\s*["']pytest["']""", text):
        return ["python -m pytest -q"]
    return []


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def explain(found: Detected) -> list[str]:
    """What `init` prints: each command with where it came from, what it left out and why,
    the tools a command needs that are not installed (with how to install them), and notes."""
    lines = []
    for kind in ("lint", "test"):
        for command in getattr(found, kind):
            origin = found.origins.get(command)
            lines.append(f"{kind}: {command}" + (f"  ({origin})" if origin else ""))
    lines.extend(f"left out: {item.what}: {item.why}" for item in found.left_out)
    lines.extend(
        f"missing: {tool} is not installed; install it with: {how}" for tool, how in found.missing
    )
    lines.extend(f"note: {note}" for note in found.notes)
    return lines
