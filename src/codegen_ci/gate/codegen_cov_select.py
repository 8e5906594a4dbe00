"""codegen-ci's pytest plugin for coverage runs on Pythons without sys.monitoring: keep only the
tests that import a changed module (and, in every coverage run, pytest-cov's own measurement
off: `pytest_load_initial_conftests` below).

Loaded (`-p codegen_cov_select`) into the coverage run runners/_python.py makes of a
pytest command, never into the gate's own runs. It acts only when a settrace tracer is on
(`sys.gettrace()`: coverage.py's C tracer, which costs about 2x on every line of every file;
under the sys.monitoring core nothing is traced outside the changed files, and under slipcover,
which codegen_cov_run uses on CPython 3.10/3.11, nothing is traced at all: it does nothing).
It then collects only the test files (pytest's `python_files`) that import one of the changed
files (CODEGEN_COV_SELECT, paths relative to the current folder), or lie under a `conftest.py`
that does, directly or through other modules of the repository: the imports are read with
`ast`, a name matched to every file it could be (any tail of the file's dotted path), so a
doubt keeps a test. Not collecting matters as much as not running: under the C tracer,
importing and collecting test files costs about as much as running them. When no test file
or conftest imports a changed module (it is reached dynamically), everything runs.

The same for unittest: `python -m codegen_cov_select ARGS` runs `python -m unittest ARGS`
(unittest's own program, loader and discovery), less the test cases of modules that do not
import the change, when some do.

Standalone on purpose, like codegen_first: it runs in the repository's interpreter, imports
only the standard library (and pytest, when there) and keeps to syntax old Pythons read.
"""

from __future__ import annotations

import ast
import os
import sys
import unittest
from collections import defaultdict, deque
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

SELECT_ENV = "CODEGEN_COV_SELECT"
SKIP_DIRS = {"node_modules", "site-packages", "__pycache__", "build", "dist"}
MAX_FILES = 5000  # past this, reading every module costs more than it saves
MAX_FILE_BYTES = 2_000_000


