"""A CI line that runs `make` targets, as the lines those targets run: CI's `make coverage` and
`make requirements check` are the Makefile's recipes (`coverage run -m unittest`, `ruff format
--check .`, `stubtest ...`), each then judged as any CI line is (`init_checks.py`), so init
writes the checks CI runs instead of leaving `make` out as "not recognised" and guessing from
the build files (more-itertools: CI's `make check` ran ruff and stubtest, init wrote `mypy .`,
which CI never ran and which failed on the untouched code).

The Makefile is read, never run (a `$(shell ...)` would run at parse time): rules, their
prerequisites that are targets of the same Makefile (first, as make runs them), recipes with
`\\` continuations, `$(MAKE) target` inside a recipe, and simple variables (`X = ...`, `:=`,
`?=`, `+=`, and `VAR=value` on the make line); a variable nobody defines is empty, as in make.
A recipe line that still needs make itself (a function such as `$(shell ...)` or
`$(wildcard ...)`, an automatic variable such as `$@`) is not unfolded: it is left out with the
reason. A line with options init does not know (`make -C dir`, `-f file`) or a target the
Makefile does not have is not unfolded at all (`None`): it is judged as written.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
MAKE_LINE = re.compile(r"^(?:\$\(MAKE\)|\$\{MAKE\}|make)(?:\s+(.*))?$")
ASSIGNMENT = re.compile(
    r"^(?:export\s+|override\s+)?([A-Za-z_][\w.-]*)\s*(\+=|:::?=|\?=|!=|=)(.*)$"
)
RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*(.*)$")
DIRECTIVE = re.compile(
    r"^(?:ifeq|ifneq|ifdef|ifndef|else|endif|include|-include|sinclude|define|endef|vpath|unexport)\b"
)
REFERENCE = re.compile(r"\$(?:\(([^()$]*)\)|\{([^{}$]*)\}|([A-Za-z_]))")
# what only make can expand: its functions and automatic variables
NEEDS_MAKE = re.compile(r"\$(?:[@<^?*%+|]|\([@<^?*%+|]|\{[@<^?*%+|]|\(\w+\s|\{\w+\s)")
MAX_DEPTH = 8
MAX_LINES = 200


@dataclass(frozen=True)
class Recipe:
    """One line a target runs, with the target it belongs to."""

    command: str
    target: str


@dataclass
class Unfolded:
    lines: list[Recipe] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (line, why)


@dataclass
class _Makefile:
    variables: dict[str, str]
    rules: dict[str, tuple[list[str], list[str]]]  # target -> (prerequisites, recipe)


def is_make(command: str) -> bool:
    return MAKE_LINE.match(command.strip()) is not None


def unfold(root: Path, command: str) -> Unfolded | None:
    """The lines `command` (a `make [VAR=value ...] target ...` line from CI, at the
    repository's root) runs; None when it cannot be unfolded (no Makefile, an option init
    does not know, a target the Makefile lacks: the line is then judged as written)."""
    match = MAKE_LINE.match(command.strip())
    path = next((root / n for n in MAKEFILES if (root / n).is_file()), None)
    if match is None or path is None:
        return None
    try:
        words = shlex.split(match[1] or "")
    except ValueError:
        return None
    makefile = _parse(path.read_text(encoding="utf-8", errors="replace"))
    targets = []
    for word in words:
        if assignment := re.match(r"^([A-Za-z_]\w*)=(.*)$", word):
            makefile.variables[assignment[1]] = assignment[2]
        elif re.match(r"^-(?:j\d*|k|s|i|B|-silent|-keep-going|-always-make)$", word):
            continue
        elif word.startswith("-"):
            return None
        else:
            targets.append(word)
    if not targets:
        targets = [next(iter(makefile.rules), "")]
    if any(t not in makefile.rules for t in targets):
        return None
    unfolded = Unfolded()
    done: set[str] = set()
    for target in targets:
        _run(makefile, target, unfolded, done, 0)
    return unfolded


def _run(makefile: _Makefile, target: str, out: Unfolded, done: set[str], depth: int) -> None:
    if target in done or depth > MAX_DEPTH or len(out.lines) > MAX_LINES:
        return
    done.add(target)
    prerequisites, recipe = makefile.rules[target]
    for prerequisite in _expand(" ".join(prerequisites), makefile.variables).split():
        if prerequisite in makefile.rules:
            _run(makefile, prerequisite, out, done, depth + 1)
    for raw in recipe:
        line = raw.lstrip("@-+ \t")
        if NEEDS_MAKE.search(line):
            out.left_out.append((line, f"Makefile target {target}: needs make to expand it"))
            continue
        line = " ".join(_expand(line, makefile.variables).split())
        if not line:
            continue
        inner = MAKE_LINE.match(line)
        if inner and inner[1] and all(w in makefile.rules for w in inner[1].split()):
            for name in inner[1].split():
                _run(makefile, name, out, done, depth + 1)
            continue
        out.lines.append(Recipe(line, target))


def _expand(text: str, variables: dict[str, str], depth: int = 0) -> str:
    if depth > MAX_DEPTH:
        return text

    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2] or match[3]
        return _expand(variables.get(name.strip(), ""), variables, depth + 1)

    return REFERENCE.sub(value, text.replace("$$", "\0")).replace("\0", "$")


def _parse(text: str) -> _Makefile:
    variables: dict[str, str] = {"MAKE": "make"}
    rules: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] | None = None
    for line in re.sub(r"\\\n[ \t]*", " ", text).splitlines():
        if line.startswith("\t"):
            if current is not None and line.strip() and not line.strip().startswith("#"):
                current.append(line.strip())
            continue
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped.strip():
            continue
        if DIRECTIVE.match(stripped.strip()):
            continue
        if assignment := ASSIGNMENT.match(stripped.strip()):
            name, op, value = assignment[1], assignment[2], assignment[3].strip()
            if op == "?=" and name in variables:
                continue
            if op == "+=":
                value = f"{variables.get(name, '')} {value}".strip()
            if op == "!=":  # a shell command's output: unknown here
                value = ""
            variables[name] = value
            current = None
            continue
        rule = RULE.match(stripped)
        if rule is None:
            current = None
            continue
        names = [n for n in rule[1].split() if not n.startswith(".") and "%" not in n]
        body, _, inline = rule[2].partition(";")
        current = [inline.strip()] if inline.strip() else []
        for name in names:
            if name not in rules:
                rules[name] = (body.split(), current)
        if not names:
            current = None
    return _Makefile(variables, rules)
