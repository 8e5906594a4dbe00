"""pytest specifics: spotting a pytest command and re-running only chosen tests.

pytest's JUnit ids look like `tests.unit.test_version.TestBump::test_minor[3.4-x]`
(`classname::name`, the classname being the module's dotted path plus any classes); pytest
wants node ids like `tests/unit/test_version.py::TestBump::test_minor[3.4-x]`. A JUnit id is
mapped by finding the longest dotted prefix of the classname that is a file in the repository.

Validation prefers the `codegen_first` plugin (pytest_first.py), which needs no rewriting;
`targeted_command` is its fallback (the plugin refused, xdist on the command line), in
validation and in the baseline's re-runs on the base commit alike.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PYTEST_TOKEN = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")
# pytest options that take a separate value, so the value is not mistaken for a test path.
VALUE_OPTIONS = {
    "-k", "-m", "-p", "-c", "-o", "-n", "-W", "--rootdir", "--confcutdir", "--basetemp",
    "--deselect", "--ignore", "--ignore-glob", "--cov", "--cov-report", "--maxfail",
    "--junitxml", "--junit-xml", "--tb", "--durations", "--import-mode", "--log-level",
    "--timeout", "--dist", "-r", "--cov-config", "--cov-fail-under", "--override-ini",
}  # fmt: skip
JUNIT_OPTIONS = ("--junitxml", "--junit-xml")
# Past this many ids the command line gets unwieldy and the full suite is about as cheap.
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
    """`command` with its test paths replaced by the node ids of `junit_ids`.

    None when the command is not one plain pytest invocation (pipes, `&&`, redirections...),
    when there are no ids or too many, or when an id cannot be mapped to a file in `repo`:
    the caller then runs the full command, which is always correct, only slower.
    """
    if not mentions_pytest(command) or not junit_ids or len(junit_ids) > MAX_TARGETS:
        return None
    tokens = _plain_tokens(command)
    if tokens is None:
        return None
    start = next((i for i, t in enumerate(tokens) if t.endswith(("pytest", "py.test"))), None)
    nodes = [node_id(i, repo) for i in dict.fromkeys(junit_ids)]
    if start is None or not all(nodes):
        return None
    kept, takes_value = tokens[: start + 1], False
    for token in tokens[start + 1 :]:
        if takes_value:
            kept.append(token)
            takes_value = False
        elif token in VALUE_OPTIONS:
            kept.append(token)
            takes_value = True
        elif token.startswith("-") or not _is_path(token, repo):
            kept.append(token)
    return shlex.join([*kept, *(n for n in nodes if n)])


def junitxml_arg(command: str) -> str | None:
    """The report path a command passes pytest itself (`--junitxml=PATH`), if any: a command
    line option beats PYTEST_ADDOPTS, so that is where the report lands."""
    tokens = _plain_tokens(command) or []
    for n, token in enumerate(tokens):
        for option in JUNIT_OPTIONS:
            if token.startswith(option + "="):
                return token.split("=", 1)[1]
            if token == option and n + 1 < len(tokens):
                return tokens[n + 1]
    return None


def _plain_tokens(command: str) -> list[str] | None:
    """The words of a command without shell operators; None when it has any (or is not
    valid shell), since rewriting such a command could change what it does."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    if any(set(t) <= set("();<>|&") for t in tokens) or any("$" in t or "`" in t for t in tokens):
        return None
    return tokens


def _is_path(token: str, repo: Path) -> bool:
    return (repo / token.split("::", 1)[0]).exists()
