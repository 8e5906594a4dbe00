"""How `codegen-ci init` says to install a tool a written command needs and this machine lacks:
the repository's own way, as a user of the project would look for it.

For a Python tool (pytest, ruff, mypy, tox, nox: one resolver for all), in this order:
  1. the install line of the repository's CI that installs it: one of the job that runs the
     command first, then one of any job (`pip install -e .[test]`, `pip install -r
     requirements-dev.txt`, `uv sync --group dev`, `poetry install`), when what the line
     installs names the tool (directly, or through the group, extra or file it names);
  2. the PEP 735 dependency group that names it (`pip install --group test`, pip >= 25.1;
     `uv sync --group test` where uv.lock is), a group naming it itself before one that only
     includes such a group (pypa/packaging's `dev` includes `test`);
  3. the extra of `[project.optional-dependencies]` that names it (`pip install -e '.[test]'`;
     `uv sync --extra test` where uv.lock is), then a Poetry group (`poetry install --with dev`);
  4. the requirements file that names it (`requirements-dev.txt`, `requirements/test.txt`,
     `test-requirements.txt`, following their `-r` lines), one named after the tool first;
  5. the version (and additional dependencies) of its pre-commit hook (init_precommit.pinned);
  6. the tool itself.
A group, extra or file that does not name the tool is never offered for it.

Any other program a command needs (golangci-lint, staticcheck, a tox env's `check-manifest`):
CI's install line that names it, one of the job that runs the command first, else what the
runner or init says (`go install honnef.co/go/tools/cmd/staticcheck@latest`).

For Node, what the lockfile says (`npm ci`, `pnpm install --frozen-lockfile`): the same table
decides the install init writes for the project (`init_node.py`)."""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen_ci.commands.init_checks import DIR_PREFIX, bare, explicit
from codegen_ci.commands.init_ci import CiLine
from codegen_ci.commands.init_precommit import pinned

# the package a requirements line names (`mypy==1.17.1`, `ruff>=0.6`, `-r other.txt`: none)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# `.[test,dev]`, `-e .[test]`, `boltons[dev]`: the project (or a folder) with its extras
WITH_EXTRAS = re.compile(r"^(?P<base>[^\[\]]*)\[(?P<extras>[^\]]*)\]$")
INCLUDED = re.compile(r"^\s*-r\s*(\S+)|^\s*--requirement[=\s]\s*(\S+)")
# pip (and uv pip) options that take a value which is not what the line installs
PIP_VALUE_OPTIONS = frozenset(
    {
        "-c",
        "--constraint",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--python",
        "-p",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--only-binary",
        "--no-binary",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--src",
        "--upgrade-strategy",
        "--progress-bar",
        "--log",
        "--cache-dir",
        "--trusted-host",
        "--proxy",
        "--timeout",
        "--retries",
        "--exists-action",
        "--cert",
        "--client-cert",
        "-C",
        "--config-settings",
        "--global-option",
        "--report",
        "--root-user-action",
        "--index-strategy",
        "--resolution",
        "--prerelease",
    }
)
GROUP_ORDER = ("test", "tests", "testing", "dev", "lint", "typing")
MAX_INCLUDES = 20  # requirement files followed through `-r`, and group includes resolved
# (manager, lockfile, the install that keeps to it); no lockfile: `npm install`
NODE_LOCKS = (
    ("pnpm", "pnpm-lock.yaml", "pnpm install --frozen-lockfile"),
    ("yarn", "yarn.lock", "yarn install --frozen-lockfile"),
    ("bun", "bun.lock", "bun install --frozen-lockfile"),
    ("bun", "bun.lockb", "bun install --frozen-lockfile"),
    ("npm", "package-lock.json", "npm ci"),
    ("npm", "npm-shrinkwrap.json", "npm ci"),
)


@dataclass(frozen=True)
class NodeInstall:
    manager: str  # npm, pnpm, yarn, bun
    lockfile: str | None
    command: str


def node_install(folder: Path) -> NodeInstall:
    """How the Node project in `folder` installs its dependencies as its lockfile pins them
    (`npm ci` refuses to run without one: then `npm install`)."""
    for manager, lockfile, command in NODE_LOCKS:
        if (folder / lockfile).is_file():
            if manager == "yarn" and (folder / ".yarnrc.yml").is_file():  # yarn berry
                command = "yarn install --immutable"
            return NodeInstall(manager, lockfile, command)
    return NodeInstall("npm", None, "npm install")


