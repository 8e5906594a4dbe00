"""Which kind of check a shell line is (test, lint, a setup install, or something `init`
leaves out, with the reason), and the form it is written in: the repository's interpreter
named explicitly (`.venv/bin/python -m pytest`, not a bare `pytest` that PATH resolves), and
a tool that rewrites files in its checking form (`ruff check --no-fix`, `prettier --check`,
`black --check`, `gofmt -l` failing on output), since the gate must report, not repair.

The lines come from CI workflows (`init_ci.py`) and tox environments (`init_tox.py`)."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from codegen_ci import runners

CheckKind = Literal["test", "lint", "setup"]

# `cd web && ` in front of a CI line (its working directory), and `VAR=value ` assignments.
DIR_PREFIX = re.compile(r"^(cd\s+\S+\s+&&\s+)")
ASSIGNMENTS = re.compile(r"^((?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S)*\s+)*)")
PY_RUNNER = re.compile(
    r"^(?:uv\s+run|uvx|uv\s+tool\s+run|pipx\s+run|poetry\s+run|pipenv\s+run|pdm\s+run|rye\s+run|"
    r"hatch\s+run)\s+"
    r"(?:(?:--(?:group|extra|with|from|spec|python|package|env|directory|project)|-[pe])[=\s]\S+\s+|"
    r"--?[\w-]+\s+)*"
)
VENV_BIN = re.compile(r"^(?:\S*/)?\.?venv/bin/(?=\S)")
PY = re.compile(r"^python(?:3(?:\.\d+)?)?(?=\s|$)")
COVERAGE = re.compile(
    r"^(?:python(?:3(?:\.\d+)?)?\s+-m\s+)?coverage\s+run\s+(?:-(?!m\b)\S+\s+)*(?:-m\s+)?"
)
PY_TOOLS = (
    "pytest",
    "mypy",
    "ruff",
    "flake8",
    "pycodestyle",
    "black",
    "isort",
    "pylint",
    "pyright",
    "tox",
    "nox",
)

PUBLISH = re.compile(
    r"(?<!-)\b(?:publish|deploy|upload|release|twine|outdated|audit|codecov|coveralls|docker\s+(?:push|login)|"
    r"git\s+push|gh\s|curl|wget|aws\s|gcloud|az\s|ssh|scp|rsync)\b"
)
INSTALL = re.compile(
    r"^(?:sudo\s|apt(?:-get)?\s|brew\s|choco\s|yum\s|dnf\s|apk\s|corepack\b|rustup\b|"
    r"(?:python3?\s+-m\s+)?pip3?\s+install\b|uv\s+(?:sync|pip\s+install|tool\s+install)\b|"
    r"(?:poetry|pipenv|pdm|hatch)\s+install\b|pipx\s+install\b|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:ci|install|i|add)\b|yarn$|pnpm\s+fetch\b|"
    r"go\s+(?:mod\s+download|get|install)\b|cargo\s+(?:install|fetch|binstall)\b|"
    r"pre-commit\s+install\b|nvm\s|npm\s+config\b|git\s+config\b|git\s+submodule\b)"
)
# An install that writes into the worktree, so setup may repeat it there.
INTO_WORKTREE = re.compile(
    r"^(?:npm\s+(?:ci|install|i)|pnpm\s+install|yarn(?:\s+install)?|bun\s+install)(?:\s+(?!-g\b|--global\b)\S+)*\s*$"
)
BUILD = re.compile(
    r"^(?:(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:build|docs?|bundle|compile|pack|dist)\b|"
    r"(?:cargo|go)\s+(?:build|doc|run|bench|docs-rs)\b|python3?\s+-m\s+build\b|python3?\s+setup\.py\s+"
    r"(?:sdist|bdist|build)|make(?:\s+(?:build|all|docs?|dist|install))?$|docker\b|"
    r"mkdocs\b|sphinx-build\b|(?:npx\s+)?tsc(?!.*--noEmit)(?:\s|$)|ls\b|cat\b|git\b)"
)
LINT = re.compile(
    r"^(?:(?:npx|pnpm\s+exec|yarn|bunx)\s+)?(?:ruff|flake8|pylint|mypy|pyright|black|isort|"
    r"pyflakes|pycodestyle|pydocstyle|eslint|prettier|biome|standard|xo|tsc\s.*--noEmit|"
    r"vue-tsc|svelte-check|tsd\b|go\s+vet|golangci-lint|staticcheck|gofmt|go\s+fmt|"
    r"cargo\s+(?:clippy|fmt)|rustfmt|shellcheck|actionlint|yamllint|markdownlint|codespell|"
    r"lint-imports|check-manifest|validate-pyproject|stubtest)\b"
)
NPM_SCRIPT = re.compile(r"^(npm|pnpm|yarn|bun)\s+(?:run(?:-script)?\s+)?([\w:.-]+)(.*)$")
LINT_SCRIPT = re.compile(
    r"^(?:lint|typecheck|type-check|types|tsc|check-types|check-type|typings|format:check|"
    r"fmt:check|prettier:check|check-format|check|lint:.*|types:.*|typecheck:.*|test-types|"
    r"test:types|test:lint|test-tsd)$"
)
# Test commands no runner of runners/ owns; a runner's own is its `CI_TEST` (`runs_tests`).
TEST = re.compile(
    r"^(?:tox|(?:python3?\s+-m\s+)?nox|python3?\s+-m\s+\S*tests?\b\S*|python3?\s+\S*tests?\S*\.py|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test(?::\S+)?|(?:npx\s+)?(?:ava|tap)\b|"
    r"make\s+(?:tests?|check)|ctest|bats)\b"
)
PIPED_INSTALL = re.compile(r"\b(?:curl|wget)\b[^|]*\|\s*(?:sudo\s+)?(?:ba|z)?sh\b")


def runs_tests(line: str) -> bool:
    """A test command: some runner's (runners/: `CI_TEST`), or one no runner owns."""
    return bool(TEST.match(line)) or runners.ci_test(line)


