"""One definition of test file, test configuration and source file (workspace/file_kinds.py),
and its users (protect_tests in the agent's tools and the shell, the kept-tests check,
finalize's commit scope, eval's task mining) all asking it: they agree on a table of paths."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import codegen_ci
from codegen_ci.agent import tools
from codegen_ci.eval import history
from codegen_ci.gate import kept_tests
from codegen_ci.workspace import file_kinds, finalize, shell
from codegen_ci.workspace.file_kinds import is_protected_test_path, is_source_file, is_test_file

# path, test file, protected by protect_tests, source file
TABLE = [
    ("tests/test_parse.py", True, True, False),
    ("parse.py", False, False, True),
    ("src/latest.py", False, False, True),
    ("src/pkg/mod_test.go", True, True, False),
    ("web/__tests__/app.js", True, True, False),
    ("web/app.spec.ts", True, True, False),
    ("web/app.test.mjs", True, True, False),
    ("src/main/java/FooTest.java", True, True, False),
    ("spec/models/user_spec.rb", True, True, False),
    ("spec/models/user.rb", True, True, False),
    ("src/codegen_ci/spec/model.py", False, False, True),
    ("numpy/testing/utils.py", False, False, True),
    ("t/basic.t", True, True, False),
    ("tests/fixtures/data.json", True, True, False),
    ("pkg/tests/helpers.py", True, True, False),
    ("conftest.py", True, True, False),
    ("pkg/conftest.py", True, True, False),
    ("tox.ini", False, True, False),
    ("setup.cfg", False, True, False),
    ("jest.config.js", False, True, True),
    ("README.rst", False, False, False),
    ("pyproject.toml", False, False, False),
    (".github/workflows/test.yml", False, False, False),
    ("src/testdata.py", False, False, True),
    ("src/lib.rs", False, False, True),
]


@pytest.mark.parametrize(("path", "test", "protected", "source"), TABLE)
def test_a_path_is_a_test_file_protected_a_source_file_or_neither(
    path: str, test: bool, protected: bool, source: bool
) -> None:
    assert (is_test_file(path), is_protected_test_path(path), is_source_file(path)) == (
        test,
        protected,
        source,
    )


def test_every_user_asks_the_one_definition() -> None:
    assert tools.is_protected_test_path is file_kinds.is_protected_test_path
    assert shell.is_protected_test_path is file_kinds.is_protected_test_path
    assert kept_tests.is_test_file is file_kinds.is_test_file
    assert history.is_test_file is file_kinds.is_test_file
    assert history.is_source_file is file_kinds.is_source_file
    assert finalize.is_source_file is file_kinds.is_source_file


def test_the_commit_scope_counts_source_files_not_tests() -> None:
    changes = ["tests/cli/test_a.py", "web/cli/app.spec.ts", "tox.ini", "pkg/parser/mod.py"]
    assert finalize.commit_scope(changes) == "parser"


def test_no_other_module_defines_what_a_test_or_source_file_is() -> None:
    src = Path(codegen_ci.__file__).parent
    own = src / "workspace" / "file_kinds.py"
    defined = []
    for path in src.rglob("*.py"):
        if path == own:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(("is_test", "is_source")):
                defined.append(f"{path.relative_to(src)}:{node.name}")
            if isinstance(node, ast.Assign):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                if names & {"TEST_GLOBS", "TEST_NAME", "SOURCE_SUFFIXES"}:
                    defined.append(f"{path.relative_to(src)}:{sorted(names)}")
    assert defined == []
