"""Where else `init` finds a repository's test commands when its build files name no runner:
unittest suites (run through pytest where pytest can collect them, for JUnit), tox's and nox's
sessions, and the `run:` steps of the repository's own CI workflows. Also the names of those
CI workflows, for the CI-fix workflow's `workflow_run` trigger."""

from __future__ import annotations

import configparser
import re
from pathlib import Path
from typing import Any

import yaml

# Test files pytest collects by default; unittest discovers `test*.py`.
PYTEST_FILE = re.compile(r"^(?:test_.*|.*_test)\.py$")
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
    top = [p.name for p in sorted(root.glob("test*.py")) if p.is_file()
           and UNITTEST_IMPORT.search(_text(p))]  # fmt: skip
    if top:
        return "python -m pytest -q " + " ".join(top[:20]), True
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
