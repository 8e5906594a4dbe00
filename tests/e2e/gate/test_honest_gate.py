"""An honest gate: no test, no success; lint that already fails on the base commit is the
user's, not the model's; a command that cannot start is a configuration error before any
model call. Through the CLI, with the scripted model and real runners (pytest, unittest,
ruff, node's test runner, corepack)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from gate_repos import RUFF, reflections, run_cli
from sample_repo import PYTEST, VERSION_FILE, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# The model "fixes" the bug by destroying the module: only a test can tell.
BREAK = [
    Reply(tool_calls=[call("write_file", path=VERSION_FILE, content="this is not python\n")]),
    Reply("Done."),
]


def dry_run(repo: SampleRepo, spec: Path) -> tuple[int, str]:
    out = repo.tmp / "dry"
    args = ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), "--dry-run"]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output


# --- no test, no success ----------------------------------------------------------------------


def test_no_test_command_is_a_config_error_in_run_dry_run_and_validate(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*BREAK)
    spec = sample_repo.write_spec(validation={"test": []})
    (sample_repo.path / ".codegen.yml").write_text("version: 1\nvalidation:\n  test: []\n")

    code, output, _, report = run_cli(sample_repo, spec)
    dry_code, dry_output = dry_run(sample_repo, spec)
    checked = CliRunner().invoke(cli, ["validate", str(sample_repo.path / ".codegen.yml")])

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "no test command" in report["error"] and "allow_no_tests" in report["error"]
    assert model_env.requests == []  # before any model call
    assert dry_code == 2 and "no test command" in dry_output
    assert checked.exit_code == 2 and "validation.test: no test command" in checked.output


def test_allow_no_tests_is_the_explicit_way_to_run_without_tests(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The control: with the key set, the same destroying change ends as success; that is
    what the default refuses to do silently."""
    model_env.add(*BREAK)
    spec = sample_repo.write_spec(validation={"test": [], "allow_no_tests": True})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["files_changed"] == [VERSION_FILE]


def test_a_unittest_command_that_finds_no_tests_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """`unittest discover` on a package without test*.py files: "Ran 0 tests" (exit 0 before
    Python 3.12, 5 since)."""
    model_env.add(*BREAK)
    command = f"{sys.executable} -m unittest discover -s src/semver -t src"
    spec = sample_repo.write_spec(validation={"test": [command]})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert report["reason"] == "config" and "no tests found" in report["error"]
    assert model_env.requests == []


