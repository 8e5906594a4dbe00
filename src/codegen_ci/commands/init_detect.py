"""Guess a repository's own test and lint commands from its build files, for `codegen-ci init`.

Every ecosystem found contributes (a Python backend with a Node frontend gets both test
commands); Makefile targets are used only for a kind nothing else provided, since they
usually wrap the same tools. Setup commands are suggestions: `init` writes them commented out,
because a local run's setup would install into the user's own environment.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NPM_PLACEHOLDER = "no test specified"  # `npm init` writes a test script that always fails
MAKE_TARGET = re.compile(r"^(test|lint)\s*::?(?!=)", re.M)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass
class Detected:
    test: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)  # "pyproject.toml (pytest, ruff)"

    def add(self, source: str, tools: Iterable[str], **commands: list[str]) -> None:
        names = list(tools)
        self.found.append(f"{source} ({', '.join(names)})" if names else source)
        for kind, values in commands.items():
            getattr(self, kind).extend(values)


def detect(root: Path) -> Detected:
    found = Detected()
    _python(root, found)
    _node(root, found)
    if (root / "go.mod").is_file():
        found.add(
            "go.mod",
            ["go test", "go vet"],
            test=["go test ./..."],
            lint=["go vet ./..."],
            setup=["go mod download"],
        )
    if (root / "Cargo.toml").is_file():
        found.add(
            "Cargo.toml",
            ["cargo test", "clippy"],
            test=["cargo test"],
            lint=["cargo clippy -- -D warnings"],
        )
    _makefile(root, found)
    return found


def _python(root: Path, found: Detected) -> None:
    pyproject = _toml(root / "pyproject.toml")
    tool = pyproject.get("tool", {})
    ini = _ini_sections(root, "setup.cfg", "tox.ini", "pytest.ini", "mypy.ini", ".flake8")
    deps = _python_requirements(root, pyproject)
    if not (pyproject or ini or (root / "setup.py").is_file() or deps):
        return
    tools, test, lint = [], [], []
    if (
        "pytest" in tool
        or {"pytest", "tool:pytest"} & ini
        or "pytest" in deps
        or (root / "conftest.py").is_file()
    ):
        tools.append("pytest")
        test.append("python -m pytest -q")
    if (
        "ruff" in tool
        or "ruff" in deps
        or any((root / n).is_file() for n in ("ruff.toml", ".ruff.toml"))
    ):
        tools.append("ruff")
        lint.append("ruff check .")
    if "flake8" in ini or "flake8" in deps:
        tools.append("flake8")
        lint.append("flake8")
    if "mypy" in tool or "mypy" in ini or "mypy" in deps:
        tools.append("mypy")
        lint.append("mypy" if "files" in tool.get("mypy", {}) else "mypy .")
    extras = pyproject.get("project", {}).get("optional-dependencies", {})
    extra = next((e for e in ("test", "tests", "dev") if e in extras), None)
    setup = [f"python -m pip install -e '.[{extra}]'" if extra else "python -m pip install -e ."]
    source = "pyproject.toml" if pyproject else "Python project"
    found.add(source, tools, test=test, lint=lint, setup=setup)


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


def _python_requirements(root: Path, pyproject: dict[str, Any]) -> set[str]:
    """Lower-case names of the packages the project declares, in any of the usual places."""
    project = pyproject.get("project", {})
    lines: list[Any] = list(project.get("dependencies", []))
    for group in [
        *project.get("optional-dependencies", {}).values(),
        *pyproject.get("dependency-groups", {}).values(),
    ]:
        lines.extend(group)
    poetry = pyproject.get("tool", {}).get("poetry", {})
    for table in [
        poetry.get("dependencies", {}),
        poetry.get("dev-dependencies", {}),
        *(g.get("dependencies", {}) for g in poetry.get("group", {}).values()),
    ]:
        lines.extend(table)
    for req in sorted(root.glob("requirements*.txt")):
        lines.extend(req.read_text(encoding="utf-8", errors="replace").splitlines())
    names = set()
    for line in lines:
        match = REQUIREMENT_NAME.match(line) if isinstance(line, str) else None
        if match:
            names.add(match[1].lower().replace("_", "-"))
    return names


def _node(root: Path, found: Detected) -> None:
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    scripts = package.get("scripts", {}) if isinstance(package, dict) else {}
    runner, install = "npm", "npm ci"
    if (root / "pnpm-lock.yaml").is_file():
        runner, install = "pnpm", "pnpm install --frozen-lockfile"
    elif (root / "yarn.lock").is_file():
        runner, install = "yarn", "yarn install --frozen-lockfile"
    elif (root / "bun.lockb").is_file() or (root / "bun.lock").is_file():
        runner, install = "bun", "bun install --frozen-lockfile"
    test = scripts.get("test")
    has_test = isinstance(test, str) and NPM_PLACEHOLDER not in test
    has_lint = isinstance(scripts.get("lint"), str)
    test_cmd = [f"{runner} run test"] if has_test else []
    lint_cmd = [f"{runner} run lint"] if has_lint else []
    tools = [f"{c.split()[-1]} script" for c in test_cmd + lint_cmd]
    found.add("package.json", tools, test=test_cmd, lint=lint_cmd, setup=[install])


def _makefile(root: Path, found: Detected) -> None:
    path = next(
        (root / n for n in ("GNUmakefile", "makefile", "Makefile") if (root / n).is_file()), None
    )
    if path is None:
        return
    targets = set(MAKE_TARGET.findall(path.read_text(encoding="utf-8", errors="replace")))
    test = ["make test"] if "test" in targets and not found.test else []
    lint = ["make lint"] if "lint" in targets and not found.lint else []
    if test or lint:
        found.add(path.name, [c.split()[1] + " target" for c in test + lint], test=test, lint=lint)
