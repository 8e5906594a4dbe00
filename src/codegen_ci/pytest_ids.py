"""pytest specifics: spotting a pytest command and re-running only chosen tests.

JUnit ids look like `tests.test_version.TestBump::test_minor[3]` (classname::name); pytest
wants node ids like `tests/test_version.py::TestBump::test_minor[3]`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PYTEST_TOKEN = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")
SHELL_OPERATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<", "(", ")"}
# pytest options that take a separate value, so the value is not mistaken for a test path.
VALUE_OPTIONS = {
    "-k", "-m", "-p", "-c", "-o", "-n", "-W", "--rootdir", "--confcutdir", "--basetemp",
    "--deselect", "--ignore", "--ignore-glob", "--cov", "--cov-report", "--maxfail",
    "--junitxml", "--junit-xml", "--tb", "--durations", "--import-mode", "--log-level",
    "--timeout", "--dist", "-r",
}  # fmt: skip
MAX_TARGETS = 200


def mentions_pytest(command: str) -> bool:
    return bool(PYTEST_TOKEN.search(command))


def node_id(junit_id: str, repo: Path) -> str | None:
    """The pytest node id for a JUnit id, when the test file can be found in `repo`."""
    if "::" not in junit_id:
        return None
    classname, name = junit_id.split("::", 1)
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if (repo / candidate).is_file():
            return "::".join([candidate, *parts[cut:], name])
    return None


def targeted_command(command: str, junit_ids: list[str], repo: Path) -> str | None:
    """`command` with its test paths replaced by the node ids of `junit_ids`; None when the
    command is not a plain pytest invocation or an id cannot be mapped."""
    if not mentions_pytest(command) or not junit_ids or len(junit_ids) > MAX_TARGETS:
        return None
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if any(t in SHELL_OPERATORS for t in tokens):
        return None
    nodes = [node_id(i, repo) for i in dict.fromkeys(junit_ids)]
    if not all(nodes):
        return None
    start = next(i for i, t in enumerate(tokens) if t.endswith(("pytest", "py.test"))) + 1
    kept, skip_next = tokens[:start], False
    for token in tokens[start:]:
        if skip_next:
            kept.append(token)
            skip_next = False
        elif token in VALUE_OPTIONS:
            kept.append(token)
            skip_next = True
        elif token.startswith("-") or not _is_path(token, repo):
            kept.append(token)
    return shlex.join([*kept, *(n for n in nodes if n)])


def _is_path(token: str, repo: Path) -> bool:
    return (repo / token.split("::", 1)[0]).exists()
