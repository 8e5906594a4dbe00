"""Every module or file the docs (docs/*.md, README.md, SECURITY.md) or a docstring (in src/
and tests/) names exists: a dotted module name under the package (`codegen_ci.gate.validation`),
a path such as `gate/validation.py` or `tests/e2e/run/test_run_e2e.py`, a file name in
backticks, and a bare name of words joined by underscores (a module's name as docstrings cite
it) that no module, file, identifier or string of the code knows. A failure lists every
dangling name with the place that names it."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "codegen_ci"
DOCS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]

DOTTED = re.compile(r"\bcodegen_ci(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# A path of ours: it starts at one of the repository's folders or one of the package's.
OUR_FOLDERS = (
    "src|tests|docs|bench|tools|host|examples|\\.ci|codegen_ci|agent|commands|eval|gate|"
    "junit|runners|publish|security|sources|spec|testing|workspace|helpers|e2e"
)
PATH = re.compile(
    rf"(?<![\w./-])((?:{OUR_FOLDERS})/(?:[\w.-]+/)*[\w.-]+\.(?:py|md|yml|yaml|toml|json))\b"
)
BARE = re.compile(r"`([A-Za-z_][\w-]*\.py)`")
SNAKE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9])(?![\w-])")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Names that stand for files of other repositories (the sample project the tests build, a
# user's project in an example, a real repository's history), never for files of ours.
NOT_OURS = {
    "tests/test_version.py",  # the sample repository (tests/helpers/sample_repo.py)
    "src/semver/version.py",
    "version.py",
    "tests/test_x.py",  # eval's classification of a project's files, by example
    "test_x.py",
    "x_test.py",
    "tests/test_parse.py",  # r1chardj0n3s/parse (tests/fixtures/history)
    "parse.py",
    "setup.py",
    "noxfile.py",
    "manage.py",
    "test.py",  # a project's root-level unittest module
    "_version.py",  # a project's generated version file
    "tests/unit/test_version.py",
    "tests/test_slugs.py",  # a TDD test of a module the task asks for (missing_dependencies.py)
    "test_slugs.py",
    "bench/results/latest.json",  # written by `python bench/run.py`, gitignored
}
# snake_case names that are not ours to define: kernel, GitHub and libc names; example ids.
NOT_MODULES = {
    "io_uring",
    "msg_name",  # struct msghdr's, and sendto's dest_addr
    "dest_addr",
    "pull_request_target",
    "ru_maxrss",
    "test_minor",
    "test_y",
    "x_spec",
}


def module_exists(dotted: str) -> bool:
    """`codegen_ci.a.b.c`: each part a subpackage or module, until a module (the rest are its
    attributes) or a name a package's __init__ defines or imports."""
    place = PACKAGE
    for part in dotted.split(".")[1:]:
        if (place / part / "__init__.py").is_file():
            place = place / part
            continue
        if (place / f"{part}.py").is_file():
            return True
        init = place / "__init__.py"
        return init.is_file() and re.search(rf"\b{part}\b", init.read_text()) is not None
    return True


def path_exists(name: str, near: Path) -> bool:
    bases = [ROOT, PACKAGE, ROOT / "src", ROOT / "tests", ROOT / "tests" / "helpers", near]
    bases += [PACKAGE / d for d in ("gate",)]  # gate/junit and gate/runners, named from gate/
    return any((base / name).exists() for base in bases)


def bare_exists(name: str, files: set[str]) -> bool:
    return name in files


def our_python() -> list[Path]:
    folders = [ROOT / name for name in ("src", "tests", "bench", "tools")]
    return [p for folder in folders for p in folder.rglob("*.py") if "fixtures" not in p.parts]


def every_file_name() -> set[str]:
    return {p.name for p in our_python()}


def known_names() -> set[str]:
    """Every module name, identifier, and word of a (non-doc) string literal in our code."""
    names: set[str] = set()
    for path in our_python():
        names.add(path.stem)
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME:
                names.add(token.string)
            elif token.type == tokenize.STRING and not token.string.startswith(('"""', "'''")):
                names.update(IDENTIFIER.findall(token.string))
    return names


def dangling_in(
    text: str, where: Path, first_line: int, files: set[str], names: set[str] | None = None
) -> Iterator[str]:
    for offset, line in enumerate(text.splitlines()):
        place = f"{where.relative_to(ROOT)}:{first_line + offset}"
        for match in DOTTED.finditer(line):
            if not module_exists(match.group(0)):
                yield f"{place}: module {match.group(0)}"
        for match in PATH.finditer(line):
            name = match.group(1)
            if name not in NOT_OURS and not path_exists(name, where.parent):
                yield f"{place}: file {name}"
        for match in BARE.finditer(line):
            name = match.group(1)
            if name not in NOT_OURS and not bare_exists(name, files):
                yield f"{place}: file {name}"
        for match in SNAKE.finditer(line if names is not None else ""):
            name = match.group(1)
            if names is not None and name not in names and name not in NOT_MODULES:
                yield f"{place}: name {name} (no module, file or identifier has it)"


def docstrings(path: Path) -> Iterator[tuple[str, int]]:
    """(docstring, line of its first line) of the module, its classes and its functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *ast.walk(tree)]
    for node in nodes:
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            value = body[0].value.value
            if isinstance(value, str):
                yield value, body[0].lineno


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "fixtures" not in p.relative_to(ROOT).parts)


@pytest.fixture(scope="module")
def files() -> set[str]:
    return every_file_name()


@pytest.fixture(scope="module")
def names() -> set[str]:
    return known_names()


def report(dangling: list[str]) -> str:
    unique = list(dict.fromkeys(dangling))
    return f"{len(unique)} dangling name(s):\n" + "\n".join(unique)


def test_the_docs_name_only_files_and_modules_that_exist(files: set[str], names: set[str]) -> None:
    dangling = [
        found
        for doc in DOCS
        for found in dangling_in(doc.read_text(encoding="utf-8"), doc, 1, files, names)
    ]
    assert not dangling, report(dangling)


@pytest.mark.parametrize("folder", ["src", "tests"])
def test_docstrings_name_only_files_and_modules_that_exist(
    folder: str, files: set[str], names: set[str]
) -> None:
    dangling = [
        found
        for path in python_files(ROOT / folder)
        for text, line in docstrings(path)
        for found in dangling_in(text, path, line, files, names)
    ]
    assert not dangling, report(dangling)


def test_control_a_dangling_name_is_reported_with_its_place(
    files: set[str], names: set[str]
) -> None:
    # the last name is built here, so that no string of the code holds it whole
    text = (
        "`codegen_ci.gate.no_such_module`, gate/no_such.py, `no_such_file.py`, in no_such" + "_x."
    )
    found = list(dangling_in(text, ROOT / "docs" / "x.md", 7, files, names))
    assert found == [
        "docs/x.md:7: module codegen_ci.gate.no_such_module",
        "docs/x.md:7: file gate/no_such.py",
        "docs/x.md:7: file no_such_file.py",
        "docs/x.md:7: name no_such" + "_x (no module, file or identifier has it)",
    ]
    assert (
        list(dangling_in("`codegen_ci.gate.validation`, gate/validation.py", ROOT, 1, files)) == []
    )
