"""The layout is checked, not hoped for: import-linter's contracts (`.importlinter`, one line of
why per rule), no import cycles anywhere in the package (type-checking imports included), and a
docstring on every stage folder saying what it takes and returns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "codegen_ci"
STAGES = [
    "spec",
    "sources",
    "workspace",
    "agent",
    "gate",
    "gate/junit",
    "publish",
    "security",
    "runners",
    "commands",
    "run",
    "testing",
]


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and " 0 broken" in result.stdout


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("codegen_ci")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    # A package's __init__ importing its own modules is not a cycle between stages.
    edges = {m: {n for n in targets if not m.startswith(n + ".")} for m, targets in edges.items()}
    assert _strongly_connected(edges) == []


def test_cycle_finder_sees_a_cycle() -> None:
    # Positive control for the check above.
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [{"a", "b", "c"}]


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_says_what_it_takes_and_returns(stage: str) -> None:
    init = PACKAGE / stage / "__init__.py"
    text = init.read_text(encoding="utf-8").lstrip()
    assert text.startswith('"""'), f"{init} has no docstring"
    assert len(text.split('"""')[1].strip()) > 40