def test_unittest_suite_run_through_pytest_catches_the_destroying_change(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """A unittest suite with real tests: the change that breaks the module fails the gate."""
    sample_repo.commit(
        {
            "tests/test_unit.py": (
                "import unittest\n\nfrom semver.version import Version\n\n\n"
                "class VersionTest(unittest.TestCase):\n"
                "    def test_parse(self):\n"
                "        self.assertEqual(Version.parse('1.2.3'), Version(1, 2, 3))\n"
            )
        },
        "a unittest suite",
    )
    model_env.add(*BREAK)
    spec = sample_repo.write_spec(limits={"max_iterations": 1})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["status"] == "failed"


# --- lint that already fails on the base commit -----------------------------------------------

LEGACY_LINT = "import os\n\n\ndef legacy():\n    return 1\n"  # F401 on the base commit


@pytest.fixture
def repo_with_broken_lint(sample_repo: SampleRepo) -> SampleRepo:
    sample_repo.commit({"src/semver/legacy.py": LEGACY_LINT}, "legacy code with a lint error")
    return sample_repo


def lint_spec(repo: SampleRepo) -> Path:
    return repo.write_spec(
        validation={"lint": [f"{RUFF} check --no-cache src"], "test": [PYTEST], "timeout": 120}
    )


RunResult = tuple[int, str, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def shared_lint_run() -> dict[str, tuple[RunResult, list[str]]]:
    """The run both lint tests read (each its own part), made once per module (per xdist
    worker) by the first test that needs it, in that test's isolated environment."""
    return {}


@pytest.fixture
def broken_lint_run(
    shared_lint_run: dict[str, tuple[RunResult, list[str]]],
    repo_with_broken_lint: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[RunResult, list[str]]:
    """Lint that fails on the base commit (legacy.py); round 1 adds a lint error of its own
    (an unused import in version.py), round 2 removes it and fixes the bug: run_cli's
    result and the reflections the model got (read only)."""
    if "run" not in shared_lint_run:
        repo = repo_with_broken_lint
        sloppy = call(
            "edit_file",
            path=VERSION_FILE,
            old_text='"""Semantic versions."""',
            new_text='"""Semantic versions."""\nimport sys',
        )
        unsloppy = call("edit_file", path=VERSION_FILE, old_text="import sys\n", new_text="")
        read, fix, done = fixing_script()
        model_env.add(
            Reply(tool_calls=[sloppy]),
            Reply("done"),
            read,
            fix,
            Reply(tool_calls=[unsloppy]),  # round 2 passes: fixed, its lint error gone
            done,
        )
        shared_lint_run["run"] = (run_cli(repo, lint_spec(repo)), reflections(model_env))
    return shared_lint_run["run"]


def test_lint_failing_on_the_base_commit_is_pre_existing_and_the_tests_decide(
    broken_lint_run: tuple[RunResult, list[str]],
) -> None:
    (code, output, _, report), _ = broken_lint_run

    assert code == 0, output
    # no round spent on lint the model did not break: round 2's lint still fails (legacy.py,
    # as on the base commit), and its tests decide (round 1 is the change's own lint error)
    assert report["iterations"] == 2
    last = report["rounds"][-1]
    assert last["passed"] and last["failures"] == []
    assert [(c["kind"], c["exit_code"]) for c in last["commands"]] == [("lint", 1), ("test", 0)]
    [preexisting] = report["preexisting_lint"]
    assert preexisting["command"].endswith("check --no-cache src")
    assert any("legacy.py" in e and "F401" in e for e in preexisting["errors"])
    kinds = [c["kind"] for c in report["preflight"]["commands"]]
    assert kinds == ["lint", "test"]  # the pre-flight ran lint
    assert last["tests"]["passed"] == 3


def test_lint_errors_the_change_adds_still_fail_the_round(
    broken_lint_run: tuple[RunResult, list[str]],
) -> None:
    (code, output, _, report), reflections_sent = broken_lint_run

    assert code == 0, output
    first = report["rounds"][0]
    lint = [f for f in first["failures"] if f["kind"] == "lint"]
    assert lint and all("version.py" in f["id"] for f in lint)  # only the new error
    reflection = reflections_sent[0]
    assert "version.py" in reflection and "legacy.py" not in reflection


# --- cannot start -----------------------------------------------------------------------------


NODE_TEST = """\
const test = require("node:test");
const assert = require("node:assert");
test("adds", () => assert.strictEqual(1 + 1, 2));
"""


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_junit_globs_that_match_nothing_name_the_file_the_command_wrote(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.commit({"js/sum.test.js": NODE_TEST}, "a node test")
    command = (
        "mkdir -p build && node --test --test-reporter=spec --test-reporter-destination="
        "stdout --test-reporter=junit --test-reporter-destination=build/junit.xml js/"
    )
    spec = sample_repo.write_spec(validation={"test": [command], "junit": ["reports/*.xml"]})
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert "validation.junit (reports/*.xml) matched no file" in report["error"]
    assert "build/junit.xml" in report["error"]
    assert model_env.requests == []
    # control: the glob that names the file works
    fixed = sample_repo.write_spec(
        "fixed.yaml", validation={"test": [command], "junit": ["build/*.xml"]}
    )
    assert dry_run(sample_repo, fixed)[0] == 0


@pytest.mark.skipif(not shutil.which("corepack"), reason="needs corepack")
def test_a_package_manager_that_downloads_itself_offline_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COREPACK_HOME", raising=False)  # commands get a fresh HOME: no cache
    package = {
        "name": "x",
        "private": True,
        "packageManager": "pnpm@9.12.3",
        "scripts": {"test": "node --test js/"},
    }
    sample_repo.commit({"package.json": json.dumps(package), "js/sum.test.js": NODE_TEST}, "pnpm")
    spec = sample_repo.write_spec(validation={"test": ["corepack pnpm test"]})
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, spec)

    if report.get("sandbox") == "off":
        pytest.skip("needs the sandbox's closed network")
    assert code == 2, output
    assert "the package manager tried to download itself" in report["error"]
    assert model_env.requests == []


def test_a_lint_command_that_is_not_installed_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(validation={"lint": ["no-such-linter-7q ."], "test": [PYTEST]})
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert "the lint command could not run" in report["error"]
    assert model_env.requests == []


@pytest.mark.parametrize("kind", ["lint", "test"])
def test_a_python_module_a_command_runs_that_is_not_installed_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, kind: str
) -> None:
    """`.venv/bin/python -m pytest` in a venv made by CI's `pip install -e .` alone: Python
    starts and exits 1 ("No module named pytest"), not 127, and no test of it ran (seen on
    python-slugify: three model rounds, then "failed (stuck)" blaming the change)."""
    missing = f"{sys.executable} -m no_such_tool_7q --check"
    validation = {"lint": [missing], "test": [PYTEST]} if kind == "lint" else {"test": [missing]}
    spec = sample_repo.write_spec(validation=validation)
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    expected = f"the {kind} command could not run: `no_such_tool_7q` is not installed"
    assert expected in report["error"]
    assert model_env.requests == []


# How @borderless/ts-scripts 0.15.0 finds its tools (dist/index.js `resolvePath`, dist/bin.js's
# catch): a file under node_modules, else `❌ Unable to resolve: <path>` and exit 1.
TS_SCRIPTS = """\
import { existsSync } from "node:fs";
const path = "vitest/vitest.mjs";
if (!existsSync(`node_modules/${path}`)) {
  console.error(`❌ Unable to resolve: ${path}`);
  process.exit(1);
}
"""


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_a_test_wrapper_that_finds_no_runner_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """blakeembrey/change-case's `npm test` is `ts-scripts test`: with vitest not installed
    it says "Unable to resolve: vitest/vitest.mjs" (exit 1), and three model rounds ended
    "failed (stuck)"."""
    package = {"name": "x", "private": True, "type": "module", "scripts": {"test": "node t.mjs"}}
    sample_repo.commit({"package.json": json.dumps(package), "t.mjs": TS_SCRIPTS}, "ts-scripts")
    spec = sample_repo.write_spec(validation={"test": ["npm test"]})
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert (
        "the test command could not run: a tool the test script runs is not installed"
        in (report["error"])
    )
    assert model_env.requests == []


# --- what people and the model read ---------------------------------------------------------

CRASH_JS = """\
function total(items) {
  return items.reduce((sum, item) => sum + item.price.cents, 0);
}
console.log(total([{ price: null }]));
"""


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_the_failure_summary_is_the_error_line_and_unknown_totals_are_null(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """node prints the source line, a caret, the error, its stack and `Node.js v20...` last:
    the summary is the error, the totals are unknown (null, not 0/0)."""
    sample_repo.commit({"js/check.js": CRASH_JS}, "a node check")
    spec = sample_repo.write_spec(
        validation={"test": ["node js/check.js"]}, limits={"max_iterations": 1}
    )
    model_env.add(Reply("Nothing to change."))

    dry_code, dry_output = dry_run(sample_repo, spec)
    code, output, _, report = run_cli(sample_repo, spec)

    assert dry_code == 0, dry_output
    assert "command logs: " + str(sample_repo.tmp / "dry" / "logs") in dry_output
    assert "tests: unknown (no JUnit report)" in dry_output
    assert code == 1, output
    [failure] = report["rounds"][0]["failures"]
    assert failure["message"].startswith("TypeError: Cannot read properties of null")
    assert "FAIL test: node js/check.js: TypeError: Cannot read" in output
    assert report["rounds"][0]["tests"] is None


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_the_junit_hint_does_not_repeat_flags_the_command_already_has(
    sample_repo: SampleRepo,
) -> None:
    sample_repo.commit({"js/sum.test.js": NODE_TEST}, "a node test")
    command = (
        "mkdir -p build && node --test --test-reporter=spec --test-reporter-destination="
        "stdout --test-reporter=junit --test-reporter-destination=build/junit.xml js/"
    )
    spec = sample_repo.write_spec(validation={"test": [command]})

    code, output = dry_run(sample_repo, spec)

    assert code == 0, output
    hint = next(line for line in output.splitlines() if "to get JUnit:" in line)
    assert "already asks for JUnit" in hint and "`build/junit.xml`" in hint
    assert "add `--test-reporter" not in hint


# --- init alone, on a unittest project --------------------------------------------------------

CALC = "def add(a, b):\n    return a - b\n"
CALC_TEST = """\
import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def test_init_on_a_unittest_project_gives_a_gate_that_catches_a_broken_module(
    tmp_path: Path, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Configured by `init` alone: the unittest suite runs (through pytest, with JUnit), so
    a change that destroys the module fails instead of ending as "success"."""
    from sample_repo import sh

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(CALC_TEST)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='calc')\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{__import__('os').environ['PATH']}")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)  # else init names the active venv's python
    assert CliRunner().invoke(cli, ["init", "--repo", str(repo)]).exit_code == 0
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "calc"], repo)
    spec = tmp_path / "spec.yaml"
    # the gate is init's (.codegen.yml, layered under the task's spec); the spec only turns off
    # the re-run of the round's failing test (the flaky check: a pytest run this is not about)
    spec.write_text(
        "version: 1\ntask: add() must add.\nlimits: {max_iterations: 1}\n"
        "validation: {proof: {reruns: 0}}\n"
    )
    model_env.add(
        Reply(tool_calls=[call("write_file", path="calc.py", content="not python\n")]),
        Reply("Done."),
    )

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo), "--output-dir", str(tmp_path / "out")]
    )

    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "failed"
    assert report["rounds"][0]["tests"]["total"] == 1  # JUnit from pytest
    assert report["preflight"]["commands"][0]["command"] == "python -m pytest -q tests"


