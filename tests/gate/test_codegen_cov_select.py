"""codegen_cov_select, the coverage run's test selection where only the C tracer exists: the
files that import a changed module (directly, through other modules, relative imports, a
conftest.py above a test), read with `ast`."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

import pytest

from codegen_ci.gate.codegen_cov_select import has_test_file, iter_cases, kept, reaching, selected

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/a.py": "X = 1\n",
    "src/pkg/b.py": "from .a import X\n",
    "src/pkg/c.py": "import os\n",
    "src/pkg/d.py": "from pkg import b\n",
    "tests/test_b.py": "import pkg.b\n",
    "tests/test_c.py": "from pkg.c import *\n",
    "tests/test_d.py": "def test():\n    from pkg.d import b\n",
    "tests/sub/conftest.py": "from pkg import a\n",
    "tests/sub/test_e.py": "def test_e(fixture):\n    pass\n",
    "tests/broken.py": "def (:\n",
    ".venv/lib/pkg/a.py": "",
    "env/pyvenv.cfg": "",
    "env/lib/test_x.py": "import pkg.a\n",
}


def tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_files_that_import_a_changed_module_directly_or_not(tmp_path: Path) -> None:
    reached = reaching(tree(tmp_path), ["src/pkg/a.py"])

    assert reached == {
        "src/pkg/a.py",
        "src/pkg/b.py",  # from .a
        "src/pkg/d.py",  # from pkg import b
        "tests/test_b.py",
        "tests/test_d.py",  # an import inside a test
        "tests/sub/conftest.py",
    }


def test_a_test_is_kept_when_it_or_a_conftest_above_it_imports_the_change() -> None:
    reached = {"tests/test_b.py", "tests/sub/conftest.py", "conftest.py"}
    assert kept("tests/test_b.py", reached)
    assert kept("tests/sub/deeper/test_e.py", reached)
    assert kept("anything/test_x.py", {"conftest.py"})
    assert not kept("tests/test_c.py", {"tests/test_b.py", "tests/sub/conftest.py"})


def test_a_selection_needs_a_test_file_or_conftest_that_imports_the_change() -> None:
    patterns = ["test_*.py", "check_*.py"]
    assert has_test_file({"src/pkg/a.py", "tests/check_a.py"}, patterns)
    assert has_test_file({"src/pkg/a.py", "tests/conftest.py"}, patterns)
    assert not has_test_file({"src/pkg/a.py", "src/pkg/b.py"}, patterns)  # reached dynamically


def test_a_unittest_suite_keeps_the_cases_of_modules_that_import_the_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `python -m codegen_cov_select` runs instead of the loaded suite."""
    tree(tmp_path)
    case = (
        "import unittest\n{}\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"
    )
    (tmp_path / "covsel_suite").mkdir()
    (tmp_path / "covsel_suite" / "__init__.py").write_text("")
    (tmp_path / "covsel_suite" / "test_u1.py").write_text(case.format("import pkg.a"))
    (tmp_path / "covsel_suite" / "test_u2.py").write_text(case.format("import pkg.c"))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite(
        loader.loadTestsFromName(name) for name in ("covsel_suite.test_u1", "covsel_suite.test_u2")
    )
    reached = reaching(tmp_path, ["src/pkg/a.py"])
    assert reached is not None

    chosen = selected(suite, tmp_path.resolve(), reached)

    assert [type(t).__module__ for t in iter_cases(chosen)] == ["covsel_suite.test_u1"]
    for name in (
        "covsel_suite.test_u1",
        "covsel_suite.test_u2",
        "covsel_suite",
        "pkg",
        "pkg.a",
        "pkg.c",
    ):
        sys.modules.pop(name, None)
