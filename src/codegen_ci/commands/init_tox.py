"""tox's environments unfolded to their commands, for `codegen-ci init`: `tox.ini`,
`pyproject.toml`'s `[tool.tox]` (its `legacy_tox_ini` string or tox 4's native TOML) and
`tox.toml`. tox itself would build a virtualenv and download the dependencies of each
environment, which a sandboxed run without network cannot do; its commands run with the
repository's interpreter instead.

tox passes each command as an argument vector, not through a shell, so the vectors are written
back with every argument quoted (`pytest 'tests/*.py'` keeps its glob for pytest, as tox does).
Substitutions are resolved where they are plain (`{posargs}` and its default, `{toxinidir}`,
`{envpython}`); the installed package `{env_site_packages_dir}/NAME` (a suite run against the
installed copy, not the checkout: boltons' `pytest --doctest-modules
{env_site_packages_dir}/boltons`) is the checkout's `NAME` (or `src/NAME`), where a run imports
the project from; a line with any other is left out, as are lines whose failure tox ignores
(`- cmd`) and environments that build, publish or serve documents. An environment's `setenv`
(`set_env`) goes in front of each of its commands as assignments (`THREADING_TESTS=1 pytest`):
tox runs the commands with it, and a test may read it; a value with a substitution only tox
can resolve, or read from a file, is left out and said."""

from __future__ import annotations

import configparser
import itertools
import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci.commands.init_checks import CheckKind, judge, quote_argv
from codegen_ci.commands.init_ci import LeftOut
from codegen_ci.commands.init_precommit import hooks

BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
POSARGS = re.compile(r"\{posargs(?::([^{}]*))?\}")
PLAIN = {"{toxinidir}": ".", "{tox_root}": ".", "{envpython}": "python", "{env_python}": "python"}
BINDIR = re.compile(r"\{env_?bin_?dir\}/")
OTHER = re.compile(r"\{[^{}]*\}")
SITE_PACKAGE = re.compile(r"\{env_?site_?packages_?dir\}/([A-Za-z_]\w*(?:\.py)?)(?=$|/)")
FACTOR_LINE = re.compile(r"^(!?[\w.-]+(?:,!?[\w.-]+)*):\s+(.*)$")
LINT_ENV = re.compile(
    r"^(?:lint|linters?|flake8|mypy|types?|typing|typecheck|style|format|fmt|pep8|pylint|"
    r"ruff|black|isort|check|static|pyright|codestyle|quality|pre-commit)$"
)
SKIP_ENV = re.compile(r"docs?|build|release|publish|upload|clean|report|dev|pkg|serve|bump")


@dataclass
class Config:
    source: str  # the file the environments were read from
    envs: Raw  # env ("*": the base) -> its raw command lines, or argv
    default: list[str]  # the env list
    variables: dict[str, list[str]] = field(default_factory=dict)  # env -> `KEY=VALUE` lines


@dataclass
class Unfolded:
    """tox's environments (or nox's sessions, init_nox.py) as the commands they run."""

    source: str | None = None  # the file the environments were read from
    commands: list[tuple[CheckKind, str, str]] = field(default_factory=list)  # kind, line, env
    left_out: list[LeftOut] = field(default_factory=list)


def tox_envs(
    root: Path, only: list[str] | None = None, prefer: Callable[[], str] = str
) -> Unfolded:
    """The commands of the environments `only` names (default: the env list), in order. A
    command several environments run is taken once, named by the environment of the
    interpreter in use when one of them is it (`prefer`: its factor, `py311`, asked only
    then), else by the first."""
    found = Unfolded()
    config = _config(root)
    if config is None:
        return found
    found.source, envs = config.source, config.envs
    names = only or config.default or ["py"]
    seen: set[str] = set()
    for name in _expand_names(names):
        if SKIP_ENV.search(name) and not only:
            found.left_out.append(LeftOut(f"tox env {name}", "builds, publishes or serves"))
            continue
        assignments = _assignments(config.variables, name, found)
        for argv in _commands(root, envs, name, found):
            take(root, found, f"tox env {name}", name, quote_argv(argv), assignments, seen, prefer)
    return found


