"""`init` for Node: the package manager (by lockfile), its install command, and a test command
that writes JUnit for the runner the `test` script uses (jest + jest-junit, vitest, mocha +
mocha-junit-reporter, node's own runner); other scripts run as they are, without JUnit. A
script that goes on after its runner (`vitest run && npm run test-types`) keeps every part:
each becomes a test command of its own.

Reports are written as `reports/junit-<runner>.xml`: a `junit*.xml` file is a tool artifact
that never enters the commit."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci import runners
from codegen_ci.commands.init_install import node_install

NPM_PLACEHOLDER = "no test specified"  # `npm init` writes a test script that always fails
# A script's runner is its first word, or the first after `&&`/`;` ("tsc && jest"); the rest
# of the script (until the next `&&`) is kept as the runner's arguments. The runners are the
# Node ones of runners/ (their `SCRIPT_WORD`).
_RUNNER = re.compile(
    r"(?:^|&&|;|\|\|)\s*(?:npx\s+|cross-env\s+)?(?P<env>(?:[A-Z_][A-Z0-9_]*=\S*\s+)*)"
    rf"(?:npx\s+)?(?P<runner>{runners.script_words()})\b"
)

_SEPARATOR = re.compile(r"&&|;|\|\|")
# a call of a package.json script from a command or another script (`npm run check:type`,
# `npm test`, `pnpm lint`, `yarn run build`): a name the scripts hold
_SCRIPT_CALL = re.compile(
    r"(?:^|&&|;|\|\||\s)(?:npm|pnpm|yarn|bun)\s+(?:run(?:-script)?\s+)?(?P<name>[\w:.@/-]+)"
)
_EXEC = re.compile(r"^(?:npx|bunx|pnpm\s+exec|yarn\s+exec|yarn)\s+")
LINTER = re.compile(
    r"^(?:npx\s+)?(?:eslint|standard|xo|biome\s+(?:check|lint)|tslint|"
    r"prettier\s+(?:--check|-c)|(?:npm|pnpm|yarn)\s+(?:run\s+)?lint)\b"
)


# An install of the project's dependencies as they are, at the repository's root (no package
# named, no option): what `NodeProject.install` does by the lockfile (`npm ci`)
PLAIN_INSTALL = re.compile(r"^(?:(?:npm|pnpm|bun)\s+(?:install|i)|yarn(?:\s+install)?)\s*$")


@dataclass
class NodeProject:
    manager: str  # npm, pnpm, yarn, bun
    lockfile: str | None
    install: list[str]
    test: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    junit: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    reporters: list[str] = field(default_factory=list)  # installs of undeclared JUnit reporters
    pinned_manager: bool = False  # package.json's "packageManager" names the version
    tool_commands: dict[str, list[str]] = field(default_factory=dict)  # a tool's own commands

    def installs_otherwise(self, command: str) -> bool:
        """`command` (a CI line) installs what `install` does, another way: CI's `npm install`
        where the lockfile gives `npm ci`; setup needs one of them."""
        return bool(PLAIN_INSTALL.match(command.strip())) and command not in self.install


def node_project(root: Path) -> NodeProject | None:
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(package, dict):
        package = {}
    project = _manager(root, package)
    scripts = package.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    deps = _dependencies(package)
    test = scripts.get("test")
    lint_in_test: list[str] = []
    if isinstance(test, str) and NPM_PLACEHOLDER not in test:
        test, lint_in_test = _split_lint(test)
        _test_command(project, test, deps)
    if isinstance(scripts.get("lint"), str):
        project.lint.append(f"{project.manager} run lint")
        project.tools.append("lint script")
    elif lint_in_test:
        # The test script lints first ("eslint . && mocha"): that is the lint command, run
        # once, with its own baseline, and the runner is called on its own.
        project.lint.extend(_exec(project, part) for part in lint_in_test)
        project.tools.append("lint from the test script")
    return project


def runner_in_ci(root: Path, line: str) -> NodeProject | None:
    """A CI line that calls a test runner itself (`pnpm vitest --coverage`, `npx jest`) as
    the project's test command with JUnit, like a `test` script that starts with it; None when
    the line is no runner call init knows."""
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    package = package if isinstance(package, dict) else {}
    script = re.sub(r"^(?:npx|bunx|pnpm\s+(?:exec\s+)?|yarn\s+(?:exec\s+)?|bun\s+x\s+)", "", line)
    match = _RUNNER.match(script)
    if match is None or _SEPARATOR.search(script):
        return None
    project = _manager(root, package)
    _test_command(project, script, _dependencies(package))
    return project if project.junit else None


def _split_lint(script: str) -> tuple[str, list[str]]:
    """`eslint . && mocha` -> (`mocha`, [`eslint .`]): leading lint steps of a test script
    (joined by `&&`) taken apart from the runner; the script unchanged when none."""
    parts = [part.strip() for part in script.split("&&")]
    lint = []
    while len(parts) > 1 and LINTER.match(parts[0]):
        lint.append(re.sub(r"^npx\s+", "", parts.pop(0)))
    return " && ".join(parts), lint


def _manager(root: Path, package: dict[str, Any]) -> NodeProject:
    install = node_install(root)  # the lockfile's manager and install (`npm ci`)
    # only pnpm's and yarn's setup in a workflow depends on package.json naming their version
    pinned = isinstance(package.get("packageManager"), str) and install.manager in ("pnpm", "yarn")
    return NodeProject(install.manager, install.lockfile, [install.command], pinned_manager=pinned)


def _dependencies(package: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for key in ("dependencies", "devDependencies"):
        if isinstance(package.get(key), dict):
            names |= set(package[key])
    return names


def _exec(project: NodeProject, tool: str) -> str:
    return {"npm": "npx", "pnpm": "pnpm exec", "yarn": "yarn", "bun": "bunx"}[project.manager] + (
        f" {tool}"
    )


def _add_package(project: NodeProject, name: str, deps: set[str]) -> None:
    """A reporter the project does not declare is installed for the run, not saved."""
    if name in deps:
        return
    add = {
        "npm": "npm install --no-save",
        "pnpm": "pnpm add --save-dev",
        "yarn": "yarn add --dev",
        "bun": "bun add --dev",
    }[project.manager]
    project.install.append(f"{add} {name}")
    project.reporters.append(f"{add} {name}")


def _test_command(project: NodeProject, script: str, deps: set[str]) -> None:
    """The runner with its JUnit options: called directly when the script starts with it
    (keeping its arguments and variables), through the script when a build step comes first
    and the runner is last (the options are appended to it), else the script as it is."""
    match = _RUNNER.search(script)
    rest = script[match.end() :] if match else ""
    first = match is not None and match.start() == 0
    last = match is not None and not _SEPARATOR.search(rest)
    runner = " ".join(match["runner"].split()) if match else ""
    chained = first and not last and re.search(r";|\|\|", rest) is not None
    if match is None or chained or not (first or (last and runner != "node --test")):
        project.test.append(f"{project.manager} run test")
        project.tools.append("test script (writes no JUnit)")
        return
    init = runners.by_name(runner).INIT
    assert init is not None  # every runner `_RUNNER` finds has init's JUnit options
    report = init.report
    options = init.options.format(report=report)
    env = init.env.format(report=report)
    args = _SEPARATOR.split(rest)[0].strip()
    if not first:
        through = " --" if project.manager == "npm" else ""
        command = f"{env}{project.manager} run test{through} {options}"
    elif runner == "node --test":  # node does not create the report's directory
        command = "mkdir -p reports && " + _join(f"node --test {options}", args)
    else:
        base = init.start or runner
        args = init.drop.sub("", args).strip() if init.drop else args  # vitest's run, mocha's -R
        # Variables the script sets (NODE_OPTIONS=--experimental-vm-modules) stay.
        command = match["env"] + env + _exec(project, _join(base, args, options))
    if init.package:
        _add_package(project, init.package, deps)
    project.test.append(command)
    project.junit.append(report)
    project.tools.append(f"{runner} with JUnit")
    # The script goes on after the runner (`vitest run && npm run test-types`): each further
    # part is a check of its own, not to be dropped.
    for part in _SEPARATOR.split(rest)[1:] if first else []:
        part = part.strip()
        if part:
            runs_itself = re.match(r"^(?:npm|pnpm|yarn|bun|node|npx|bunx)\b", part)
            command = part if runs_itself else _exec(project, part)
            project.test.append(command)
            tool = f"{part.split()[0]} from the test script"
            project.tools.append(tool)
            project.tool_commands.setdefault(tool, []).append(command)


def _join(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def run_elsewhere(root: Path, commands: list[str]) -> dict[str, str]:
    """Of `commands`, those another of them runs too through package.json's scripts
    (`npm run check:type:ts` beside `npm run check`, whose `check:type` calls it; `npx tsd`
    beside a script that runs `tsd`), each with the command that runs it: written once."""
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    scripts = package.get("scripts") if isinstance(package, dict) else None
    if not isinstance(scripts, dict):
        return {}
    scripts = {k: v for k, v in scripts.items() if isinstance(v, str)}
    runs = {c: _scripts_run(scripts, c) for c in commands}
    parts = {c: {p.strip() for n in runs[c] for p in _SEPARATOR.split(scripts[n])} for c in runs}
    dropped: dict[str, str] = {}
    for command in commands:
        called = _SCRIPT_CALL.fullmatch(command.strip())
        tool = _EXEC.sub("", command.strip())
        for other in commands:
            if other == command or other in dropped:
                continue
            if (called and called["name"] in runs[other] and called["name"] in scripts) or (
                not called and tool in parts[other]
            ):
                dropped[command] = other
                break
    return dropped


def _scripts_run(scripts: dict[str, str], command: str) -> set[str]:
    """The scripts `command` runs: those it calls, and those they call, on down."""
    seen: set[str] = set()
    todo = [command]
    while todo:
        for match in _SCRIPT_CALL.finditer(todo.pop()):
            if (name := match["name"]) in scripts and name not in seen:
                seen.add(name)
                todo.append(scripts[name])
    return seen
