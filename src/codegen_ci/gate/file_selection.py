"""A test command narrowed to the tests of some files, per runner.

The check of edited tests (gate/original_tests.py) runs only the tests of the files the change
edited: pytest gets the files as paths (a `conftest.py` stands for its folder), `python -m
unittest` `-k` patterns of their modules' names (gate/unittest_commands.py), jest and vitest
get them as path filters, `go test` and gotestsum get a `-run` pattern of the files' top-level
test functions. None: the command is not one plain invocation of a runner we can narrow (a
script, `npm test`, cargo, pipes...), and the caller runs it in full, which is always correct,
only slower: the caller keeps only the cases of those files either way.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from codegen_ci.gate import pytest_commands, unittest_commands
from codegen_ci.runners.base import in_folder, plain_tokens
from codegen_ci.runners.pytest import mentions_pytest

SAFE_NAME = re.compile(r"^\w+$")
NODE_RUNNERS = ("jest", "vitest")
MAX_FILES = 50
VITEST_COMMANDS = ("run", "watch", "dev")


def narrowed(command: str, files: Sequence[str], go_tests: Sequence[str], tree: Path) -> str | None:
    """`command` running only the tests of `files` (repository-relative, in `tree`);
    `go_tests`: the top-level Go test functions those files declare. A command run from a
    folder (`cd DIR && …`, base.py's `in_folder`) is narrowed there: the files relative to
    DIR, and run in DIR again."""
    folder, inner = in_folder(command)
    found = _narrowed(inner, [folder.inward(f) for f in files], go_tests, folder.tree(tree))
    return None if found is None else folder.wrap(found)


def _narrowed(
    command: str, files: Sequence[str], go_tests: Sequence[str], tree: Path
) -> str | None:
    tokens = plain_tokens(command)
    if tokens is None or not files or len(files) > MAX_FILES:
        return None
    if mentions_pytest(command):
        return _pytest(tokens, files, tree)
    if unittest_commands.junit_command(command):
        return unittest_commands.with_files(command, files)
    names = [PurePosixPath(t).name for t in tokens]
    if any(n in NODE_RUNNERS for n in names):
        return _node(tokens, files)
    if "gotestsum" in names or tokens[:2] == ["go", "test"]:
        return _go(tokens, go_tests)
    return None


def _pytest(tokens: list[str], files: Sequence[str], tree: Path) -> str | None:
    paths = [
        str(PurePosixPath(f).parent) if PurePosixPath(f).name == "conftest.py" else f
        for f in files
        if f.endswith(".py")
    ]
    return pytest_commands.with_paths(tokens, list(dict.fromkeys(paths)), tree) if paths else None


def _node(tokens: list[str], files: Sequence[str]) -> str:
    """jest's positional arguments are patterns matched against test paths, vitest's are
    filters on them: the files themselves (escaped for jest's regular expressions), right
    after the runner (and vitest's `run`/`watch`): after an option that takes a list
    (`--reporters a b`) they would be read as its values."""
    at = next(i for i, t in enumerate(tokens) if PurePosixPath(t).name in NODE_RUNNERS)
    jest = PurePosixPath(tokens[at]).name == "jest"
    if not jest and at + 1 < len(tokens) and tokens[at + 1] in VITEST_COMMANDS:
        at += 1
    shown = [re.escape(f) if jest else f for f in files]
    return shlex.join([*tokens[: at + 1], *shown, *tokens[at + 1 :]])


def _go(tokens: list[str], go_tests: Sequence[str]) -> str | None:
    names = sorted({n for n in go_tests if SAFE_NAME.match(n)})
    if not names or any(t == "-run" or t.startswith(("-run=", "--run")) for t in tokens):
        return None
    pattern = "^(" + "|".join(names) + ")$"
    if tokens[:2] == ["go", "test"]:
        return shlex.join(["go", "test", "-run", pattern, *tokens[2:]])
    if "--" not in tokens:  # gotestsum alone tests ./...
        return shlex.join([*tokens, "--", "-run", pattern, "./..."])
    at = tokens.index("--")
    if not any(not t.startswith("-") for t in tokens[at + 1 :]):
        return None  # only flags after `--`: which packages gotestsum would pick is its own
    return shlex.join([*tokens[: at + 1], "-run", pattern, *tokens[at + 1 :]])