# --- a base commit whose suite cannot even be collected ---------------------------------------


def test_a_base_run_stopped_by_collection_errors_calls_no_failure_new(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """A test module on the base commit imports a name the code does not have yet, so on the
    base tree pytest stops at collection (exit 2) and runs none of the failing tests. The
    model adds the name and leaves the bug: the bug's test fails in the round, and the base
    run cannot say whether it is new; it is the bug itself, there before the change."""
    repo = sample_repo
    repo.commit(
        {
            "tests/test_more.py": "from semver.version import LATEST\n\ndef test_latest():\n"
            "    assert LATEST is None\n"
        }
    )
    add_name = call(
        "edit_file",
        path=VERSION_FILE,
        old_text="@dataclass",
        new_text=("LATEST = None\n\n\n@dataclass"),
    )
    model_env.add(Reply(tool_calls=[add_name]), Reply("Added it."), Reply("Still nothing."))
    spec = repo.write_spec(limits={"max_iterations": 2})

    code, output, out, report = run_cli(repo, spec)

    assert code == 1, output
    [base_log] = (out / "baseline" / "logs").glob("*.log")  # no full run to stop there again
    assert "cannot import name 'LATEST'" in base_log.read_text()  # the base run could not collect
    last = report["rounds"][-1]
    [failure] = last["failures"]
    assert failure["id"].endswith("test_bump_minor_resets_patch")
    assert failure["new"] is None  # unknown, never "new" (it fails on the base too)
    assert "collection" in last["baseline_unavailable"]
    assert "Baseline unavailable" in reflections(model_env)[-1]  # the model is told so
