"""codegen_cov_run, the coverage run in the repository's interpreter: on CPython 3.10/3.11
slipcover records the changed file's lines (no tracer on while the tests run) and coverage.py
writes the report, line for line what coverage.py's own tracer reports; elsewhere, or without
the tool's slipcover, coverage.py's command line as before. Real pytest, slipcover and
coverage.py in this interpreter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from tests.helpers.coverage_ask import python_command as coverage_command
from tests.helpers.coverage_ask import python_env as select_env

needs_311 = pytest.mark.skipif(
    sys.implementation.name != "cpython" or not (3, 10) <= sys.version_info[:2] < (3, 12),
    reason="slipcover is used on CPython 3.10 and 3.11 only",
)
# What coverage.py counts differently from a code object's line table (multi-line statements,
# decorators, a docstring, an excluded line, a class body), beside lines that run and do not.
CALC = '''\
"""Calculations."""
import functools


def ran(a, b):
    total = (a +
             b)
    if total > 100:
        return 0  # never run
    return total


@functools.lru_cache(
    maxsize=None,
)
def cached(n):
    return [i * 2
            for i in range(n)
            if i % 2]


def never(x):
    y = x + 1
    return y


def excluded():  # pragma: no cover
    return 1


class Box:
    size = 3

    def grow(self):
        try:
            self.size += 1
        except TypeError:
            raise
        return {
            "size": self.size,
        }
'''
TESTS = """\
import sys
from pathlib import Path
from xml.etree import ElementTree

from calc import Box, cached, ran

Path("tracer.txt").write_text(repr(sys.gettrace()))


def test_ran():
    assert ran(2, 3) == 5


def test_cached():
    assert cached(4) == [2, 6]


def test_box():
    assert Box().grow() == {"size": 4}
"""


def project(root: Path) -> Path:
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TESTS)
    return root


def covered_run(
    root: Path,
    io: Path,
    *,
    slipcover: bool,
    broken_probe: bool = False,
    also: list[str] | None = None,
) -> tuple[dict[int | str, bool], str]:
    """runners/_python.py's command and environment for `python -m pytest`, calc.py
    changed; with the tool's slipcover or without it (its copy removed), or with a copy whose
    extension does not load (as one built for another platform): the report's lines (number ->
    ran) and what the run said."""
    io.mkdir()
    plain = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    sources = ["calc.py", *(also or [])]
    command = coverage_command(plain, sources, io, root, os.environ)
    assert command is not None
    env = select_env(os.environ, io / "tool", sources)
    if not slipcover:
        shutil.rmtree(io / "tool" / "coverage_plugin" / "vendor", ignore_errors=True)
    if broken_probe:
        (probe,) = (io / "tool" / "coverage_plugin" / "vendor" / "slipcover").glob("probe*.so")
        probe.write_bytes(b"not an ELF file")
    done = subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines: dict[int | str, bool] = {}
    for cls in ElementTree.parse(io / "coverage.xml").iter("class"):
        for line in cls.iter("line"):
            n = int(line.get("number", "0"))
            key = n if cls.get("filename") == "calc.py" else f"{cls.get('filename')}:{n}"
            lines[key] = line.get("hits") != "0"
    return lines, done.stderr + (root / "tracer.txt").read_text()


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[int | str, bool], str]:
    """coverage.py's own run of the project, without the tool's slipcover: what the slipcover
    run must match, and the run the tests without slipcover read (only read, never changed)."""
    tmp = tmp_path_factory.mktemp("traced")
    return covered_run(project(tmp / "repo"), tmp / "traced", slipcover=False)


@needs_311
def test_slipcover_records_the_lines_with_no_tracer_on_and_matches_coverage_py(
    tmp_path: Path, traced: tuple[dict[int | str, bool], str]
) -> None:
    root = project(tmp_path / "repo")

    lines, said = covered_run(root, tmp_path / "slip", slipcover=True)
    traced_lines, traced_said = traced

    assert "slipcover 1." in said and "records the lines run" in said
    assert said.endswith("None")  # the tests ran with no trace function: full speed
    assert "slipcover" not in traced_said and "CTracer" in traced_said  # coverage.py's tracer
    assert lines == traced_lines  # the same report, line for line
    ran = sorted(n for n, hit in lines.items() if hit)
    not_run = sorted(n for n, hit in lines.items() if not hit)
    assert not_run == [9, 23, 24, 37, 38]  # `return 0`, never()'s body, the except clause
    assert ran == [2, 5, 6, 8, 10, 13, 16, 17, 22, 31, 32, 34, 35, 36, 39]
    assert not {7, 14, 15, 18, 19, 40, 41} & set(lines)  # a statement's other lines
    assert 27 not in lines and 28 not in lines  # excluded by the pragma


def test_without_the_tools_slipcover_coverage_py_runs_as_before(
    traced: tuple[dict[int | str, bool], str],
) -> None:
    lines, said = traced

    assert "slipcover" not in said
    assert lines[10] and not lines[9] and not lines[23]


@needs_311
def test_a_slipcover_that_does_not_load_leaves_the_run_to_coverage_py(tmp_path: Path) -> None:
    root = project(tmp_path / "repo")

    lines, said = covered_run(root, tmp_path / "broken", slipcover=True, broken_probe=True)

    assert "codegen-ci coverage: slipcover does not load here" in said
    assert said.endswith(">") and "CTracer" in said  # coverage.py's tracer ran the tests
    assert lines[10] and not lines[9] and not lines[23]


@needs_311
def test_a_configured_source_reports_a_changed_file_no_test_imports_as_coverage_py_does(
    tmp_path: Path,
) -> None:
    """`[run] source` in the repository's configuration: coverage.py ignores `--include` and
    reports the files there that never ran; the slipcover run's report does the same."""
    root = project(tmp_path / "repo")
    (root / ".coveragerc").write_text("[run]\nsource = .\n")
    (root / "lonely.py").write_text("def f():\n    return 1\n")

    lines, said = covered_run(root, tmp_path / "slip", slipcover=True, also=["lonely.py"])
    traced, _ = covered_run(root, tmp_path / "traced", slipcover=False, also=["lonely.py"])

    assert "records the lines run" in said
    # coverage.py also reports the test file (`source` measures everything there); the change's
    # files, all diff-cover reads, are the same
    assert lines == {k: v for k, v in traced.items() if not str(k).startswith("test_calc.py")}
    assert {k: v for k, v in lines.items() if str(k).startswith("lonely.py")} == {
        "lonely.py:1": False,  # `def f` did not run: no test imports lonely.py
        "lonely.py:2": False,
    }
