"""Where the agent works and what the gate makes of commands that cannot work: dependencies
from the checkout, configuration errors before any model call, an unavailable baseline,
test commands without JUnit, generated files, JUnit globs outside the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner
from gate_repos import BUG_ID, reflections, run_cli
from sample_repo import FIX, PYTEST, QUICK_GATE, VERSION_FILE, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.publish.report_text import failure_comment, pr_body
from codegen_ci.report import Report
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

NODE_TEST = """\
const test = require("node:test");
const assert = require("node:assert");
test("adds", () => assert.strictEqual(1 + 1, 2));
"""
IN_REPO_PYTEST = ".venv/bin/python -m pytest -q -p no:cacheprovider tests"


def make_in_repo_venv(repo: SampleRepo) -> None:
    """A `.venv` in the checkout (ignored), as a workflow's install step leaves it: its own
    interpreter, with this test environment's packages (pytest) on its path."""
    venv = repo.path / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (repo.path / ".gitignore").write_text("__pycache__/\n.venv/\n")
    repo.commit({}, "ignore .venv")


def test_an_in_repo_venv_is_usable_in_the_worktree_and_stays_out_of_the_commit(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    make_in_repo_venv(sample_repo)
    status_before = sample_repo.git("status", "--porcelain", "--ignored")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(validation={"test": [IN_REPO_PYTEST]})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["rounds"][0]["tests"]["passed"] == 3
    assert report["files_changed"] == [VERSION_FILE]
    base = sample_repo.git("rev-parse", "main").strip()
    assert sample_repo.git("diff", "--name-only", base, report["branch"]).split() == [VERSION_FILE]
    assert sample_repo.git("status", "--porcelain", "--ignored") == status_before
    assert (sample_repo.path / ".venv" / "bin" / "python").exists()  # not removed with the tree


def test_a_failing_setup_is_a_config_error_before_any_model_call(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    setup = "echo 'installing deps'; echo 'E: package libfoo-dev has no candidate' >&2; exit 3"
    spec = sample_repo.write_spec(validation={"setup": [setup], "test": [PYTEST]})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "setup failed (exit 3)" in report["error"] and setup in report["error"]
    assert "libfoo-dev has no candidate" in report["error"]  # the output's tail
    assert model_env.requests == [] and report["rounds"] == []
    assert "configuration error" in output


def test_a_test_command_not_found_is_a_config_error_in_run_and_dry_run(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(validation={"test": ["no-such-runner-9z --ci"]})

    code, output, _, report = run_cli(sample_repo, spec)
    dry_out = str(sample_repo.tmp / "dry")
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", dry_out]
    dry = CliRunner().invoke(cli, [*args, "--dry-run"])

    assert code == 2 and dry.exit_code == 2, output + dry.output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "exit 127" in report["error"] and "no-such-runner-9z" in report["error"]
    assert "configuration error" in dry.output
    assert model_env.requests == []


def test_pytest_collecting_nothing_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(validation={"test": [PYTEST + " -k no_such_test_name"]})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert report["reason"] == "config" and "no tests collected" in report["error"]
    assert report["preflight"]["commands"][0]["collect_only"] is True
    assert model_env.requests == []


def test_a_base_run_that_cannot_start_makes_the_baseline_unavailable(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The tests need a file that setup writes; setup does not run on the base commit, so
    the base run writes no JUnit: "baseline unavailable", never "also fails on the base"."""
    (sample_repo.path / ".gitignore").write_text("__pycache__/\n.ready\n")
    sample_repo.commit({}, "ignore .ready")
    wrong = call(
        "edit_file",
        path=VERSION_FILE,
        old_text="self.minor + 1, self.patch",
        new_text="self.minor + 2, self.patch",
    )
    right = call(
        "edit_file",
        path=VERSION_FILE,
        old_text="self.minor + 2, self.patch",
        new_text="self.minor + 1, 0",
    )
    model_env.add(Reply(tool_calls=[wrong]), Reply("done"), Reply(tool_calls=[right]), Reply("ok"))
    test = "test -f .ready && " + PYTEST
    spec = sample_repo.write_spec(
        validation={"setup": ["touch .ready"], "test": [test], "allow_preexisting_failures": True}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output  # fixed in round 2; round 1's failure was never "pre-existing"
    first = report["rounds"][0]
    assert "on the base commit: it wrote no JUnit report" in first["baseline_unavailable"]
    assert {f["id"]: f["new"] for f in first["failures"]}[BUG_ID] is None
    reflection = reflections(model_env)[0]
    assert "Baseline unavailable" in reflection and "also fail on the base" not in reflection
    failed = Report.model_validate({**report, "rounds": report["rounds"][:1], "status": "failed"})
    comment = failure_comment(failed, run_url=None)
    assert "Baseline unavailable" in comment and "also fails on the base commit" not in comment


def test_a_command_without_junit_reads_tests_unknown(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(*fixing_script())
    check = f"{sys.executable} -c \"import sys; sys.path.insert(0, 'src'); "
    check += "from semver.version import Version as V; "
    check += "sys.exit(str(V.parse('3.4.5').bump_minor()) != '3.5.0')\""
    spec = sample_repo.write_spec(validation={"test": [check]})

    code, output, out, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert [m["command"] for m in report["junit_missing"]] == [check]
    assert [r["tests"] for r in report["rounds"]] == [None]  # unknown, never 0/0
    body = pr_body(Report.read(out), task="t", issue_number=None, run_url=None)
    assert "No JUnit report" in body and "unknown (no JUnit)" in body and "0/0" not in body
    message = sample_repo.git("log", "-1", "--format=%B", report["branch"])
    assert "tests: unknown (no JUnit)" in message


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_node_test_runner_without_junit_gets_its_reporter_hint(
    sample_repo: SampleRepo, tmp_path: Path
) -> None:
    sample_repo.commit({"js/sum.test.js": NODE_TEST}, "a node test")
    spec = sample_repo.write_spec(validation={"test": ["node --test js/"]})

    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(tmp_path / "o")]
    result = CliRunner().invoke(cli, [*args, "--dry-run"])

    assert result.exit_code == 0, result.output
    assert "no JUnit from `node --test js/`" in result.output
    assert "--test-reporter=junit" in result.output


def test_generated_toolchain_files_stay_out_of_the_commit_unless_named(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    generate = (
        "mkdir -p coverage/lcov-report .nyc_output target/debug dist && echo m > coverage.out"
        " && echo l > lcov.info && echo h > coverage/lcov-report/i.html"
        " && echo n > .nyc_output/a.json && echo t > target/debug/app"
        " && echo b > dist/bundle.js && echo c > dist/cli.js"
    )
    model_env.add(
        Reply(tool_calls=[call("run_command", command=generate)]),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )
    # which files are committed is the subject, not the gate: a check of the fixed line
    # decides (QUICK_GATE), no pytest start in the pre-flight and the round
    spec = sample_repo.write_spec(outputs=[VERSION_FILE, "dist/cli.js"], validation=QUICK_GATE)

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert sorted(report["files_changed"]) == ["dist/cli.js", VERSION_FILE]
    base = sample_repo.git("rev-parse", "main").strip()
    changed = sample_repo.git("diff", "--name-only", base, report["branch"]).split()
    assert sorted(changed) == ["dist/cli.js", VERSION_FILE]


def test_junit_globs_outside_the_repository_and_with_variables(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    model_env.add(*fixing_script())
    test = PYTEST + ' --junitxml="$RUNNER_TEMP/reports/unit.xml"'
    spec = sample_repo.write_spec(
        validation={"test": [test], "junit": ["$RUNNER_TEMP/reports/*.xml"]}
    )
    absolute = sample_repo.write_spec(
        "abs.yaml",
        validation={
            "test": [PYTEST + f" --junitxml={runner_temp}/abs/unit.xml"],
            "junit": [f"{runner_temp}/abs/**/*.xml"],
        },
    )

    validated = CliRunner().invoke(cli, ["validate", str(spec), str(absolute)])
    code, output, out, report = run_cli(sample_repo, spec)

    assert validated.exit_code == 0, validated.output
    assert code == 0, output
    assert report["rounds"][0]["tests"]["passed"] == 3 and not report["junit_missing"]
    model_env.add(*fixing_script())
    # A literal path outside the worktree is writable only unconfined (docs/sandbox.md).
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")
    code, output, _, report = run_cli(sample_repo, absolute)
    assert code == 0, output
    assert report["rounds"][0]["tests"]["passed"] == 3
    assert json.loads((out / "run.json").read_text())["worktree"].startswith("/")
