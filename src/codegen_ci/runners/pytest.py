"""pytest: JUnit through `--junitxml` in PYTEST_ADDOPTS (a command line `--junitxml` beats
it), coverage through coverage.py, the examples of its doctests read from their sources (kept
tests). Re-running failing tests first is the harness's side (gate/pytest_commands.py and the
`codegen_first` plugin)."""

from __future__ import annotations

import ast
import doctest
import functools
import re
import shlex
from collections.abc import Mapping

from codegen_ci.runners import _python, base
from codegen_ci.runners.base import (
    CoverageAsk,
    CoveragePlan,
    EnvironmentAdvice,
    InitJUnit,
    Location,
    Signature,
    plain_tokens,
)

NAME = "pytest"
COMMAND = re.compile(r"\bpytest\b|\btox\b|\bnox\b")
# The word that starts pytest in a command (`pytest`, `py.test`, `python -m pytest`, a path).
TOKEN = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")

MARKERS: tuple[str, ...] = ()
SCRIPT_WORD: str | None = None
INIT: InitJUnit | None = InitJUnit(report="reports/junit-pytest.xml")
CI_TEST: re.Pattern[str] | None = re.compile(r"^(?:pytest|py\.test|python3?\s+-m\s+pytest)\b")
INSTALLS: tuple[tuple[str, str], ...] = ()
ci_tests = base.no_ci_tests
workflow_steps = base.no_workflow_steps
marked_tests = base.no_marked_tests

JUNIT_HINT: str | None = (
    "pytest: with `validation.junit` empty it gets "
    "`--junitxml` automatically; with globs set, pass `--junitxml=<file>` matching them"
)
ASKS_FOR_JUNIT: re.Pattern[str] | None = re.compile(r"--junit(?:xml)?\b")
JUNIT_FILE: re.Pattern[str] | None = base.report_after("--junitxml[= ]")
JUNIT_OPTIONS = ("--junitxml", "--junit-xml")


def mentions_pytest(command: str) -> bool:
    return bool(TOKEN.search(command))


junit_command = base.no_junit_command


def junit_env(env: Mapping[str, str], report: str) -> dict[str, str]:
    """`--junitxml` through PYTEST_ADDOPTS: any pytest the command starts (through make, tox,
    a script) writes the report; other runners ignore the variable."""
    addopts = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={shlex.quote(report)}"
    return {"PYTEST_ADDOPTS": addopts.strip()}


every_test = base.as_written


def junit_arg(command: str) -> str | None:
    """The report path a command passes pytest itself (`--junitxml=PATH`), if any: a command
    line option beats PYTEST_ADDOPTS, so that is where the report lands."""
    tokens = plain_tokens(command) or []
    for n, token in enumerate(tokens):
        for option in JUNIT_OPTIONS:
            if token.startswith(option + "="):
                return token.split("=", 1)[1]
            if token == option and n + 1 < len(tokens):
                return tokens[n + 1]
    return None


configured_reports = base.no_configured_reports
NESTED_CASES: base.NestedCases | None = None
case_id = base.no_case_id
from_output = base.no_from_output
refine = base.no_refine
whole_unit = base.no_whole_unit
defined_at = base.no_defined_at

# pytest's usage error (exit 4) for options it does not know: `--cov` without pytest-cov
# installed for the command's interpreter (hukkin/tomli-w's CI command).
SIGNATURES: tuple[Signature, ...] = (
    Signature(re.compile(r"^\S.*: error: unrecognized arguments: .+$", re.M), "options refused"),
)
NO_TESTS_EXIT: int | None = 5
NO_TOOLCHAIN: EnvironmentAdvice | None = None
DOWNLOADS: tuple[EnvironmentAdvice, ...] = ()
BACKTRACE: re.Pattern[str] | None = None
FAILED_TEST: str | None = r"FAILED \S+::"

FAILED_AT_TITLE = ""
FAILED_AT_LABEL = ""
LOCATIONS: tuple[Location, ...] = (base.PATH_LINE, base.PYTHON_FRAME)
LIBRARY_PATHS: tuple[str, ...] = base.PYTHON_LIBRARIES
failed_at = base.no_failed_at

CONFIG_GLOBS: tuple[str, ...] = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg")
USER_CACHES: tuple[tuple[str, str], ...] = ()
CHECKOUT_CACHES: tuple[str, ...] = ()
TMPDIR_CACHES: tuple[str, ...] = ()
user_caches = base.no_user_caches
is_checkout_cache = base.no_checkout_cache

ARTIFACT_GLOBS: tuple[str, ...] = (".pytest_cache/**",)

RAN_COUNT: re.Pattern[str] | None = None


named_tests = base.no_named_tests  # pytest always writes JUnit (PYTEST_ADDOPTS)


totals = base.no_totals


# -- doctests: how many examples of one run (gate/kept_tests.py's "weakened") -----------------
# pytest makes one test of each docstring (`--doctest-modules`) or text file (`--doctest-glob`)
# that holds examples, whatever their number: an example deleted, or marked `+SKIP`, leaves
# the test listed and passing, so only the examples that run tell. They are read from the
# file's text (`ast` for a module: the repository's code is never imported here), as
# doctest's parser reads them.
SKIP = doctest.OPTIONFLAGS_BY_NAME["SKIP"]
DOCTEST_PARSER = doctest.DocTestParser()


