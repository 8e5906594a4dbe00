"""A unittest suite's per-test results: `python -m unittest ARGS` runs as `python -m
codegen_unittest ARGS` (gate/codegen_unittest.py), the same interpreter, arguments, discovery
and tests, through unittest's own `main`, which also writes a JUnit report. So a round of a
unittest suite has totals and failing test ids (for the reflection and the base-commit
comparison) instead of an exit code alone, whether or not pytest is installed.

Which commands run so is the unittest runner's knowledge (runners/unittest.py: a command that is
exactly `<python> -m unittest ...`); anything else (a Makefile, `tox`, `python -I -m unittest`)
runs as written, and its JUnit stays unknown unless the runner writes some. This module is the
harness's side: the runner's file put where the command can read it, and the command narrowed
to chosen tests (a re-run of failing tests, gate/test_runs.py) or test files (the check of
edited tests, gate/file_selection.py).

Narrowing adds unittest's own `-k` patterns (Python 3.7+) instead of naming the tests: `-k`
filters what the command's own discovery loads, so its start and top-level folders, pattern
and options stay as they are, and a test's full name (`module.Class.test_x`, its JUnit id's
`classname.name`) matches whatever folder the module's name is relative to.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from codegen_ci.runners.base import in_folder, plain_tokens, with_tool_path
from codegen_ci.runners.unittest import RUNNER, junit_command

__all__ = [
    "JUNIT_ENV",
    "RUNNER_SOURCE",
    "junit_command",
    "prepare",
    "targeted_command",
    "with_files",
]

# The runner's file, copied into the tool's read-only folder; never imported here.
RUNNER_SOURCE = Path(__file__).with_name(f"{RUNNER}.py")
JUNIT_ENV = "CODEGEN_UNITTEST_JUNIT"


def prepare(env: Mapping[str, str], tool_dir: Path, report: Path) -> dict[str, str]:
    """The environment for one run through the runner: `tool_dir` (the tool's own, read-only
    to commands) gets `unittest_runner/codegen_unittest.py`, on PYTHONPATH; the report goes to
    `report` (in the command's fresh writable folder)."""
    runner_dir = tool_dir / "unittest_runner"
    runner_dir.mkdir(parents=True, exist_ok=True)
    runner = runner_dir / f"{RUNNER}.py"
    if not runner.is_file():
        shutil.copyfile(RUNNER_SOURCE, runner)
    out = with_tool_path(env, runner_dir)
    out[JUNIT_ENV] = str(report)
    return out


# A test's full name: dotted identifiers (no pattern characters for `-k`'s fnmatch).
FULL_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
LOADER_ERRORS = "unittest."  # `unittest.loader._FailedTest...`: a module that did not load
PATTERN_OPTION = "-k"
MAX_TARGETS = 200  # past this many the command line gets unwieldy; the full suite answers


def targeted_command(command: str, junit_ids: Sequence[str]) -> str | None:
    """`command` running only the tests `junit_ids` name (`pkg.mod.Class::test_x`); None when
    it is not a plain `python -m unittest ...` or an id names no single test (a subtest's, a
    class's setUpClass, a module that failed to load): the caller runs it in full."""
    names = []
    for junit_id in dict.fromkeys(junit_ids):
        classname, sep, name = junit_id.partition("::")
        full = f"{classname}.{name}"
        if not sep or not FULL_NAME.match(full) or full.startswith(LOADER_ERRORS):
            return None
        names.append(full)
    if not names or len(names) > MAX_TARGETS:
        return None
    # `*` makes `-k` match the whole name (a pattern without one matches any substring)
    return _with_patterns(command, [f"*{n}" for n in names])


def with_files(command: str, files: Sequence[str]) -> str | None:
    """`command` running only the tests of `files` (repository-relative): a module's name is
    its path's dotted tail from the top-level folder on, whichever that is."""
    patterns: list[str] = []
    for path in (PurePosixPath(f) for f in files if f.endswith(".py")):
        parts = [*path.parent.parts, path.stem]
        if not all(FULL_NAME.match(f"m.{p}") for p in parts):
            return None
        patterns += [".".join(parts[i:]) + ".*" for i in range(len(parts))]
    return _with_patterns(command, list(dict.fromkeys(patterns))) if patterns else None


def _with_patterns(command: str, patterns: list[str]) -> str | None:
    """The command with its own `-k` patterns (whose tests hold these) replaced by
    `patterns`, added at its end, where both unittest's and `discover`'s options parse (a
    command run from a folder, `cd DIR && …`: in DIR again; the patterns name tests, not
    paths)."""
    folder, inner = in_folder(command)
    if folder.path:
        found = _with_patterns(inner, patterns)
        return None if found is None else folder.wrap(found)
    tokens = plain_tokens(command)
    if junit_command(command) is None or tokens is None or "--" in tokens:
        return None
    kept: list[str] = []
    after_k = False
    for word in tokens:
        if after_k:
            after_k = False
        elif word == PATTERN_OPTION:
            after_k = True
        elif not word.startswith(PATTERN_OPTION):
            kept.append(word)
    return shlex.join([*kept, *(a for p in patterns for a in (PATTERN_OPTION, p))])
