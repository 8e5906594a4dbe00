"""Guess a repository's own test and lint commands from its build files, for `codegen-ci init`.

Every ecosystem found contributes (a Python backend with a Node frontend gets both test
commands); Makefile targets are used only for a kind nothing else provided, since they
usually wrap the same tools. Setup commands are suggestions: `init` writes them commented out,
because a local run's setup would install into the user's own environment.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_ci.commands.init_node import NodeProject, node_project
from codegen_ci.commands.init_sources import (
    ci_test_commands,
    nox_commands,
    tox_commands,
    unittest_suite,
)

# gotestsum runs `go test` and writes JUnit; pinned so every run installs the same one.
GOTESTSUM = "gotest.tools/gotestsum@v1.12.0"
GO_REPORT = "reports/junit-go.xml"
PYTEST_REPORT = "reports/junit-pytest.xml"
MAKE_TARGET = re.compile(r"^(tests?|check|unittest|lint|style)\s*::?(?!=)", re.M)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


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
        setup = ["go mod download", f"go install {GOTESTSUM}"]
        found.add(
            "go.mod",
            ["gotestsum", "go vet"],
            test=[f"gotestsum --junitfile {GO_REPORT} ./..."],
            lint=["go vet ./..."],
            setup=setup,
            install=setup,
            junit=[GO_REPORT],
        )
        found.ecosystems.append("go")
    if (root / "Cargo.toml").is_file():
        found.add(
            "Cargo.toml",
            ["cargo test", "clippy"],
            test=["cargo test"],
            lint=["cargo clippy -- -D warnings"],
        )
        found.ecosystems.append("rust")
    _makefile(root, found)
    if not found.test:
        _elsewhere(root, found)
    if found.junit and "python" in found.ecosystems:
        # Explicit JUnit globs turn off pytest's automatic report: name it.
        pytest = "python -m pytest -q"
        if pytest in found.test:
            found.test[found.test.index(pytest)] = f"{pytest} --junitxml={PYTEST_REPORT}"
            found.junit.append(PYTEST_REPORT)
    return found


def _python(root: Path, found: Detected) -> None:
    pyproject = _toml(root / "pyproject.toml")
    tool = pyproject.get("tool", {})
    ini = _ini_sections(root, "setup.cfg", "tox.ini", "pytest.ini", "mypy.ini", ".flake8")
    deps = _python_requirements(root, pyproject)
    suite = unittest_suite(root)
    if not (pyproject or ini or (root / "setup.py").is_file() or deps or suite):
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
    elif suite:
        command, through_pytest = suite
        tools.append("unittest suite, run through pytest" if through_pytest else "unittest")
        test.append(command)
    elif tox := tox_commands(root):
        tools.append("tox.ini's test command")
        test.extend(tox)
    elif nox := nox_commands(root):
        tools.append("noxfile's pytest session")
        test.extend(nox)
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
    if any("pytest" in t for t in test) and "pytest" not in deps:
        setup.append("python -m pip install pytest")  # runs the unittest suite, writes JUnit
    source = "pyproject.toml" if pyproject else "Python project"
    found.add(source, tools, test=test, lint=lint, setup=setup, install=setup)
    found.ecosystems.append("python")


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


def _elsewhere(root: Path, found: Detected) -> None:
    """No build file named a test runner: the repository's CI workflow steps may."""
    if commands := ci_test_commands(root):
        found.add(".github/workflows (its CI's test steps)", [], test=commands)


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
