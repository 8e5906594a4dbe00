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
"""

from __future__ import annotations

import re
from pathlib import Path

from codegen_ci.report import CommandResult
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
    own package (what the configuration error says), or None when that is not the case."""
    failed = record.exit_code not in (0, None) and not (record.skipped or record.timed_out)
    if record.kind != "test" or not failed or not record.output_path:
        return None
    log = Path(record.output_path)
    text = strip_ansi(read_head_tail(log, OUTPUT_CHARS)) if log.is_file() else ""
    if not COLLECTING.search(text):
        return None
    for name in dict.fromkeys(MISSING.findall(text)):
        if where := repository_module(name, cwd):
            return _explain(name, where)
    return None


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
