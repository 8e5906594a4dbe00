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

The same holds for a module the repository does not hold at all, in any test module however
few (gate/missing_dependencies.py): a dependency the commands' interpreter does not have
installed, declared by the project or not; the environment is not set up, and no edit makes
it so.

The package itself failing to import (`package_not_importable`): every test module (or all
but a negligible share, `NEGLIGIBLE`), or a conftest, fails to import on the untouched code,
at least half of them for the package's own error: the traceback (gate/import_failures.py)
shows it raised inside the project's own files, not in the test module. It counts when the
environment lacks something: a module of the project that is not there (`No module named
'pkg._version'`: a file the build writes), a third-party module the package imports that the
interpreter does not have, a name missing from an installed third-party module (`cannot import
name ... from` a module outside the repository: another version is installed), a name missing
from or a syntax error in a file git does not track (a generated file, stale or broken), or the
project's installed metadata not found (`PackageNotFoundError`: `importlib.metadata.version`
of a project that is not installed). A test module importing a name or module the task asks to
write fails in the test module's own line, so it stays the model's; so does a name missing
from, or a syntax error in, a file git tracks (a circular import, a broken module: code).

Node's counterpart (`package_main_missing`): a test's `require('..')` of the package whose
package.json "main" names a file the worktree does not have (node: "Please verify that the
package.json has a valid "main" entry"), usually the build's output (`dist/`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codegen_ci.gate.import_failures import (
    Frame,
    ImportFailure,
    collected_modules,
    import_failures,
)
from codegen_ci.gate.missing_dependencies import missing_dependencies
from codegen_ci.report import CommandResult
from codegen_ci.security.untrusted import strip_ansi
from codegen_ci.workspace import generated_files, git
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
    if main := package_main_missing(text, cwd):
        return main
    if not COLLECTING.search(text):
        return None
    missing = list(dict.fromkeys(MISSING.findall(text)))
    for name in missing:
        if where := repository_module(name, cwd):
            return _explain(name, where, cwd)
    if problem := package_not_importable(text, cwd):
        return problem
    return missing_dependencies(import_failures(text), cwd)


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


def _explain(name: str, where: str, cwd: Path) -> str:
    path = "src" if where.startswith("src/") else "."
    text = (
        f"the test command cannot import the repository's own module `{name}` "
        f"(No module named '{name}' while collecting the tests on the untouched code); it "
        f"exists in the repository at `{where}`, but nothing makes it importable. "
    )
    built = [rel for rel in generated_files.declared(cwd) if rel.startswith(where)]
    if built:  # PYTHONPATH alone would stop at the file the build writes
        return text + (
            f"The build writes {', '.join(built)} into it (pyproject.toml), so only an install "
            "makes it importable: `pip install -e .` with the interpreter the test command "
            "uses, in validation.setup or the workflow"
        )
    return text + (
        f"The setup must install the project (e.g. `pip install -e .` in validation.setup or "
        f"the workflow) or put it on PYTHONPATH (e.g. `PYTHONPATH={path}` before the test "
        f"command, or pytest's `pythonpath = {path}`)"
    )


# The package itself fails to import.

NEGLIGIBLE = 0.1  # the share of test modules that may still import for "every module failed"
NO_MODULE = re.compile(r"^(?:\w+\.)*ModuleNotFoundError: No module named '([\w.]+)'")
NO_NAME = re.compile(r"^ImportError: cannot import name '(\w+)' from '([\w.]+)' \(([^)]+)\)")
NO_METADATA = re.compile(r"PackageNotFoundError: (?:No package metadata was found for )?(\S+)")
COMPILE_ERROR = re.compile(r"^(?:SyntaxError|IndentationError|TabError)\b")
NOT_THE_REPOSITORY = ("site-packages", "dist-packages", ".venv", ".tox", ".nox", "node_modules")
TEST_DIRECTORIES = ("tests", "test", "testing")


def package_not_importable(text: str, cwd: Path) -> str | None:
    """Why the tests cannot import the project's package on the untouched code (in `cwd`),
    raised inside it, in every test module or all but a negligible share; None when not."""
    failures = import_failures(text)
    found = [(f, raised) for f in failures if (raised := package_cause(f, cwd))]
    if not found:
        return None
    failure, raised = found[0]
    if not any(f.conftest for f, _ in found):
        others = collected_modules(text, failures)
        if others is None:  # the output does not say: the repository's test files do
            others = max(0, test_files(cwd) - len(failures))
        total = len(failures) + others
        # hardly any module imports, and the package's own error is most of why (a module
        # that fails earlier, on a test dependency, would have failed on the package next)
        if len(failures) < total * (1 - NEGLIGIBLE) or len(found) * 2 < len(failures):
            return None
        modules = f"{len(found)} of {total} test modules fail"
    else:
        modules = f"a conftest ({failure.module}) fails"
    return (
        f"the tests cannot import the project's own package on the untouched code: {modules} "
        f"to import it, with the error raised inside the project's code, at "
        f"{raised.at.path}:{raised.at.line}:\n  {failure.error}\n{raised.cause}. What "
        "usually causes it: the project is not installed in the interpreter the test command "
        "uses (`pip install -e .` with that interpreter, in validation.setup or the workflow), "
        "a file the build writes is missing or stale (install or build the project first: "
        "`pip install -e .` writes it), or PYTHONPATH points at another copy of the package"
    )