def take(
    root: Path,
    found: Unfolded,
    where: str,
    name: str,
    line: str,
    assignments: str,
    seen: set[str],
    prefer: Callable[[], str] = str,
) -> None:
    """One command of environment (or nox session) `name` (`where`: how init names it): a
    `pre-commit run` (or prek's) as its hooks' lint tools, an install or anything not a check
    left out, a lint by the environment's name or the command's, else a test. A command
    several environments run is taken once, named by the environment of the interpreter in
    use when one of them is it (`prefer`: its factor, `py311`)."""
    if hooked := hooks(root, line):  # `pre-commit run` (or prek's): its hooks' tools
        found.left_out.extend(
            LeftOut(f"{where}: pre-commit hook {hook}", why) for hook, why in hooked.left_out
        )
        for command, _ in hooked.commands:
            if judge(command, {}, venv_in_repo=False).kind == "lint" and command not in seen:
                seen.add(command)
                found.commands.append(("lint", assignments + command, name))
        return
    judged = judge(line, {}, venv_in_repo=False)
    if judged.kind in (None, "setup"):
        why = judged.why or f"an install, which {where.split()[0]} does itself"
        found.left_out.append(LeftOut(f"{where}: {line}", why))
        return
    kind: CheckKind = "lint" if LINT_ENV.match(name) or judged.kind == "lint" else "test"
    line = assignments + line
    if line not in seen:
        seen.add(line)
        found.commands.append((kind, line, name))
    elif (factor := prefer()) and factor in name.split("-"):
        found.commands = [(k, c, name if c == line else env) for k, c, env in found.commands]


def _assignments(variables: dict[str, list[str]], name: str, found: Unfolded) -> str:
    """`KEY=value ` for each of the env's `setenv` lines tox would set (its own, else the
    base's), quoted for the shell."""
    out = []
    for line in variables.get(name, variables.get("*", [])):
        key, sep, value = line.partition("=")
        key, value = key.strip(), _substitute(value.strip())
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", key) or OTHER.search(value):
            found.left_out.append(
                LeftOut(f"tox env {name}: setenv {line}", "a value only tox can resolve")
            )
            continue
        out.append(f"{key}={shlex.quote(value)} ")
    return "".join(out)


# -- reading the configuration: (source, env -> raw command lines or argv, default env list) --

Raw = dict[str, list[str] | list[list[str]]]


def _config(root: Path) -> Config | None:
    if (root / "tox.ini").is_file():
        return _ini(_text(root / "tox.ini"), "tox.ini")
    if (root / "tox.toml").is_file():
        return _native(_toml(root / "tox.toml"), "tox.toml")
    tool = _toml(root / "pyproject.toml").get("tool")
    tox = tool.get("tox") if isinstance(tool, dict) else None
    if isinstance(tox, dict):
        legacy = tox.get("legacy_tox_ini")
        if isinstance(legacy, str):
            return _ini(legacy, "pyproject.toml [tool.tox] legacy_tox_ini")
        return _native(tox, "pyproject.toml [tool.tox]")
    return None


def _ini(text: str, source: str) -> Config | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    envs: Raw = {}
    variables: dict[str, list[str]] = {}
    for section in parser.sections():
        if section == "testenv" or section.startswith("testenv:"):
            name = section.removeprefix("testenv").removeprefix(":") or "*"
            envs[name] = _joined(parser.get(section, "commands", fallback=""))
            setenv = parser.get(section, "setenv", fallback=None) or parser.get(
                section, "set_env", fallback=None
            )
            if setenv is not None:  # an env's own setenv replaces the base's
                variables[name] = [line for line in _joined(setenv) if not line.startswith("file|")]
    envlist = parser.get("tox", "envlist", fallback="") or parser.get(
        "tox", "env_list", fallback=""
    )
    return Config(source, envs, _env_names(envlist), variables)


