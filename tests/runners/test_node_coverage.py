"""How jest, vitest and node's test runner are asked for LCov coverage (their
`coverage_flags`), and the coverage command each gets (runners/_node.py puts the flags where
the command takes them), asked through the registry as gate/coverage.py asks."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.coverage_ask import coverage_ask, plan

from codegen_ci.runners import CoveragePlan, jest, node_test, vitest


def shown(found: CoveragePlan | str | None) -> object:
    """A plan as (command, report, sources)."""
    if isinstance(found, CoveragePlan):
        return (found.command, found.report, found.sources)
    return found


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


def package(tmp_path: Path, scripts: dict[str, str], *deps: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "package.json").write_text(json.dumps({"name": "x", "scripts": scripts}))
    for dep in deps:
        (tmp_path / "node_modules" / dep).mkdir(parents=True)
    return tmp_path


def test_jest_run_directly_gets_coverage_of_the_changed_sources_only(tmp_path: Path) -> None:
    """Flags are appended to the command as written: `$OUT` stays the shell's."""
    change = ["src/price.ts", "src/price.test.ts", "README.md"]
    found = plan('npx jest --outputFile="$OUT/x.json"', change, tmp_path, Path("/io"))
    assert isinstance(found, CoveragePlan)
    assert found.command.startswith('npx jest --outputFile="$OUT/x.json" --coverage ')
    found = plan("npx jest --ci", change, package(tmp_path, {}), Path("/io"))
    assert shown(found) == (
        "npx jest --ci --coverage --coverageReporters=lcovonly "
        "--coverageDirectory=/io/jest --collectCoverageFrom=src/price.ts",
        "jest/lcov.info",
        ("src/price.ts",),
    )


def test_npm_test_gets_the_flags_after_a_double_dash(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "tsc && jest --ci --reporters=jest-junit"})
    found = plan("npm test", ["src/a.ts"], repo, Path("/io"))
    assert isinstance(found, CoveragePlan) and "--coverageDirectory" in found.command
    assert found.command.startswith("npm test -- --coverage --coverageReporters=lcovonly ")
    found = plan("CI=1 npm test", ["src/a.ts"], repo, Path("/io"))
    assert isinstance(found, CoveragePlan) and found.command.startswith(
        "CI=1 npm test -- --coverage "
    )
    found = plan("pnpm run unit", ["src/a.ts"], package(tmp_path, {"unit": "jest"}), Path("/io"))
    assert isinstance(found, CoveragePlan) and found.command.startswith("pnpm run unit --coverage ")


def test_a_script_that_does_not_end_with_its_runner_is_not_measured(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "jest --ci && echo done", "t2": "jest | tee out"})
    assert "does not end by running jest" in str(plan("npm test", ["a.js"], repo, Path("/io")))
    assert "does not end by running jest" in str(plan("npm run t2", ["a.js"], repo, Path("/io")))
    assert "pipeline or chain" in str(plan("npx jest && rm x", ["a.js"], repo, Path("/io")))


def test_vitest_v8_coverage_needs_its_package_in_the_repository(tmp_path: Path) -> None:
    command = "npx vitest run --reporter=junit"
    missing = plan(command, ["src/calc.js"], package(tmp_path / "a", {}), Path("/io"))
    assert isinstance(missing, str) and "@vitest/coverage-v8" in missing
    assert "installs nothing" in missing
    repo = package(tmp_path / "b", {}, "@vitest/coverage-v8")
    found = plan(command, ["src/calc.js"], repo, Path("/io"))
    assert shown(found) == (
        f"{command} --coverage.enabled --coverage.provider=v8 "
        "--coverage.reporter=lcovonly --coverage.reportsDirectory=/io/vitest "
        "--coverage.include=src/calc.js",
        "vitest/lcov.info",
        ("src/calc.js",),
    )
    istanbul = package(tmp_path / "c", {}, "@vitest/coverage-istanbul")
    found = plan(command, ["src/calc.js"], istanbul, Path("/io"))
    assert isinstance(found, CoveragePlan) and "--coverage.provider=istanbul" in found.command


def test_node_test_gets_its_flags_before_the_test_files(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "node --test", "files": "node --test test/a.test.js"})
    found = plan("node --test test/", ["lib/a.mjs"], repo, Path("/io"))
    assert isinstance(found, CoveragePlan)
    assert shown(plan("FOO='a b' /usr/bin/node --test x", ["a.js"], repo, Path("/io"))) == (
        f"FOO='a b' /usr/bin/node {found.command[5:-13]} --test x",
        "lcov.info",
        ("a.js",),
    )
    assert isinstance(found, CoveragePlan) and found.report == "lcov.info"
    assert found.command == (
        "node --experimental-test-coverage --test-reporter=spec "
        "--test-reporter-destination=stdout --test-reporter=lcov "
        "--test-reporter-destination=/io/lcov.info --test test/"
    )
    found = plan("npm test", ["lib/a.mjs"], repo, Path("/io"))
    assert isinstance(found, CoveragePlan)
    assert found.command.startswith("npm test -- --experimental-test-coverage ")
    assert "Node reads options after them" in str(
        plan("npm run files", ["lib/a.mjs"], repo, Path("/io"))
    )


def test_other_commands_are_another_runners_business(tmp_path: Path) -> None:
    repo = package(tmp_path, {"test": "mocha"})
    for command, change in [("python -m pytest", "a.py"), ("go test ./...", "a.go")]:
        ask = coverage_ask(repo, [change], Path("/io"))
        assert [r.coverage_plan(command, ask) for r in (jest, vitest, node_test)] == [None] * 3
    assert plan("npm test", ["a.js"], repo, Path("/io")) is None  # mocha: not measured


def test_a_change_without_javascript_sources_is_said_so(tmp_path: Path) -> None:
    found = plan("npx jest", ["src/a.test.ts", "README.md"], tmp_path, Path("/io"))
    assert found == "the change has no JavaScript or TypeScript source file to measure"