PRE_COMMIT = re.compile(r"^(?:pre-commit|prek)\s+run\b")  # prek: pre-commit in Rust, same config


@dataclass(frozen=True)
class Judged:
    """A line's kind, or None with the reason it is left out."""

    kind: CheckKind | None
    why: str = ""


def judge(
    line: str, scripts: dict[str, str], venv_in_repo: bool, *, package: bool = False
) -> Judged:
    """What a shell line from CI is. `scripts` are package.json's (to look through `npm run x`;
    with `package`, they are those of the package.json the line runs under, and `npm run` of a
    script it lacks is left out); a `pip install` repeats in setup only into the repository's
    own venv."""
    body = bare(line)
    if INSTALL.match(body):
        if INTO_WORKTREE.match(body) or (venv_in_repo and "pip install" in body):
            return Judged("setup")
        return Judged(
            None,
            "installs outside the worktree (into this machine's toolchain: do it once yourself)",
        )
    if PUBLISH.search(body):
        if PIPED_INSTALL.search(body):  # `curl -sfL .../install.sh | sh -s -- -b DIR`
            return Judged(None, "downloads and installs a tool (install it once yourself)")
        return Judged(None, "publishes, deploys or talks to a service")
    if PRE_COMMIT.match(body):
        return Judged(None, "pre-commit installs its hooks from the network")
    if re.match(r"^cargo\s+(?:miri|fuzz|\+nightly)\b", body):
        return Judged(None, "needs a nightly Rust toolchain (miri, fuzz)")
    if re.match(r"^(?:docker|podman)\b", body):
        return Judged(None, "runs containers, not a check of the code")
    script = NPM_SCRIPT.match(body)
    via_run = body.split()[1:2] in (["run"], ["run-script"])
    if package and script and via_run and script[1] in ("npm", "pnpm") and script[2] not in scripts:
        # CI's `if ...; then npm run test-ci; else npm test; fi`: the branch for a script this
        # package.json lacks fails with "Missing script" wherever it runs
        return Judged(None, f"runs the script `{script[2]}`, which package.json does not have")
    if (
        script
        and script[1] != "npm"
        and script[2] not in scripts
        and not via_run
        and script[2] not in ("test", "t", "ci", "install", "i")
    ):
        # `pnpm vitest --coverage`, `yarn eslint .`: pnpm, yarn and bun run a package's binary
        # by its name when no script has it
        tool = re.sub(r"^(?:exec|x|dlx)\s+", "", f"{script[2]}{script[3]}".strip())
        return judge(tool, scripts, venv_in_repo, package=package)
    if script and script[2] not in ("test", "t", "exec", "x", "dlx", "ci", "install", "i"):
        name, text = script[2], scripts.get(script[2], "")
        if LINT_SCRIPT.match(name) or LINT.match(text.strip()):
            return Judged("lint")
        if runs_tests(text.strip()) or name.startswith("test"):
            return Judged("test")
        if BUILD.match(f"npm run {name}") or BUILD.match(text.strip()):
            return Judged(None, "a build, not a check")
        return Judged(None, "a script that is neither a test nor a lint")
    if LINT.match(body) or LINT.match(re.sub(r"^python3?\s+-m\s+", "", body)):
        return Judged("lint")
    if runs_tests(body):
        return Judged("test")
    if BUILD.match(body):
        return Judged(None, "a build, not a check")
    return Judged(None, "not a recognised test or lint command")


