"""What kind of file a path names: the one definition of "test file", "test configuration"
and "source file", by path alone (no file is read). Every user asks here: the agent's and the
shell's `protect_tests` (agent/tools.py, workspace/shell.py), finalize's commit scope, the
kept-tests check (gate/kept_tests.py) and eval's task mining (eval/history.py), so they cannot
disagree about a path (tests/workspace/test_file_kinds.py holds the table).

- a *test file* holds tests: it sits under a test folder (`tests/`, `__tests__/`, Perl's
  `t/`; `spec/` for Ruby and JavaScript files) or its name says so in the language's
  convention (`test_x.py`, `x_test.go`, `x.spec.ts`, `FooTest.java`, `x_spec.rb`, ...);
- a *test configuration* decides how the tests run (`conftest.py`, `pytest.ini`, `tox.ini`,
  `setup.cfg`, `jest.config.*`, ...): `protect_tests` keeps the model out of both;
- a *source file* is code by its suffix and not a test file.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from codegen_ci import runners
from codegen_ci.workspace.paths import matches

__all__ = [
    "SOURCE_SUFFIXES",
    "TEST_CONFIG_GLOBS",
    "TEST_DIRS",
    "is_protected_test_path",
    "is_source_file",
    "is_test_file",
]

TEST_DIRS = frozenset({"test", "tests", "__tests__", "t"})
# Ruby's and JavaScript's spec folders hold tests; a Python, Go or Rust `spec/` is a module of
# the code (this repository's `codegen_ci/spec/`), and `testing/` is usually a library's
# helpers for its users (`numpy.testing`, `codegen_ci.testing`), not its tests.
SPEC_DIRS = frozenset({"spec", "specs"})
SPEC_DIR_SUFFIXES = frozenset({".rb", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"})
TEST_NAME = re.compile(
    r"^(test_.+\.py|.+_test\.py|.+_tests\.py|conftest\.py|.+_test\.go|.+_spec\.rb"
    r"|.+\.(test|spec)\.[cm]?[jt]sx?|.+(Test|Tests|Spec)\.(java|kt|scala|cs|swift)"
    r"|test_.+\.(c|cc|cpp|rs)|.+_test\.(c|cc|cpp|rs|exs))$"
)
# How the tests run: protected with the tests, though no test lives there (a test runner's own
# configuration is in its module: runners/, `CONFIG_GLOBS`).
TEST_CONFIG_GLOBS = (
    *runners.config_globs(),
    "phpunit.xml*",
    ".coveragerc",
    "noxfile.py",
)
_SOURCE_SUFFIXES = (
    ".py .pyi .pyx .js .mjs .cjs .jsx .ts .mts .cts .tsx .vue .svelte .go .rs .rb .java .kt "
    ".kts .scala .c .h .cc .cpp .cxx .hpp .hh .cs .fs .php .swift .m .mm .ex .exs .erl .clj "
    ".lua .pl .pm .sh .bash .r .jl .dart .hs .ml .zig .nim .sql"
)
SOURCE_SUFFIXES = frozenset(_SOURCE_SUFFIXES.split(" "))


def is_test_file(path: str) -> bool:
    """A file that holds tests (or their fixtures), by its folder or its name."""
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    folders = parts[:-1]
    if any(p in TEST_DIRS for p in folders) or TEST_NAME.match(parts[-1]):
        return True
    spec_dir = any(p in SPEC_DIRS for p in folders)
    return spec_dir and PurePosixPath(path).suffix.lower() in SPEC_DIR_SUFFIXES


def is_protected_test_path(path: str) -> bool:
    """What `protect_tests` keeps the model from writing: test files and test configuration."""
    return is_test_file(path) or matches(path, TEST_CONFIG_GLOBS)


def is_source_file(path: str) -> bool:
    """Code that is not a test file, by its suffix."""
    return not is_test_file(path) and PurePosixPath(path).suffix.lower() in SOURCE_SUFFIXES