def doctest_examples(test_id: str, file: str, text: str) -> int | None:
    """How many examples of the doctest `test_id` run where `file` (relative to the
    repository) holds `text`; an example marked `# doctest: +SKIP` does not. `test_id`: its
    JUnit id, `<file's dotted path>::<module>.<qualified name>` for a docstring
    (`boltons.mathutils::boltons.mathutils.clamp`, `src.pkg.mod::pkg.mod.Class.method`; the
    module's own docstring: `pkg.mod::pkg.mod`), `<dotted path>::<file name>` for a text file
    (`docs.usage.rst::usage.rst`). None: `test_id` is no doctest of `file`, or `text` does not
    say (a definition not found, a module that does not parse, a docstring doctest refuses);
    0: its docstring is gone, or none of its examples runs."""
    classname, _, name = test_id.rpartition("::")
    classname = classname or name  # `top`, `README.rst`: junitxml's id when the two agree
    if not file.endswith(".py"):
        path = file.replace("/", ".")
        named = name == file.rsplit("/", 1)[-1]
        return _examples(text, name) if named and _same_path(classname, path) else None
    path = file[: -len(".py")].replace("/", ".")
    if not _same_path(classname, path):
        return None
    qualname = _qualname(name, path)
    if qualname is None:
        return None
    found = _docstring(text, qualname)
    return None if found is None else _examples(found, name)


def _same_path(classname: str, path: str) -> bool:
    """Whether a JUnit classname names the file whose dotted path is `path`: equal, or one a
    dotted suffix of the other (pytest's JUnit prefix option; a rootdir below the repository's
    root)."""
    return (
        classname == path
        or f".{classname}".endswith(f".{path}")
        or (f".{path}".endswith(f".{classname}"))
    )


def _qualname(name: str, path: str) -> str | None:
    """The qualified name within the module a doctest's `name` (`<module>.<qualname>`) has,
    "" for the module's own docstring; the module is the file's dotted path, or a dotted tail
    of it (`src.pkg.mod` is imported as `pkg.mod`; `pkg/__init__.py` as `pkg`). None: `name`
    names no object of that module."""
    parts = path.split(".")
    if parts[-1] == "__init__":
        parts.pop()
    for start in range(len(parts)):
        module = ".".join(parts[start:])
        if name == module:
            return ""
        if name.startswith(module + "."):
            return name[len(module) + 1 :]
    return None


Definition = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def _docstring(text: str, qualname: str) -> str | None:
    """The docstring of `qualname` in the module `text` (as doctest's finder reaches it: the
    module's, a function's, a class's and its methods', nested classes'), "" where the
    definition has none; a `__test__` entry (`__test__.name`): its string. None: not found,
    or `text` does not parse."""
    tree = _parsed(text)
    if tree is None:
        return None
    if qualname.startswith("__test__."):
        return _test_entry(tree, qualname[len("__test__.") :])
    node: Definition = tree
    for part in filter(None, qualname.split(".")):
        # the last definition of a name is the one the module ends with
        inner = [
            child
            for child in node.body
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and child.name == part
        ]
        if not inner:
            return None
        node = inner[-1]
    return ast.get_docstring(node, clean=False) or ""


def _test_entry(tree: ast.Module, key: str) -> str | None:
    """The string a module's `__test__ = {...}` gives `key` (doctest runs it as a docstring)."""
    for child in tree.body:
        if not (isinstance(child, ast.Assign) and isinstance(child.value, ast.Dict)):
            continue
        if not any(isinstance(t, ast.Name) and t.id == "__test__" for t in child.targets):
            continue
        for k, v in zip(child.value.keys, child.value.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key and isinstance(v, ast.Constant):
                return v.value if isinstance(v.value, str) else None
    return None


@functools.lru_cache(maxsize=8)  # one file's text, asked once for each of its doctests
def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _examples(docstring: str, name: str) -> int | None:
    """How many of `docstring`'s examples run (not `+SKIP`); None: doctest refuses it."""
    try:
        examples = DOCTEST_PARSER.get_examples(docstring, name)
    except ValueError:  # inconsistent indentation, a directive on a line of its own
        return None
    return sum(1 for example in examples if not example.options.get(SKIP, False))


def coverage_plan(command: str, ask: CoverageAsk) -> CoveragePlan | str | None:
    """`python -m pytest` and a bare `pytest` script under coverage.py (runners/_python.py)."""
    if _python.shape(command) not in ("pytest", "script"):
        return None
    return _python.coverage_plan(command, ask)


# the harness files of gate/ its runs load into its own process (see base.py)
PLUGINS: tuple[str, ...] = (
    "codegen_first.py",  # re-runs the failing tests first (gate/pytest_commands.py loads it)
    *_python.PLUGINS,  # the coverage run's
)
COVERAGE = (
    "coverage.py: `python -m pytest` and a bare `pytest` script run under `coverage run "
    "--include=<the change's sources>`, then `coverage xml` (runners/_python.py)"
)