def bare(line: str) -> str:
    """The command itself: no `cd dir &&` in front, no variable assignments, no runner wrapper
    (`uv run`, `uvx`, `pipx run`, `poetry run`, `coverage run -m`)."""
    body = DIR_PREFIX.sub("", line.strip())
    body = body[ASSIGNMENTS.match(body).end() :]  # type: ignore[union-attr]
    body = PY_RUNNER.sub("", body)
    body = VENV_BIN.sub("", body)  # `.venv/bin/mypy`: the tool, run by the interpreter init names
    coverage = COVERAGE.match(body)
    if coverage:  # coverage measures, the check is what it runs: a module or a script
        rest = body[coverage.end() :]
        return f"python -m {rest}" if coverage[0].rstrip().endswith("-m") else f"python {rest}"
    return body


def folder_of(line: str) -> str:
    """The folder a `cd DIR && …` line runs in, relative to the repository's root ("" for the
    root, or when DIR is not a plain relative path: `$VAR`, `~`, absolute)."""
    prefix = DIR_PREFIX.match(line.strip())
    if not prefix:
        return ""
    target = prefix[1].split()[1].strip("'\"")
    if target.startswith(("/", "~", "$")) or "$" in target:
        return ""
    folder = posixpath.normpath(target)
    return "" if folder == "." else folder


def seen_from(folder: str, path: str) -> str:
    """`path`, relative to the repository's root, as a command that ran `cd folder` names it:
    `.venv/bin/python` from `tests` is `../.venv/bin/python` (jmespath's CI: `cd tests/ &&
    py.test`). A bare name (`python`, found on PATH) and an absolute path stay as they are."""
    if not folder or "/" not in path or path.startswith("/"):
        return path
    return posixpath.relpath(path, folder)


def explicit(line: str, python: str) -> str:
    """The line in the form init writes: the interpreter named (as seen from the folder the line
    runs in), wrappers gone, checking form."""
    prefix_match = DIR_PREFIX.match(line.strip())
    prefix = prefix_match[1] if prefix_match else ""
    folder = folder_of(line)
    if folder:  # the venv is the repository's, at its root: CI's checkout has none to walk
        return prefix + _explicit_body(line, seen_from(folder, python), exclude_venv=False)
    return prefix + _explicit_body(line, python, exclude_venv=True)


def _explicit_body(line: str, python: str, *, exclude_venv: bool) -> str:
    prefix_match = DIR_PREFIX.match(line.strip())
    prefix = prefix_match[1] if prefix_match else ""
    rest = line.strip()[len(prefix) :]
    assignments = ASSIGNMENTS.match(rest)[1]  # type: ignore[index]
    body = bare(line)
    body = re.sub(r"^py\.test\b", "pytest", body)
    first = body.split(maxsplit=1)[0] if body else ""
    if first in PY_TOOLS and first not in ("tox", "nox") and python != "python":
        body = f"{python} -m {body}"
    elif first == "pytest":
        body = f"python -m {body}"
    elif first == "stubtest" and python != "python":  # mypy's, as the interpreter's module
        body = f"{python} -m mypy.{body}"
    elif first in ("pip", "pip3"):
        body = "python -m pip" + body[len(first) :]
    body = PY.sub(python, body)
    body = checking_form(body)
    return assignments + (venv_excluded(body, python) if exclude_venv else body)


# Linters that walk the folders they are given and skip only their own default list (`.git`,
# `.tox`, `__pycache__`, ...), which has no virtualenv in it. CI's checkout has none, so CI's
# `flake8 .` checks the project; in a checkout whose venv is inside it (the `.venv` init names
# and a workflow must create) it checks every installed package as well: thousands of
# failures that are no one's and a minute per round (python-slugify: 26,000 lines, 80 s).
# flake8 (3.8+) adds to its list with --extend-exclude; pycodestyle's --exclude replaces its
# defaults, so they are kept.
PYCODESTYLE_EXCLUDED = ".svn,CVS,.bzr,.hg,.git,__pycache__,.tox"


