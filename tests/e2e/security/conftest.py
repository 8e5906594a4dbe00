"""The security tests run with the product's default proof policy: the proof run and the
coverage run after it are more of our git commands and more confined commands, which a hostile
repository or model could aim at (the other tests' sample specs leave them out: sample_repo.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def with_proof(request: pytest.FixtureRequest) -> None:
    if "sample_repo" in request.fixturenames:
        request.getfixturevalue("sample_repo").proof = True
