"""The forge seam: publishing is typed on `Forge` (publish/forge.py) everywhere but the GitHub
forge's own modules, so a second forge is new files. Read from the source tree (AST): no module
but publish/github.py and its retry policy imports PyGithub or names a `github.` type, and the
concrete `GitHubPublisher` appears outside them only where one is constructed, never as a type."""

from __future__ import annotations

import ast
import contextlib
import functools
from pathlib import Path

import codegen_ci
from codegen_ci.publish.forge import Forge
from codegen_ci.publish.github import GitHubPublisher, GitHubTarget

SRC = Path(codegen_ci.__file__).parent
GITHUB_FORGE = {SRC / "publish" / "github.py", SRC / "publish" / "github_retry.py"}
# Where a GitHub client is made (the forge chosen); each uses it as a `Forge` from there.
CONSTRUCTS = {
    SRC / "commands" / "action" / "__init__.py",
    SRC / "publish" / "local.py",
    SRC / "eval" / "texts.py",
}


@functools.cache  # parsed once per process; the trees are only read
def modules() -> list[tuple[Path, ast.Module]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path not in GITHUB_FORGE:
            found.append((path, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return found


def _annotations(tree: ast.Module) -> list[ast.expr]:
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
            out.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            out.append(node.returns)
    return out


def _names(expr: ast.expr) -> set[str]:
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    for const in ast.walk(expr):  # string annotations
        if isinstance(const, ast.Constant) and isinstance(const.value, str):
            with contextlib.suppress(SyntaxError):
                names |= _names(ast.parse(const.value, mode="eval").body)
    return names


def test_no_module_but_the_github_forge_imports_pygithub() -> None:
    leaks = []
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                leaks += [(path, a.name) for a in node.names if a.name.split(".")[0] == "github"]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                leaks += [(path, node.module)] if node.module.split(".")[0] == "github" else []
    assert leaks == []


def test_no_annotation_outside_the_github_forge_names_github_types() -> None:
    pygithub = {"Github", "Repository", "PullRequest", "IssueComment", "GithubException"}
    leaks = []
    for path, tree in modules():
        for annotation in _annotations(tree):
            named = _names(annotation)
            if named & (pygithub | {"GitHubPublisher"}):
                leaks.append((path.relative_to(SRC), ast.unparse(annotation)))
    assert leaks == []


def test_the_concrete_publisher_is_named_only_where_one_is_made() -> None:
    naming = set()
    for path, tree in modules():
        for node in ast.walk(tree):
            named = node.id if isinstance(node, ast.Name) else None
            named = node.name if isinstance(node, ast.alias) else named
            if named == "GitHubPublisher":
                naming.add(path)
    assert naming <= CONSTRUCTS, sorted(str(p.relative_to(SRC)) for p in naming - CONSTRUCTS)


def test_the_github_publisher_implements_every_forge_call_itself() -> None:
    """GitHubPublisher subclasses the Protocol (mypy checks the signatures); none of the
    Protocol's empty bodies may stand in for a call GitHub does not implement."""
    calls = {n for n, v in vars(Forge).items() if callable(v) and not n.startswith("_")}
    assert calls and calls <= set(vars(GitHubPublisher))
    target = GitHubTarget(api_url="http://127.0.0.1:9", repository="o/r", token="t")
    forge: Forge = GitHubPublisher(target)  # lazy: no request is made
    assert forge.own_login  # bound, callable
