"""The repository's own Python package that its tests cannot import.

A test command whose collection, on the untouched code (the pre-flight or the dry run), fails
with `No module named '<name>'` while `<name>` is the repository's own code (`src/<name>/`,
`<name>/` with an `__init__.py`, `<name>.py` or `src/<name>.py`) is not set up: the project is
neither installed (`pip install -e .`) nor on `PYTHONPATH`, so every test importing it fails
before it runs, whatever the model changes. That is a configuration error before any model
call (gate/preflight.py), not rounds spent on an environment the model cannot fix.

Deliberately narrow, because a failing pre-flight is usually the bug the task is about:
- only a top-level name (`No module named 'pkg.sub'` means `pkg` itself imported: the
  missing part may be the task's to add);
- only a module the repository holds on the base commit (a test importing a module the task
  asks to create names one that does not exist yet: that is the model's work);
- only a failure while collecting or loading test modules (pytest's "ERROR collecting",
  "ImportError while importing test module" or "... loading conftest", unittest's "Failed to
  import test module"), not an import error a test's own code hits at run time.

The same holds for a dependency the project declares (`dependencies` or an extra in
pyproject.toml, `install_requires` in setup.cfg, a `requirements*.txt`) that the commands'
interpreter does not have (`declared_dependencies`): the environment is not set up, and no
edit makes it so. A missing module the project does not declare stays the model's (the task
may be to add it).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from codegen_ci.report import CommandResult
from codegen_ci.security import guarded_read
from codegen_ci.security.untrusted import strip_ansi
from codegen_ci.workspace.proc import read_head_tail

MISSING = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '(\w+)'")
COLLECTING = re.compile(
    r"ERROR collecting |ImportError while (?:importing test module|loading conftest)|"
    r"Failed to import test module"
)
OUTPUT_CHARS = 200_000


def project_not_importable(record: CommandResult, cwd: Path) -> str | None:
    """Why a test command run on the untouched code in `cwd` cannot import the repository's
    own package, or a dependency it declares (what the configuration error says), or None
    when that is not the case."""
    failed = record.exit_code not in (0, None) and not (record.skipped or record.timed_out)
    if record.kind != "test" or not failed or not record.output_path:
        return None
    log = Path(record.output_path)
    text = strip_ansi(read_head_tail(log, OUTPUT_CHARS)) if log.is_file() else ""
    if not COLLECTING.search(text):
        return None
    missing = list(dict.fromkeys(MISSING.findall(text)))
    for name in missing:
        if where := repository_module(name, cwd):
            return _explain(name, where)
    declared = declared_dependencies(cwd)
    for name in missing:
        if (source := declared.get(_normal(name))) is not None:
            return _explain_dependency(name, source)
    return None


REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
CONFIG_BYTES = 1_000_000


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def declared_dependencies(cwd: Path) -> dict[str, str]:
    """The project's declared dependencies, by normalised name, each with the file that
    declares it (read only through the guarded reader: the worktree is commands' to shape)."""
    found: dict[str, str] = {}

    def add(requirements: object, source: str) -> None:
        for line in requirements if isinstance(requirements, list) else []:
            if isinstance(line, str) and (match := REQUIREMENT_NAME.match(line)):
                found.setdefault(_normal(match[1]), source)

    if text := _read(cwd, "pyproject.toml"):
        try:
            project = tomllib.loads(text).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        if isinstance(project, dict):
            add(project.get("dependencies"), "pyproject.toml")
            extras = project.get("optional-dependencies")
            for group in extras.values() if isinstance(extras, dict) else ():
                add(group, "pyproject.toml")
    if text := _read(cwd, "setup.cfg"):
        block = re.search(r"install_requires\s*=\s*((?:\n[ \t]+\S.*)+)", text)
        add(block[1].split("\n") if block else [], "setup.cfg")
    for path in sorted(cwd.glob("requirements*.txt"))[:10]:
        if text := _read(cwd, path.name):
            add(text.splitlines(), path.name)
    return found


def _read(cwd: Path, rel: str) -> str:
    try:
        return guarded_read.read_text(cwd, rel, max_bytes=CONFIG_BYTES)
    except (OSError, guarded_read.Refused):
        return ""


def _explain_dependency(name: str, source: str) -> str:
    return (
        f"the tests cannot import `{name}` (No module named '{name}' while collecting the "
        f"tests on the untouched code), a dependency the project declares in {source}: the "
        "commands' interpreter does not have it installed. Install the project's "
        "dependencies before the tests run: in validation.setup (e.g. `pip install -e "
        "'.[test]'` or `pip install -r requirements.txt`, with `network: [setup]`) or in the "
        "workflow, or run the tests with the interpreter that has them (its virtualenv "
        "activated: its `bin` on PATH, or VIRTUAL_ENV)"
    )


def repository_module(name: str, cwd: Path) -> str | None:
    """Where the repository holds the top-level module `name` (`src/<name>/`, `<name>/`,
    `<name>.py`, `src/<name>.py`), or None when it does not."""
    src_package = cwd / "src" / name
    if src_package.is_dir() and not src_package.is_symlink() and any(src_package.glob("*.py")):
        return f"src/{name}/"  # a package, or a namespace package of modules
    package = cwd / name
    if not package.is_symlink() and (package / "__init__.py").is_file():
        return f"{name}/"
    for rel in (f"{name}.py", f"src/{name}.py"):
        if (cwd / rel).is_file() and not (cwd / rel).is_symlink():
            return rel
    return None


def _explain(name: str, where: str) -> str:
    path = "src" if where.startswith("src/") else "."
    return (
        f"the test command cannot import the repository's own module `{name}` "
        f"(No module named '{name}' while collecting the tests on the untouched code); it "
        f"exists in the repository at `{where}`, but nothing makes it importable. The setup "
        f"must install the project (e.g. `pip install -e .` in validation.setup or the "
        f"workflow) or put it on PYTHONPATH (e.g. `PYTHONPATH={path}` before the test command, "
        f"or pytest's `pythonpath = {path}`)"
    )