@dataclass(frozen=True)
class Declared:
    """The Python packages the repository declares, by where it declares them (lower-case,
    `_` as `-`); each table as pyproject.toml has it, anything malformed left out."""

    project: str  # the project's own name, for `.[test]`'s `name[dev]` inside an extra
    dependencies: frozenset[str]
    groups: dict[str, frozenset[str]]  # PEP 735, includes resolved
    own_groups: dict[str, frozenset[str]]  # PEP 735, what each group names itself
    default_groups: tuple[str, ...]  # the groups `uv sync` installs unasked
    extras: dict[str, frozenset[str]]
    poetry: dict[str, frozenset[str]]  # Poetry's groups (`main`, `dev`, ...)
    poetry_optional: frozenset[str]


def declared(root: Path) -> Declared:
    pyproject = _toml(root / "pyproject.toml")
    project = _table(pyproject.get("project"))
    name = _name(project.get("name")) or ""
    raw_groups = _table(pyproject.get("dependency-groups"))
    own = {str(g): frozenset(_names(v)) for g, v in raw_groups.items()}
    groups = {g: frozenset(_group(raw_groups, g, 0)) for g in own}
    raw_extras = _table(project.get("optional-dependencies"))
    own_extras = {str(e): frozenset(_names(v)) for e, v in raw_extras.items()}
    # `name[dev]` inside an extra: that extra's packages too (one level, as projects write it)
    extras = {
        e: names.union(*(own_extras.get(x, ()) for x in _self_extras(raw_extras[e], name)))
        for e, names in own_extras.items()
    }
    uv_defaults = _table(_table(pyproject.get("tool")).get("uv")).get("default-groups", ["dev"])
    if uv_defaults == "all":
        default_groups = tuple(own)
    elif isinstance(uv_defaults, list):
        default_groups = tuple(str(g) for g in uv_defaults if isinstance(g, str))
    else:
        default_groups = ("dev",)
    poetry = _table(_table(pyproject.get("tool")).get("poetry"))
    poetry_groups = {"main": frozenset(_names(_table(poetry.get("dependencies"))))}
    poetry_groups["dev"] = frozenset(_names(_table(poetry.get("dev-dependencies"))))
    optional = set()
    for group, settings in _table(poetry.get("group")).items():
        table = _table(settings)
        named = frozenset(_names(_table(table.get("dependencies"))))
        poetry_groups[str(group)] = poetry_groups.get(str(group), frozenset()) | named
        if table.get("optional") is True:
            optional.add(str(group))
    return Declared(
        name,
        frozenset(_names(project.get("dependencies"))),
        groups,
        own,
        default_groups,
        extras,
        poetry_groups,
        frozenset(optional),
    )


def python_install(
    root: Path,
    tool: str,
    pip: str,
    python: str,
    uv_venv: bool,
    ci: Sequence[CiLine] = (),
    origin: str = "",
) -> str:
    """How to install the Python `tool` the repository's way (the module's docstring): `pip`
    is how a package goes into the commands' interpreter (`python -m pip install`), `python`
    that interpreter as the commands write it, `uv_venv` whether `uv sync` makes it (uv.lock,
    and the commands use the root's `.venv` or no venv yet); `ci` CI's install lines,
    `origin` where the command that needs the tool came from."""
    packages = declared(root)
    if from_ci := ci_install(root, tool, python, ci, origin, packages):
        return from_ci
    uv = (root / "uv.lock").is_file() and uv_venv
    made = " (it makes .venv: run init again, so the commands use it)" if python == "python" else ""
    if group := _best(tool, packages.groups, packages.own_groups):
        if uv:
            return f"uv sync --group {group}{made}"
        return f"{pip} --group {group}" + (" (pip >= 25.1)" if " -m pip " in f" {pip} " else "")
    if extra := _best(tool, packages.extras, packages.extras):
        return f"uv sync --extra {extra}{made}" if uv else f"{pip} -e {shlex.quote(f'.[{extra}]')}"
    poetry = {g: n for g, n in packages.poetry.items() if g != "main"}
    if group := _best(tool, poetry, poetry):
        return f"poetry install --with {group}"
    if file := _requirements_file(root, tool):
        return f"{pip} -r {file}"
    return f"{pip} {pinned(root, tool) or tool}"


