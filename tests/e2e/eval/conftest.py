"""The eval tests' repository: a fresh clone of the parse history
(tests/helpers/parse_history.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from parse_history import clone_parse


@pytest.fixture
def parse_repo(tmp_path: Path) -> Path:
    return clone_parse(tmp_path)
