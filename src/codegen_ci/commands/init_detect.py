"""Guess a repository's own test and lint commands from its build files, for `codegen-ci init`.

Every ecosystem found contributes (a Python backend with a Node frontend gets both test
commands); Makefile targets are used only for a kind nothing else provided, since they
usually wrap the same tools. Setup commands are suggestions: `init` writes them commented out,
because a local run's setup would install into the user's own environment.

Where the build files name no runner, the test commands come from elsewhere: unittest suites
(run through pytest where pytest can collect them, for JUnit), tox's and nox's sessions, and
the `run:` steps of the repository's own CI workflows. The names of those CI workflows are
also found here, for the CI-fix workflow's `workflow_run` trigger. Node projects are
`init_node.py`'s.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codegen_ci.commands.init_node import NodeProject, node_project

# gotestsum runs `go test` and writes JUnit; pinned so every run installs the same one.
GOTESTSUM = "gotest.tools/gotestsum@v1.12.0"
GO_REPORT = "reports/junit-go.xml"
PYTEST_REPORT = "reports/junit-pytest.xml"
MAKE_TARGET = re.compile(r"^(tests?|check|unittest|lint|style)\s*::?(?!=)", re.M)
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# Test files pytest collects by default; unittest discovers `test*.py`.
PYTEST_FILE = re.compile(r"^(?:test_.*|.*_test)\.py$")
PYTEST_FUNCTION = re.compile(r"^\s*(?:async\s+)?def test_?\w*\s*\(", re.M)
UNITTEST_IMPORT = re.compile(r"^\s*(?:import unittest|from unittest import)", re.M)
TEST_DIRS = ("tests", "test", "testing")
MAX_FILES = 200
# A CI step line that runs tests, in the usual spellings.
CI_TEST_LINE = re.compile(
    r"^(?:python3?\s+-m\s+(?:pytest|unittest)\b|pytest\b|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?"
    r"test\b|go\s+test\b|gotestsum\b|cargo\s+(?:test|nextest)\b|make\s+(?:test|check)\b|"
    r"tox\b|nox\b|python3?\s+setup\.py\s+test\b|npx\s+(?:jest|vitest|mocha)\b)"
)
SUBSTITUTION = re.compile(r"\s*\{[^}]*\}")  # tox's {posargs}, {toxinidir}


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
    plain = pytest_files(root)
    if not (pyproject or ini or (root / "setup.py").is_file() or deps or suite or plain):
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
    elif plain:
        tools.append("pytest-style test files")
        test.append(plain)
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


# -- elsewhere: unittest suites, tox, nox, the CI workflows -------------------------------


def unittest_suite(root: Path) -> tuple[str, bool] | None:
    """(test command, through pytest) for a unittest suite under a test folder: pytest when
    every unittest file is one pytest collects (it then writes JUnit), else unittest's own
    discovery (exit codes only); else unittest modules at the top (`test.py`), through pytest."""
    for folder in TEST_DIRS:
        base = root / folder
        if not base.is_dir():
            continue
        files = [p for p in sorted(base.rglob("test*.py"))[:MAX_FILES] if p.is_file()]
        suites = [p for p in files if UNITTEST_IMPORT.search(_text(p))]
        if not suites:
            continue
        if all(PYTEST_FILE.match(p.name) for p in suites):
            return f"python -m pytest -q {folder}", True
        return f"python -m unittest discover -s {folder} -t .", False
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
    for folder in TEST_DIRS:
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


def tox_commands(root: Path) -> list[str]:
    """The test commands of tox's `[testenv]` (substitutions dropped) that run a test runner."""
    path = root / "tox.ini"
    if not path.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
        commands = parser.get("testenv", "commands", fallback="")
    except (configparser.Error, UnicodeDecodeError):
        return []
    lines = [SUBSTITUTION.sub("", line).strip() for line in commands.splitlines()]
    return [_pytest_form(line) for line in lines if CI_TEST_LINE.match(line)][:1]


def nox_commands(root: Path) -> list[str]:
    text = _text(root / "noxfile.py")
    if re.search(r"""session\.run\(\s*["']pytest["']|["']-m["'],\s*["']pytest["']""", text):
        return ["python -m pytest -q"]
    return []


def ci_workflows(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """The repository's own workflows that run on pushes or pull requests: (name, document).
    A workflow without `name:` is called by its path, as GitHub does."""
    found = []
    folder = root / ".github" / "workflows"
    for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]):
        if path.name.startswith("codegen-"):
            continue
        try:
            doc = yaml.safe_load(_text(path))
        except yaml.YAMLError:
            continue
        if not isinstance(doc, dict):
            continue
        triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
        names = set(triggers) if isinstance(triggers, dict | list) else {triggers}
        if names & {"push", "pull_request"}:
            name = doc.get("name")
            found.append((name if isinstance(name, str) else f".github/workflows/{path.name}", doc))
    return found


def ci_test_commands(root: Path) -> list[str]:
    """Test lines of the CI workflows' `run:` steps (first of each kind, in order)."""
    commands: list[str] = []
    for _, doc in ci_workflows(root):
        jobs = doc.get("jobs")
        for job in jobs.values() if isinstance(jobs, dict) else []:
            steps = job.get("steps") if isinstance(job, dict) else None
            for step in steps if isinstance(steps, list) else []:
                run = step.get("run") if isinstance(step, dict) else None
                for line in run.splitlines() if isinstance(run, str) else []:
                    line = line.strip()
                    if CI_TEST_LINE.match(line) and "${{" not in line:
                        commands.append(_pytest_form(line))
    return list(dict.fromkeys(commands))[:2]


def _pytest_form(line: str) -> str:
    """`pytest ...` as `python -m pytest ...` (the repository's interpreter, not a global)."""
    return re.sub(r"^pytest\b", "python -m pytest", line)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