def ci_install(
    root: Path,
    tool: str,
    python: str,
    ci: Sequence[CiLine],
    origin: str,
    packages: Declared | None = None,
) -> str | None:
    """CI's install line that installs `tool` (in the form init writes, with the job it is
    from), one of the job `origin` names first: a Python install whose packages
    (`_installed_by`) name it, or any other install that names the program (`go install
    honnef.co/go/tools/cmd/staticcheck@2023.1.6`, `cargo install cargo-nextest --locked`,
    `rustup component add clippy`, golangci-lint's `curl ... | sh`)."""
    packages = packages or declared(root)
    name = re.compile(rf"(?<![\w.-])(?:cargo-)?{re.escape(tool.removeprefix('cargo-'))}(?![\w.-])")
    same_job = [line for line in ci if _same_job(origin, line)]
    for line in [*same_job, *(line for line in ci if line not in same_job)]:
        installed = _installed_by(root, line.command, packages)
        body = bare(line.command)
        # `go install ...` installs something with go, not go
        names_it = name.search(body) and body.split(maxsplit=1)[0] != tool
        if tool in (installed or ()) or (installed is None and names_it):
            return f"{explicit(line.command, python)} ({line.origin.removeprefix('from ')})"
    return None


def _same_job(origin: str, line: CiLine) -> bool:
    """Whether the command from `origin` ("from .github/workflows/ci.yml, job test: pytest",
    or "..., job test, Makefile target check: ...") came from the job of `line`."""
    rest = origin.removeprefix(line.origin)
    return rest != origin and rest[:1] in (":", ",", "")


def _best(
    tool: str, tables: dict[str, frozenset[str]], own: dict[str, frozenset[str]]
) -> str | None:
    """The name of the table (group, extra) that names `tool`: one naming it itself first, then
    one named after the tool, then the usual names (`test`, `dev`), then the first written."""
    order = list(tables)
    named = [t for t in order if tool in tables[t]]

    def rank(name: str) -> tuple[bool, bool, int, int]:
        usual = GROUP_ORDER.index(name) if name in GROUP_ORDER else len(GROUP_ORDER)
        return (tool not in own.get(name, ()), tool not in name, usual, order.index(name))

    return min(named, key=rank) if named else None


def _installed_by(root: Path, command: str, packages: Declared) -> set[str] | None:
    """The packages an install line installs, as far as the repository's files say: those it
    names, and those of the groups, extras and requirements files it names (None for a line
    that is no Python install)."""
    prefix = DIR_PREFIX.match(command.strip())
    folder = root / prefix[1].split()[1] if prefix else root
    try:
        words = shlex.split(bare(command))
    except ValueError:
        words = bare(command).split()
    while words and (words[0] == "sudo" or re.search(r"(^|/)python[\d.]*$", words[0])):
        words = words[2:] if words[0] != "sudo" and words[1:2] == ["-m"] else words[1:]
    if words[:2] in (["pip", "install"], ["pip3", "install"]):
        return _pip_installs(root, folder, words[2:], packages)
    if words[:3] == ["uv", "pip", "install"]:
        return _pip_installs(root, folder, words[3:], packages)
    if words[:2] == ["uv", "sync"]:
        return _uv_sync_installs(words[2:], packages)
    if words[:2] == ["poetry", "install"]:
        return _poetry_installs(words[2:], packages)
    if words[:2] == ["pdm", "install"]:  # the project, and every group unless --prod
        production = {"--prod", "--production"} & set(words)
        groups = () if production else packages.groups.values()
        return set(packages.dependencies).union(*groups, *packages.extras.values())
    return None


def _pip_installs(root: Path, folder: Path, args: list[str], packages: Declared) -> set[str]:
    installed: set[str] = set()
    values = iter(args)
    for arg in values:
        option, _, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if option in ("-r", "--requirement") or (arg.startswith("-r") and len(arg) > 2):
            rel = value or (arg[2:] if option not in ("-r", "--requirement") else next(values, ""))
            installed |= _requirements(folder, rel, root, set())
        elif option == "--group":
            group = (value or next(values, "")).rsplit(":", 1)[-1]
            installed |= packages.groups.get(group, frozenset())
        elif option in ("-e", "--editable"):
            installed |= _spec(value or next(values, ""), packages)
        elif option in PIP_VALUE_OPTIONS:
            if arg == option:  # `-c FILE`, `--index-url URL`, not `--index-url=URL`
                next(values, None)
        elif not arg.startswith("-"):
            installed |= _spec(arg, packages)
    return installed


def _spec(spec: str, packages: Declared) -> set[str]:
    """What one pip argument installs: the project (`.`, `.[test]`, `name[dev]`) with its
    dependencies and extras, or the package it names."""
    match = WITH_EXTRAS.match(spec)
    base = match["base"] if match else spec
    extras = [e.strip() for e in match["extras"].split(",")] if match else []
    if base in (".", "./", "") or base.startswith(("./", "/")) or _name(base) == packages.project:
        return set(packages.dependencies).union(
            *(packages.extras.get(e, frozenset()) for e in extras)
        )
    name = _name(base)
    return {name} if name else set()


