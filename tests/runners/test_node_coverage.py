"""How jest, vitest and node's test runner are asked for LCov coverage (their
`coverage_flags`; gate/coverage_node.py puts the flags where the command takes them)."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.runners import jest, node_test, vitest


def test_jest_and_vitest_instrument_only_the_changed_sources() -> None:
    flags, report = jest.coverage_flags(["src/a.js", "src/b.ts"], Path("/io"))
    assert report == "jest/lcov.info" and "--coverageDirectory=/io/jest" in flags
    assert [f for f in flags if f.startswith("--collectCoverageFrom=")] == [
        "--collectCoverageFrom=src/a.js",
        "--collectCoverageFrom=src/b.ts",
    ]
    flags, report = vitest.coverage_flags("istanbul", ["src/a.ts"], Path("/io"))
    assert report == "vitest/lcov.info"
    assert "--coverage.provider=istanbul" in flags and "--coverage.include=src/a.ts" in flags
    assert vitest.COVERAGE_PROVIDERS[0] == ("v8", "@vitest/coverage-v8")


def test_node_writes_lcov_beside_its_spec_output() -> None:
    flags, report = node_test.coverage_flags(Path("/io"))
    assert report == "lcov.info" and flags[0] == "--experimental-test-coverage"
    assert flags[-2:] == ["--test-reporter=lcov", "--test-reporter-destination=/io/lcov.info"]