def venv_excluded(body: str, python: str) -> str:
    """flake8 or pycodestyle over the repository's root, with the repository's own venv
    (`python`'s, when it is in the repository) left out as CI's checkout, which has none,
    leaves it out."""
    if not python.endswith("/bin/python"):
        return body
    venv = python.removesuffix("/bin/python")
    words = body.split()
    index = _tool_index(words)
    if index is None or words[index] not in ("flake8", "pycodestyle"):
        return body
    tool, args = words[index], words[index + 1 :]
    paths = [a for a in args if not a.startswith("-")]
    excluded = {v for a in args if a.startswith("-") for v in a.split("=", 1)[-1].split(",")}
    if (paths and not {".", "./"} & set(paths)) or venv in excluded:
        return body
    head = words[: index + 1]
    if tool == "flake8":
        return " ".join([*head, f"--extend-exclude={venv}", *args])
    given = next((a for a in args if a.startswith("--exclude=")), None)
    if given is None:
        return " ".join([*head, f"--exclude={PYCODESTYLE_EXCLUDED},{venv}", *args])
    return " ".join([*head, *(f"{a},{venv}" if a == given else a for a in args)])


def checking_form(body: str) -> str:
    """A formatter or fixer in the form that reports instead of rewriting."""
    words = body.split()
    tool_index = _tool_index(words)
    if tool_index is None:
        return body
    tool = words[tool_index]
    args = words[tool_index + 1 :]
    head = words[: tool_index + 1]
    if tool == "ruff" and args[:1] == ["format"] and "--check" not in args:
        return " ".join([*head, "format", "--check", *args[1:]])
    if tool == "ruff" and (args[:1] == ["check"] or (args and args[0].startswith("."))):
        rest = [a for a in (args[1:] if args[:1] == ["check"] else args) if a != "--fix"]
        if "--no-fix" not in rest:
            rest = ["--no-fix", *rest]
        return " ".join([*head, "check", *rest])
    if tool == "black" and "--check" not in args:
        return " ".join([*head, "--check", *args])
    if tool == "isort" and not {"--check", "--check-only", "-c"} & set(args):
        return " ".join([*head, "--check-only", *args])
    if tool == "eslint" and "--fix" in args:
        return " ".join([*head, *(a for a in args if a not in ("--fix", "--fix-dry-run"))])
    if tool == "prettier" and {"--write", "-w"} & set(args):
        return " ".join([*head, *("--check" if a in ("--write", "-w") else a for a in args)])
    if tool == "biome" and "--write" in args:
        return " ".join([*head, *(a for a in args if a != "--write")])
    if tool in ("npm", "pnpm", "yarn", "bun") and "--fix" in args:  # `npm run lint -- --fix`
        kept = [a for a in args if a != "--fix"]
        return " ".join([*head, *(kept[:-1] if kept[-1:] == ["--"] else kept)])
    if tool == "gofmt":
        paths = [a for a in args if not a.startswith("-")] or ["."]
        return f'test -z "$(gofmt -l {" ".join(paths)})"'
    if tool == "go" and args[:1] == ["fmt"]:
        return 'test -z "$(gofmt -l .)"'
    if tool == "cargo" and args[:1] == ["fmt"] and "--check" not in args:
        return " ".join([*head, *args, "--check"] if "--" not in args else [*head, *args])
    return body


def _tool_index(words: list[str]) -> int | None:
    """Where the tool's name is: after `python -m`, `npx` and the like."""
    i = 0
    if i < len(words) and (PY.match(words[i]) or words[i].endswith("/python")):
        return i + 2 if words[i + 1 : i + 2] == ["-m"] and i + 2 < len(words) else None
    if words[i : i + 2] in (["pnpm", "exec"],):
        i += 2
    elif words[i : i + 1] in (["npx"], ["bunx"], ["yarn"]):
        i += 1
    return i if i < len(words) else None


def quote_argv(argv: list[str]) -> str:
    """An argument vector (tox's, pyproject's) as one shell line: globs and spaces quoted, so
    the shell passes them as tox would, unexpanded."""
    return " ".join(shlex.quote(a) for a in argv)
