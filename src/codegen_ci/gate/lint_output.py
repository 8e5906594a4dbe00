"""Linter output -> errors as `path:line: message`, for the report and the reflection."""

from __future__ import annotations

import re

_PATH = r"(?P<path>[\w./\\~-]+\.\w+)"
LINT_LINE = re.compile(_PATH + r":(?P<line>\d+)(?::\d+)?:?\s+(?P<msg>\S.*)$")  # flake8, mypy
LINT_ARROW = re.compile(r"^\s*-->\s*" + _PATH + r":(?P<line>\d+)")  # ruff/rustc full format
LINT_STYLISH = re.compile(r"^\s+(?P<line>\d+):\d+\s+(?P<msg>(?:error|warning)\s+.+)$")  # eslint
MAX_LINT_ERRORS = 50
GO_VET_PREFIX = "vet: "  # go vet's type-check errors: `vet: pkg/file.go:6:17: cannot use ...`


def lint_errors(output: str) -> list[str]:
    """Errors as `path:line: message` from the usual linter formats (flake8/ruff concise/mypy/
    pylint/go vet `path:line[:col]: message`, ruff/rustc full `CODE message` + `--> path:line:col`,
    eslint stylish); empty when none is recognised (the caller then shows the raw output)."""
    errors: list[str] = []
    header, current_file = "", ""
    for raw in output.splitlines():
        line = raw.rstrip()
        if arrow := LINT_ARROW.match(line):
            errors.append(f"{arrow['path']}:{arrow['line']}: {header}")
        elif flat := LINT_LINE.match(line.strip().removeprefix(GO_VET_PREFIX)):
            errors.append(f"{flat['path']}:{flat['line']}: {flat['msg'].strip()}")
        elif (stylish := LINT_STYLISH.match(line)) and current_file:
            errors.append(f"{current_file}:{stylish['line']}: {' '.join(stylish['msg'].split())}")
        elif re.fullmatch(_PATH, line):
            current_file = line
        elif line.strip() and not line.startswith((" ", "|")):
            header = line.strip()
        if len(errors) >= MAX_LINT_ERRORS:
            break
    return errors


def lint_key(error: str) -> str:
    """An error without its line number (`path: message`), to compare runs of a linter on
    code whose lines moved: the base commit's errors against a round's."""
    return re.sub(r"^([^:]+):\d+(?::\d+)?:", r"\1:", error)
