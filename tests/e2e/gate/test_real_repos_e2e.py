"""The gate's answer on three real public repositories (tests/helpers/real_repos.py), each with one
injected bug, configured by `codegen-ci init` alone (the task's spec only turns proof and
flaky re-runs off, which these tests are not about), dependencies from the npm registry or
PyPI, the scripted model over real HTTP, the commands confined by the default sandbox:

- unjs/defu (TypeScript, vitest `--typecheck`, pnpm): fixed means success with every test,
  runtime and type, green; a model that does not fix it never gets success.
- un33k/python-slugify (unittest in `test.py`, no pytest configuration): no "success"
  without tests having run, whatever the model does.
- jshttp/range-parser (mocha, eslint): the lint already fails on the default branch; that
  failure is never charged to the model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eco_projects import edit_turn
from real_repos import (
    DEFU_BUG,
    DEFU_TASK,
    SharedRun,
    checkout,
    codegen_init,
    fixed_defu_run,
    link_node_modules,
    npm_install_shared,
    pnpm_bin,
    pnpm_install,
    python_env,
)
from sample_repo import NO_PROOF, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(900)]
needs_node = pytest.mark.skipif(not shutil.which("npm"), reason="needs node and npm")

_DEDUP = "text = DUPLICATE_DASH_PATTERN.sub(DEFAULT_SEPARATOR, text)"
SLUGIFY_BUG = ("slugify/slugify.py", _DEDUP + ".strip(DEFAULT_SEPARATOR)", _DEDUP)
SLUGIFY_TASK = "slugify() must not leave separators at the start or end: '___a b---' -> 'a-b'."
RANGE_BUG = (
    "index.js",
    "if (start > end || start < 0) {\n      valid = true\n",
    "if (start > end || start < 0) {\n",
)
RANGE_LINT_BREAK = ("README.md", "<!-- eslint-disable no-unused-vars -->\n\n", "")
MOCHA_JUNIT = "mocha-junit-reporter@2.2.1"
RANGE_TASK = (
    "parseRange() must return -1 (unsatisfiable), not -2 (malformed), when every "
    "range is well formed but lies beyond the size: bytes=500-600 of 200 -> -1."
)


def shared(factory: pytest.TempPathFactory) -> Path:
    return factory.getbasetemp().parent / "real-repos"


def run(
    repo: SampleRepo, task: str, *args: str, limits: dict[str, int] | None = None
) -> tuple[int, str, dict[str, Any]]:
    """`codegen-ci run` with a spec that holds the task (and any `limits`) and, over init's
    `.codegen.yml`, no proof and no flaky re-runs: none of these tests is about them, and they
    are one more run of the project's tests (vitest with its typecheck) after a passing round
    and after each failing one (tests/e2e/gate/test_proof_*.py are about proof)."""
    spec = repo.tmp / "task.yaml"
    task_spec: dict[str, Any] = {"version": 1, "task": task, "validation": {"proof": NO_PROOF}}
    if limits:
        task_spec["limits"] = limits
    spec.write_text(json.dumps(task_spec))
    out = repo.tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *args]
    )
    path = out / "report.json"
    return result.exit_code, result.output, json.loads(path.read_text()) if path.exists() else {}


def changed(repo: SampleRepo, report: dict[str, Any]) -> list[str]:
    base = repo.git("rev-parse", "main").strip()
    return repo.git("diff", "--name-only", base, report["branch"]).split()


def user_messages(model: ScriptedModelServer) -> str:
    """Everything the harness said to the model (task, feedback after each round)."""
    return "\n".join(
        str(m.get("content"))
        for r in model.tool_requests
        for m in r["messages"]
        if m.get("role") == "user"
    )


# --- unjs/defu: TypeScript, vitest --typecheck, pnpm ------------------------------------------


@pytest.fixture
def defu(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> SampleRepo:
    pnpm = pnpm_bin(shared(tmp_path_factory))
    monkeypatch.setenv("PATH", f"{pnpm}{os.pathsep}{os.environ['PATH']}")
    repo = checkout(tmp_path, "defu", bug=DEFU_BUG)
    pnpm_install(repo, pnpm, shared(tmp_path_factory) / "pnpm-store")
    config = codegen_init(repo)
    assert "vitest" in config and "--typecheck" in config  # init kept the project's own flags
    return repo


@pytest.fixture
def defu_fixed(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    model_env: ScriptedModelServer,
) -> SharedRun:
    """`defu` fixed in one round (the scripted model's right edit), as `run` runs it: one run
    for the session, which tests/e2e/security/test_dependency_writes.py reads too."""
    pnpm = pnpm_bin(shared(tmp_path_factory))
    monkeypatch.setenv("PATH", f"{pnpm}{os.pathsep}{os.environ['PATH']}")
    fixed = fixed_defu_run(tmp_path_factory, shared(tmp_path_factory), pnpm, model_env)
    config = (fixed.repo.path / ".codegen.yml").read_text()
    assert "vitest" in config and "--typecheck" in config  # init kept the project's own flags
    return fixed


@needs_node
def test_vitest_pnpm_typecheck_fixed_with_every_test_green(defu_fixed: SharedRun) -> None:
    code, output, report = defu_fixed.code, defu_fixed.output, defu_fixed.report

    assert code == 0, output
    assert report["status"] == "success" and report["sandbox"] != "off"
    pre = report["preflight"]
    assert any("should fill in values that are null" in f["id"] for f in pre["failures"])
    tests = report["rounds"][-1]["tests"]
    assert tests["total"] >= 46 and tests["passed"] == tests["total"] - tests["skipped"]
    assert changed(defu_fixed.repo, report) == ["src/defu.ts"]


@needs_node
def test_vitest_pnpm_typecheck_not_fixed_is_never_success(
    defu: SampleRepo, model_env: ScriptedModelServer
) -> None:
    for _ in range(2):  # a model that only talks
        model_env.add(Reply(tool_calls=[call("read_file", path=DEFU_BUG[0])]), Reply("looks fine"))

    # two rounds, not init's three: the second already follows feedback (what the model
    # heard), a third would run vitest with its typecheck once more on the same code
    code, output, report = run(defu, DEFU_TASK, limits={"max_iterations": 2, "stuck_rounds": 2})

    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] in ("stuck", "max_iterations")
    assert len(report["rounds"]) == 2
    assert all(r["tests"]["failed"] + r["tests"]["errors"] >= 1 for r in report["rounds"])
    # what the model heard is the failing test, never an EROFS from vitest's build info
    heard = user_messages(model_env)
    assert "should fill in values that are null" in heard and "EROFS" not in heard


# --- un33k/python-slugify: unittest -----------------------------------------------------------


@pytest.fixture
def slugify_repo(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> SampleRepo:
    """The project as its CI has it: dependencies and runners in the Python on PATH (as
    setup-python + pip install leave them), no venv in the checkout and none active (the
    session's own VIRTUAL_ENV is not the user's)."""
    bin_dir = python_env(shared(tmp_path_factory))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    repo = checkout(tmp_path, "python-slugify", bug=SLUGIFY_BUG)
    codegen_init(repo)
    return repo


def test_unittest_project_fixed_means_its_tests_ran_and_passed(
    slugify_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*edit_turn(SLUGIFY_BUG[0], SLUGIFY_BUG[2], SLUGIFY_BUG[1], "strip separators"))

    code, output, report = run(slugify_repo, SLUGIFY_TASK)

    assert code == 0, output
    assert report["status"] == "success"
    tests = report["rounds"][-1]["tests"]
    assert tests["total"] >= 80 and tests["failed"] == tests["errors"] == 0  # test.py's 82
    assert changed(slugify_repo, report) == [SLUGIFY_BUG[0]]


def test_unittest_project_never_succeeds_with_broken_code(
    slugify_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    # broken as only the tests can tell: CI's flake8 is a lint too, and a failing lint ends
    # the round before the tests run
    broken = 'raise ImportError("rewritten")\n'
    model_env.add(
        Reply(tool_calls=[call("write_file", path=SLUGIFY_BUG[0], content=broken)]),
        Reply("rewrote it"),
    )

    # one round, as the model has one turn: init's further two would run flake8, pycodestyle
    # and the tests again on the same broken code
    code, output, report = run(slugify_repo, SLUGIFY_TASK, limits={"max_iterations": 1})

    assert report["status"] == "failed" and code == 1, output
    assert len(report["rounds"]) == 1, "the tests ran"
    last = report["rounds"][-1]["tests"]
    assert last["total"] is not None and last["errors"] + last["failed"] >= 1


def test_unittest_project_dry_run_does_not_say_success_without_tests(
    slugify_repo: SampleRepo,
) -> None:
    code, output, report = run(slugify_repo, SLUGIFY_TASK, "--dry-run")

    assert "success after 0 round" not in output
    assert code == 0, output  # init found the unittest module: the bug shows
    (dry,) = report["rounds"]
    assert dry["tests"]["total"] >= 80 and dry["tests"]["failed"] >= 1
    assert any("test_extraneous_seperators" in f["id"] for f in dry["failures"])


# --- jshttp/range-parser: mocha, eslint failing on the default branch -------------------------


@pytest.fixture
def range_parser(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> SampleRepo:
    # installed as init's install line says (`npm install` + the JUnit reporter, not saved)
    node_modules = npm_install_shared(shared(tmp_path_factory), "range-parser", MOCHA_JUNIT)
    repo = checkout(
        tmp_path, "range-parser", bug=RANGE_BUG, extra={RANGE_LINT_BREAK[0]: RANGE_LINT_BREAK[1:]}
    )
    link_node_modules(repo, node_modules)
    config = codegen_init(repo)
    assert "npm run lint" in config and "mocha-junit-reporter" in config
    return repo


@needs_node
def test_mocha_project_lint_failing_on_base_is_not_charged_to_the_model(
    range_parser: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*edit_turn(RANGE_BUG[0], RANGE_BUG[2], RANGE_BUG[1], "-1 for unsatisfiable"))

    code, output, report = run(range_parser, RANGE_TASK)

    heard = user_messages(model_env)
    assert "no-unused-vars" not in heard and "is assigned a value but never used" not in heard
    # pre-existing: reported to the user, left alone; the tests decide
    assert code == 0, output
    assert report["status"] == "success" and report["iterations"] == 1
    assert [p["command"] for p in report["preexisting_lint"]] == ["npm run lint"]
    assert any("no-unused-vars" in e for e in report["preexisting_lint"][0]["errors"])
    tests = report["rounds"][-1]["tests"]
    assert tests["total"] >= 30 and tests["failed"] == tests["errors"] == 0
    assert changed(range_parser, report) == [RANGE_BUG[0]]
    pre = report["preflight"]  # the model was shown the test its change had to fix
    assert any("unsatisfiable range" in f["id"] for f in pre["failures"]), pre["failures"]


@needs_node
def test_mocha_with_a_reporter_that_is_not_installed_is_a_config_error(
    range_parser: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The project's own mocha (6.x) says `Unknown "reporter": ...`, newer ones
    ERR_MOCHA_INVALID_REPORTER; either way mocha cannot start and nothing in the code can
    change that. (The installed reporter, configured by init, works: the test above.)"""
    model_env.add(*edit_turn(RANGE_BUG[0], RANGE_BUG[2], RANGE_BUG[1], "-1 for unsatisfiable"))
    command = "npx mocha --reporter mocha-junit-reporter-not-installed --check-leaks test/"
    spec = range_parser.tmp / "task.yaml"
    # no lint: eslint's run (failing on the base, the test above) is not what this is about
    validation = {"lint": [], "test": [command]}
    spec.write_text(json.dumps({"version": 1, "task": RANGE_TASK, "validation": validation}))
    out = range_parser.tmp / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(range_parser.path), "--output-dir", str(out)]
    )

    assert result.exit_code == 2, result.output
    report = json.loads((out / "report.json").read_text())
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "a test reporter is not installed" in report["error"] and command in report["error"]
    assert model_env.requests == []