def python_files(root: Path) -> list[str] | None:
    """The repository's .py files (relative POSIX paths), virtualenvs and hidden folders left
    out."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and not (here / d / "pyvenv.cfg").is_file()
        )
        for name in sorted(files):
            if name.endswith(".py"):
                found.append((here / name).relative_to(root).as_posix())
                if len(found) > MAX_FILES:
                    return None
    return found


def dotted(rel: str) -> list[str]:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return parts


def imported_names(rel: str, tree: ast.AST) -> set[str]:
    """The dotted names a module's imports could load (with their parent packages)."""
    names: set[str] = set()
    package = dotted(rel) if rel.endswith("__init__.py") else dotted(rel)[:-1]
    for node in ast.walk(tree):
        modules: list[str]
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*parent, *filter(None, [node.module])])
            modules = [base] + [base + "." + a.name if base else a.name for a in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            names.update(".".join(parts[:n]) for n in range(1, len(parts) + 1) if parts[0])
    return names


def reaching(root: Path, changed: Sequence[str]) -> set[str] | None:
    """The files that import a changed file, directly or through others; None: not known."""
    files = python_files(root)
    if files is None:
        return None
    by_name: defaultdict[str, set[str]] = defaultdict(set)
    for rel in files:
        parts = dotted(rel)
        for n in range(len(parts)):
            by_name[".".join(parts[n:])].add(rel)
    importers: defaultdict[str, set[str]] = defaultdict(set)
    for rel in files:
        path = root / rel
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            tree = ast.parse(path.read_bytes(), rel)
        except (OSError, SyntaxError, ValueError):
            continue
        for name in imported_names(rel, tree):
            for target in by_name.get(name, ()):
                importers[target].add(rel)
    seen = {PurePosixPath(c).as_posix() for c in changed}
    todo = deque(seen)
    while todo:
        for importer in importers.get(todo.popleft(), ()):
            if importer not in seen:
                seen.add(importer)
                todo.append(importer)
    return seen


def kept(test_file: str, reached: set[str]) -> bool:
    """A test file that imports the change, or lies under a conftest.py that does."""
    if test_file in reached:
        return True
    folder = PurePosixPath(test_file).parent
    return any((above / "conftest.py").as_posix() in reached for above in (folder, *folder.parents))


def has_test_file(reached: set[str], patterns: Sequence[str]) -> bool:
    """Whether a test file (pytest's `python_files`) or a conftest.py is among `reached`."""
    names = [PurePosixPath(r).name for r in reached]
    return any(n == "conftest.py" or any(fnmatch(n, p) for p in patterns) for n in names)


STATE: dict[str, Any] = {}  # this process's selection: the files that reach the change


def pytest_configure(config: Any) -> None:
    changed = [c for c in os.environ.get(SELECT_ENV, "").split(os.pathsep) if c]
    if not changed or sys.gettrace() is None:
        return
    patterns = list(config.getini("python_files") or ["test_*.py", "*_test.py"])
    root = Path.cwd()
    reached = reaching(root, changed)
    if reached is None or not has_test_file(reached, patterns):
        return  # not known, or no test imports the change (reached dynamically): all run
    STATE.update(root=root, reached=reached, patterns=patterns)


def ignored(path: Path) -> bool | None:
    """A test file that does not import the change (nor a conftest.py above it) is not
    collected: under the C tracer, collecting costs as much as running."""
    reached = STATE.get("reached")
    if reached is None or not any(fnmatch(path.name, p) for p in STATE["patterns"]):
        return None
    try:
        rel = path.relative_to(STATE["root"]).as_posix()
    except ValueError:
        return None
    return None if kept(rel, reached) else True


def running_pytest_major() -> int:
    """The running pytest's major version; 0 in a unittest run (pytest not imported)."""
    pytest = sys.modules.get("pytest")
    return int(pytest.__version__.split(".")[0]) if pytest is not None else 0


if running_pytest_major() >= 7:

    def pytest_ignore_collect(collection_path: Path, config: Any) -> bool | None:
        return ignored(collection_path)

elif running_pytest_major():  # pytest 6 names the argument `path` (a py.path); pytest 9 passes none

    def pytest_ignore_collect(path: Any, config: Any) -> bool | None:  # type: ignore[misc]
        return ignored(Path(str(path)))


if running_pytest_major():  # the pytest running this plugin (never imported: the tool must not)
    _pytest = sys.modules["pytest"]

    @_pytest.hookimpl(hookwrapper=True)  # type: ignore[untyped-decorator]
    def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> Any:
        """pytest-cov's own measurement off in the coverage run (in every coverage run, with
        or without a tracer): a `--cov` in the command or the repository's addopts starts a
        second coverage.py in the process, whose start and stop take the data from ours ("No
        data was collected"). As `--no-cov` would, set before pytest-cov reads it; the gate's
        own run keeps it."""
        namespace = early_config.known_args_namespace
        if hasattr(namespace, "no_cov"):
            namespace.no_cov = True
        yield


# unittest: `python -m codegen_cov_select ARGS` runs what `python -m unittest ARGS` runs, less
# the test cases of modules that do not import the change (unittest imports every module it
# discovers, cheaply; running is what the tracer makes dear).


def selected(suite: Any, root: Path, reached: set[str]) -> Any:
    """`suite` without the test cases whose module does not import the change."""
    if isinstance(suite, unittest.TestSuite):
        kept_tests = [selected(test, root, reached) for test in suite]
        return type(suite)([t for t in kept_tests if t is not None])
    file = getattr(sys.modules.get(type(suite).__module__), "__file__", None)
    try:
        rel = Path(file).resolve().relative_to(root) if file else None
    except ValueError:
        rel = None
    if rel is None:  # not the repository's (a loader's error, a library's case): kept
        return suite
    return suite if kept(rel.as_posix(), reached) else None


def count(suite: Any) -> int:
    return sum(1 for _ in iter_cases(suite))


def iter_cases(suite: Any) -> Any:
    if isinstance(suite, unittest.TestSuite):
        for test in suite:
            yield from iter_cases(test)
    else:
        yield suite


class SelectingProgram(unittest.TestProgram):
    test: Any  # the loaded suite

    def runTests(self) -> None:
        changed = [c for c in os.environ.get(SELECT_ENV, "").split(os.pathsep) if c]
        if changed and sys.gettrace() is not None:
            root = Path.cwd().resolve()
            reached = reaching(root, changed)
            if reached is not None:
                chosen = selected(self.test, root, reached)
                if chosen is not None and count(chosen):  # none: reached dynamically, all run
                    self.test = chosen
        super().runTests()


if __name__ == "__main__":
    sys.argv[0] = "python -m unittest"
    SelectingProgram(module=None)
