"""Test modules that cannot be collected for a module the repository does not hold.

On the untouched code (the pre-flight or the dry run), a test module or conftest whose
collection fails with `No module named '<name>'`, where `<name>` (its top-level part) is not
the repository's (no tracked file or folder of that name anywhere in its tree, not a name its
packaging config says it provides), is a dependency the interpreter the test command uses does
not have installed: no edit of the code installs it, so it is a configuration error before any
model call, whatever share of the test modules it stops (one module of many stops the other
tests of the round too: pytest's collection errors interrupt the session).

What stays the model's: a submodule of the project's own package (`No module named
'pkg.new'`: the task may be to write it), a top-level module the repository holds (not set up:
gate/project_imports.py says so), and a TDD test of a module the task asks to create, named
after it (`tests/test_slugs.py` importing `slugs`).

Where the project declares the dependency (`declared_dependencies`: pyproject.toml's
`dependencies`, an extra, a `[dependency-groups]` group, Poetry's and PDM's groups; setup.cfg;
requirement files), the message names it and the command that installs it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.gate.import_failures import ImportFailure
from codegen_ci.security import guarded_read
from codegen_ci.workspace import git

NO_MODULE = re.compile(r"^(?:\w+\.)*ModuleNotFoundError: No module named '([\w.]+)'")
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
CONFIG_BYTES = 1_000_000
SHOWN = 5  # missing modules, and test files per module, a message names


@dataclass(frozen=True)
class Declared:
    """Where the project declares a dependency, and the command that installs it."""

    where: str  # e.g. "pyproject.toml (the `tests` dependency group)"
    install: str  # e.g. "`pip install --group tests`", backquoted


def missing_dependencies(failures: list[ImportFailure], cwd: Path) -> str | None:
    """Why the untouched code's tests cannot be collected for modules the repository does not
    hold (what the configuration error says), or None when no failure is such."""
    missing: dict[str, list[str]] = {}
    ours = _provided(cwd)
    for failure in failures:
        match = NO_MODULE.match(failure.error)
        if not match:
            continue
        top = match[1].split(".")[0]
        if top in ours or _tests_of(failure.module, top):
            continue
        files = missing.setdefault(top, [])
        if failure.module not in files:
            files.append(failure.module)
    if not missing:
        return None
    declared = declared_dependencies(cwd)
    lines = [_one(name, files, declared.get(_normal(name))) for name, files in missing.items()]
    names = ", ".join(f"`{n}`" for n in list(missing)[:SHOWN])
    return (
        f"the tests cannot import {names} on the untouched code: not a module of the "
        "repository, so a dependency the interpreter the test command uses does not have "
        "installed (the model cannot install it, and the rest of the tests do not run while "
        "collection fails).\n"
        + "\n".join(lines[:SHOWN])
        + "\nInstall it into the interpreter the test command uses before the tests run: in "
        "validation.setup (with `network: [setup]`) or in the workflow, or run the tests with "
        "the interpreter that has it (its virtualenv activated: its `bin` on PATH, or "
        "VIRTUAL_ENV)"
    )


def _one(name: str, files: list[str], declared: Declared | None) -> str:
    shown = ", ".join(files[:SHOWN]) + (
        f" and {len(files) - SHOWN} more" if len(files) > SHOWN else ""
    )
    line = f"  - `{name}` (No module named '{name}'), imported by {shown}: "
    if declared:
        return line + f"the project declares it in {declared.where}: {declared.install}"
    return line + (
        f"the project declares it nowhere (`pip install {name}`, under the distribution's "
        "name if it differs, and declare it with the project's test dependencies)"
    )


def _tests_of(module: str, name: str) -> bool:
    """Whether the test module is named after `name` (`test_<name>.py`, `<name>_test.py`,
    `test_<name>_*.py`): a TDD test of a module the task asks to create."""
    stem = module.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]
    return stem in (f"test_{name}", f"{name}_test", f"tests_{name}") or stem.startswith(
        f"test_{name}_"
    )


def _provided(cwd: Path) -> set[str]:
    """Names the repository holds (every tracked folder's name and file's stem) or says it
    provides (its project name, setuptools' `packages`/`py-modules`)."""
    names: set[str] = set()
    for path in git.git(["ls-files", "-z"], cwd, check=False).split("\0"):
        parts = path.split("/")
        names.update(parts[:-1])
        if parts[-1]:
            names.add(parts[-1].split(".", 1)[0])
    data = _pyproject(cwd)
    if isinstance(name := _dict(data.get("project")).get("name"), str):
        names.add(_normal(name))
    setuptools = _dict(_dict(data.get("tool")).get("setuptools"))
    for key in ("packages", "py-modules"):
        listed = setuptools.get(key)
        if isinstance(listed, list):
            names.update(p.split(".")[0] for p in listed if isinstance(p, str))
    return names


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def declared_dependencies(cwd: Path) -> dict[str, Declared]:
    """The project's declared dependencies, by normalised name, each with where it is declared
    and how to install it (read only through the guarded reader: the worktree is commands'
    to shape)."""
    found: dict[str, Declared] = {}

    def add(requirements: object, where: str, install: str) -> None:
        for line in requirements if isinstance(requirements, list) else []:
            if isinstance(line, str) and (match := REQUIREMENT_NAME.match(line)):
                found.setdefault(_normal(match[1]), Declared(where, install))

    data = _pyproject(cwd)
    project = _dict(data.get("project"))
    add(project.get("dependencies"), "pyproject.toml (`dependencies`)", "`pip install -e .`")
    for extra, group in _dict(project.get("optional-dependencies")).items():
        add(group, f"pyproject.toml (the `{extra}` extra)", f"`pip install -e '.[{extra}]'`")
    for name, group in _dict(data.get("dependency-groups")).items():
        add(
            group,
            f"pyproject.toml (the `{name}` dependency group)",
            f"`pip install --group {name}` (pip 25.1+) or `uv sync --group {name}`",
        )
    tool = _dict(data.get("tool"))
    poetry = _dict(tool.get("poetry"))
    for name, group in _dict(poetry.get("group")).items():
        deps = list(_dict(_dict(group).get("dependencies")))
        add(deps, f"pyproject.toml (Poetry's `{name}` group)", f"`poetry install --with {name}`")
    dev = list(_dict(poetry.get("dev-dependencies")))
    add(dev, "pyproject.toml (Poetry's dev-dependencies)", "`poetry install`")
    for name, group in _dict(_dict(tool.get("pdm")).get("dev-dependencies")).items():
        add(group, f"pyproject.toml (PDM's `{name}` group)", f"`pdm install -G {name}`")
    if text := _read(cwd, "setup.cfg"):
        block = re.search(r"install_requires\s*=\s*((?:\n[ \t]+\S.*)+)", text)
        add(block[1].split("\n") if block else [], "setup.cfg", "`pip install -e .`")
        extras = re.search(r"^\[options\.extras_require\]\n((?:(?!\[).*\n?)*)", text, re.M)
        for name, body in re.findall(
            r"^(\w[\w-]*)\s*=\s*((?:.*)(?:\n[ \t]+\S.*)*)", extras[1] if extras else "", re.M
        ):
            lines = [p.strip() for p in re.split(r"[\n;]", body)]
            add(lines, f"setup.cfg (the `{name}` extra)", f"`pip install -e '.[{name}]'`")
    for rel in _requirement_files(cwd):
        if text := _read(cwd, rel):
            lines = [line for line in text.splitlines() if not line.lstrip().startswith("-")]
            add(lines, rel, f"`pip install -r {rel}`")
    return found


def _requirement_files(cwd: Path) -> list[str]:
    """Requirement files, test ones first: `*requirements*.txt` at the top, under
    `requirements/` (`.txt`, `.in`) and in a tests folder."""
    found = [
        p.relative_to(cwd).as_posix()
        for pattern in (
            "*requirements*.txt",
            "requirements/*.txt",
            "requirements/*.in",
            "tests/requirements*.txt",
        )
        for p in sorted(cwd.glob(pattern))
    ]
    return sorted(dict.fromkeys(found), key=lambda rel: "test" not in rel)[:20]


def _dict(value: object) -> dict[str, object]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _pyproject(cwd: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(_read(cwd, "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        return {}
    return _dict(data)


def _read(cwd: Path, rel: str) -> str:
    try:
        return guarded_read.read_text(cwd, rel, max_bytes=CONFIG_BYTES)
    except (OSError, guarded_read.Refused):
        return ""