def _env_names(envlist: str) -> list[str]:
    """`py{3.10, 3.11}-{a, b}, lint` -> its names, commas and spaces inside braces kept."""
    names, depth, current = [], 0, ""
    for char in envlist:
        depth += (char == "{") - (char == "}")
        if depth == 0 and (char == "," or char.isspace()):
            names.append(current)
            current = ""
        elif not (depth > 0 and char.isspace()):
            current += char
    return [name for name in [*names, current] if name]


def _native(tox: dict[str, Any], source: str) -> Config | None:
    envs: Raw = {}
    variables: dict[str, list[str]] = {}
    base = tox.get("env_run_base", {})
    tables = [("*", base), *((str(n), e) for n, e in (tox.get("env") or {}).items())]
    for name, env in tables:
        if not isinstance(env, dict):
            continue
        if isinstance(env.get("commands"), list):
            envs[name] = [_argv(c) for c in env["commands"] if isinstance(c, list)]
        if isinstance(env.get("set_env"), dict):
            variables[name] = [
                f"{k}={v}" for k, v in env["set_env"].items() if isinstance(v, str | int)
            ]
    env_list = tox.get("env_list")
    names = [str(e) for e in env_list] if isinstance(env_list, list) else []
    return Config(source, envs, names, variables)


def _argv(command: list[Any]) -> list[str]:
    """A native command: strings, and `{replace = "posargs", default = [...]}` tables."""
    argv: list[str] = []
    for part in command:
        if isinstance(part, str):
            argv.append(part)
        elif isinstance(part, dict) and part.get("replace") == "posargs":
            argv.extend(str(d) for d in part.get("default", []) if isinstance(d, str))
        else:
            argv.append("{unresolved}")
    return argv


def _joined(value: str) -> list[str]:
    return [
        line.strip()
        for line in re.sub(r"\\\n\s*", " ", value).splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _expand_names(names: list[str]) -> list[str]:
    expanded: list[str] = []
    for name in names:
        parts = BRACES.split(name)
        choices = [p.split(",") if i % 2 else [p] for i, p in enumerate(parts)]
        expanded.extend("".join(c).strip() for c in itertools.product(*choices))
    return list(dict.fromkeys(e for e in expanded if e))


def _commands(root: Path, envs: Raw, name: str, found: Unfolded) -> list[list[str]]:
    raw = envs.get(name, envs.get("*", []))
    factors = set(name.split("-"))
    commands = []
    for item in raw:
        if isinstance(item, list):
            argv = [_substitute(a) for a in item]
            text = " ".join(argv)
        else:
            conditional = FACTOR_LINE.match(item)
            if conditional:
                wanted = conditional[1].split(",")
                if not any(_factor_matches(f, factors) for f in wanted):
                    continue
                item = conditional[2]
            text = _substitute(item)
            if text.startswith("-"):
                found.left_out.append(
                    LeftOut(f"tox env {name}: {item}", "tox ignores its exit code")
                )
                continue
            try:
                argv = shlex.split(text)
            except ValueError:
                continue
        argv = [SITE_PACKAGE.sub(lambda m: _checkout_package(root, m), a) for a in argv]
        # an option only tox can fill in (`--basetemp={env_tmp_dir}`) goes; the command stays
        argv = [a for a in argv if not (a.startswith("-") and OTHER.search(a))]
        text = " ".join(argv)
        if not argv or OTHER.search(text):
            found.left_out.append(
                LeftOut(f"tox env {name}: {text}", "a tox substitution only tox can resolve")
            )
            continue
        commands.append(argv)
    return commands


def _checkout_package(root: Path, match: re.Match[str]) -> str:
    """The checkout's copy of the installed package `match` names (its folder or module, at
    the top or under `src/`), else the substitution unchanged (the line is then left out)."""
    for place in (match[1], f"src/{match[1]}"):
        path = root / place
        if path.is_file() if place.endswith(".py") else path.is_dir():
            return place
    return match[0]


def _factor_matches(factor: str, factors: set[str]) -> bool:
    return factor[1:] not in factors if factor.startswith("!") else factor in factors


def _substitute(text: str) -> str:
    text = POSARGS.sub(lambda m: m[1] or "", text)
    for key, value in PLAIN.items():
        text = text.replace(key, value)
    return " ".join(BINDIR.sub("", text).split())


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