def _uv_sync_installs(args: list[str], packages: Declared) -> set[str]:
    groups: set[str] = set()
    extras: set[str] = set()
    only = False
    default = True
    values = iter(args)
    for arg in values:
        option, _, value = arg.partition("=")
        if option in ("--group", "--only-group"):
            groups.add(value or next(values, ""))
            only = only or option == "--only-group"
        elif option == "--extra":
            extras.add(value or next(values, ""))
        elif option == "--all-extras":
            extras |= set(packages.extras)
        elif option == "--all-groups":
            groups |= set(packages.groups)
        elif option in ("--no-dev", "--no-default-groups", "--only-dev"):
            default = default and option == "--only-dev"
            only = only or option == "--only-dev"
            groups |= {"dev"} if option == "--only-dev" else set()
    if default and not only:
        groups |= set(packages.default_groups)
    found = set() if only else set(packages.dependencies)
    return found.union(
        *(packages.groups.get(g, frozenset()) for g in groups),
        *(packages.extras.get(e, frozenset()) for e in extras),
    )


def _poetry_installs(args: list[str], packages: Declared) -> set[str]:
    chosen = set(packages.poetry) - packages.poetry_optional
    values = iter(args)
    for arg in values:
        option, _, value = arg.partition("=")
        named = {g.strip() for g in (value or "").split(",") if g.strip()}
        if option in ("--with", "--only", "--without") and not named:
            named = {g.strip() for g in next(values, "").split(",") if g.strip()}
        if option == "--with":
            chosen |= named
        elif option == "--only":
            chosen = set(named)
        elif option == "--without":
            chosen -= named
        elif option == "--all-extras":
            chosen |= {f"extra:{e}" for e in packages.extras}
        elif option in ("-E", "--extras"):
            chosen |= {f"extra:{e}" for e in (value or next(values, "")).split()}
    return set().union(
        *(packages.poetry.get(g, frozenset()) for g in chosen),
        *(packages.extras.get(g.removeprefix("extra:"), frozenset()) for g in chosen),
    )


def _requirements_file(root: Path, tool: str) -> str | None:
    """The requirements file that names `tool` (prettytable's `requirements-mypy.txt`, which
    its tox env installs, pins mypy and adds the stubs it needs), one named after the tool
    first: its path from the root."""
    files = sorted(
        [*root.glob("*requirements*.txt"), *root.glob("requirements/*.txt")],
        key=lambda path: (tool not in path.name, path.as_posix()),
    )
    for path in files:
        rel = path.relative_to(root).as_posix()
        if tool in _requirements(root, rel, root, set()):
            return rel
    return None


def _requirements(folder: Path, rel: str, root: Path, seen: set[Path]) -> set[str]:
    """The packages a requirements file names, and those of the files its `-r` lines name
    (each file once; none outside the repository)."""
    path = (folder / rel).resolve()
    if path in seen or len(seen) >= MAX_INCLUDES or not path.is_relative_to(root.resolve()):
        return set()
    seen.add(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    names: set[str] = set()
    for line in text.splitlines():
        if include := INCLUDED.match(line):
            names |= _requirements(path.parent, include[1] or include[2], root, seen)
        elif not line.lstrip().startswith(("-", "#")) and (name := _name(line)):
            names.add(name)
    return names


def _group(groups: dict[str, Any], name: str, depth: int) -> set[str]:
    """A PEP 735 group's packages, its `{include-group = "test"}` entries resolved."""
    entries = groups.get(name)
    if not isinstance(entries, list) or depth > MAX_INCLUDES:
        return set()
    names = set(_names(entries))
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            names |= _group(groups, entry["include-group"], depth + 1)
    return names


def _self_extras(entries: Any, project: str) -> list[str]:
    """The extras of the project itself an extra names (`boltons[dev]` inside `test`)."""
    found: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        match = WITH_EXTRAS.match(entry.split(";")[0].strip()) if isinstance(entry, str) else None
        if match and _name(match["base"]) == project:
            found.extend(e.strip() for e in match["extras"].split(","))
    return found


def _names(entries: Iterable[Any] | Any) -> list[str]:
    """The package names of a list of requirement strings (or a table's keys, Poetry's)."""
    if isinstance(entries, dict):
        entries = list(entries)
    if not isinstance(entries, list):
        return []
    return [name for entry in entries if (name := _name(entry))]


def _name(requirement: Any) -> str | None:
    match = REQUIREMENT_NAME.match(requirement) if isinstance(requirement, str) else None
    return match[1].lower().replace("_", "-") if match else None


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
