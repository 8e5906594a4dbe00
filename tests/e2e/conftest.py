"""Everything under tests/e2e starts the tool (or a toolchain, an installer, the action's
entry point) as a process, the way a user or the runner does: marked `e2e`, so that
`pytest -m "not e2e"` is the fast loop and `.ci/run` still runs these."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)
