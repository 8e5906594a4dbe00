"""The eval tests' repository: a fresh clone of the parse history
(tests/helpers/parse_history.py), and the check of its tasks that is made once a session."""

from __future__ import annotations

from pathlib import Path

import pytest
from parse_history import CheckedParse, checked_parse, clone_parse, shared_root


@pytest.fixture
def parse_repo(tmp_path: Path) -> Path:
    return clone_parse(tmp_path)


@pytest.fixture(scope="session")
def parse_shared(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Where this session's check goes: named by xdist's id of the test run too, as a
    `--basetemp` given again keeps an earlier session's folder beside the workers'."""
    run = getattr(request.config, "workerinput", {}).get("testrunuid", "")
    return shared_root(tmp_path_factory) / f"parse-checked-{run}".rstrip("-")


@pytest.fixture
def parse_check(parse_shared: Path) -> CheckedParse:
    """The shared `--check` of the 16-commit range (made by the first test that asks, in its
    isolated environment)."""
    return checked_parse(parse_shared)
