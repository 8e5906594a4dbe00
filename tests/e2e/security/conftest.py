"""The security tests run with the product's default proof policy: the proof run and the
coverage run after it are more of our git commands and more confined commands, which a hostile
repository or model could aim at (the other tests' sample specs leave them out: sample_repo.py)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def with_proof(request: pytest.FixtureRequest) -> None:
    if "sample_repo" in request.fixturenames:
        request.getfixturevalue("sample_repo").proof = True


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, Any]:
    """Runs several tests only read (each asserting on its own attack planted there), made
    once per module (per xdist worker) by the first test that needs one, in that test's
    isolated environment; a fixture of the module names and makes each."""
    return {}