@dataclass(frozen=True)
class Raised:
    at: Frame  # the deepest frame in the repository, its path relative to it
    cause: str  # what the environment lacks


def test_files(cwd: Path) -> int:
    """The Python test files git tracks in `cwd` (`test*.py`, `*_test.py`: pytest's and
    unittest's default patterns), for when a command's output does not list what it found."""
    names = git.git(["ls-files", "-z"], cwd, check=False).split("\0")
    base = [n.rsplit("/", 1)[-1] for n in names if n.endswith(".py")]
    return sum(1 for n in base if n.startswith("test") or n.endswith("_test.py"))


def package_cause(failure: ImportFailure, cwd: Path) -> Raised | None:
    """Where and why, when `failure` was raised inside the project's own code (its deepest
    frame in the repository is not test code) for what the environment lacks; None when it is
    the model's."""
    inside = [Frame(rel, f.line) for f in failure.frames if (rel := _relative(f.path, cwd))]
    if not inside or _test_file(inside[-1].path, failure):
        return None
    if cause := _cause(failure.error, inside[-1].path, cwd):
        return Raised(inside[-1], cause)
    return None


def _cause(error: str, deepest: str, cwd: Path) -> str | None:
    if match := NO_MODULE.match(error):
        return _missing_module(match[1], cwd)
    if match := NO_NAME.match(error):
        name, module, path = match.groups()
        if "partially initialized module" in error:
            return None  # a circular import: the code's
        rel = _relative(path, cwd)
        if rel is None:
            return (
                f"`{module}` is not the project's: the installed version of it has no `{name}` "
                "(another version than the project needs is installed)"
            )
        return _untracked(rel, cwd, f"`{rel}` has no `{name}`")
    if COMPILE_ERROR.match(error):
        return _untracked(deepest, cwd, f"`{deepest}` cannot be compiled")
    if match := NO_METADATA.search(error):
        return (
            f"the package reads its version from the installed metadata of `{match[1]}`, "
            "which the interpreter does not have: the project is not installed"
        )
    return None


def _missing_module(dotted: str, cwd: Path) -> str:
    top, *rest = dotted.split(".")
    if not (where := repository_module(top, cwd)):
        return (
            f"`{top}` is not the project's: a module the project imports that the "
            "interpreter the tests run with does not have installed"
        )
    base = where.rstrip("/").removesuffix(".py")
    rel = "/".join([base, *rest]) + ".py" if rest else where
    why = (
        "pyproject.toml says the build writes it; your checkout does not have it either, or "
        "it would have been copied: install the project there once"
        if rel in generated_files.declared(cwd)
        else "the repository does not hold it: a file the build or the install writes?"
    )
    return f"`{rel}` is not in the worktree ({why})"


def _untracked(rel: str, cwd: Path, what: str) -> str | None:
    """`what`, said of a file git does not track (a generated file); None when it tracks it:
    the repository's own code, the model's to fix."""
    if git.ok(["ls-files", "--error-unmatch", "--", rel], cwd):
        return None
    built = rel in generated_files.declared(cwd)
    said = ", that pyproject.toml says the build writes" if built else ""
    return f"{what}: a file git does not track{said}"


def _relative(path: str, cwd: Path) -> str | None:
    """`path` (relative to the repository, as pytest prints it, or absolute) relative to the
    repository, or None when it is outside it or inside an environment or dependency folder."""
    candidate = Path(path)
    if not candidate.is_absolute():
        rel = candidate.as_posix()
    else:
        try:
            rel = candidate.resolve().relative_to(cwd.resolve()).as_posix()
        except (OSError, ValueError):
            return None
    parts = rel.split("/")
    if ".." in parts or any(p in NOT_THE_REPOSITORY for p in parts):
        return None
    return rel


def _test_file(rel: str, failure: ImportFailure) -> bool:
    """Whether `rel` is test code: the failing test module itself, a conftest, a `test_*.py`
    or `*_test.py`, or a file under a tests folder."""
    name = rel.rsplit("/", 1)[-1]
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    if rel == failure.module or rel.endswith("/" + failure.module.replace(".", "/") + ".py"):
        return True
    return any(part in TEST_DIRECTORIES for part in rel.split("/")[:-1])


# Node: the package's own "main" is not there.

NODE_MAIN = re.compile(
    r"Cannot find module '([^']+)'\. Please verify that the package\.json has a valid "
    r"\"main\" entry"
)


def package_main_missing(text: str, cwd: Path) -> str | None:
    """Node could not load the repository's own package (a test's `require('..')`): the file
    its package.json names as "main" is not in the worktree, usually the build's output."""
    for match in NODE_MAIN.finditer(text):
        rel = _relative(match[1], cwd)
        if rel is None or (cwd / rel).exists():
            continue
        return (
            f"the tests cannot load the project's own package on the untouched code: its "
            f'package.json "main" is `{rel}`, which is not in the worktree (Cannot find '
            f"module '{match[1]}'). It is usually what the build writes (git-ignored): build "
            "it before the tests run (e.g. `npm run build` in validation.setup, or in the "
            'workflow), or point "main" at the source'
        )
    return None
