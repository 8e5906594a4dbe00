"""`codegen-ci run` end to end: scripted model over HTTP, real git, real pytest."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sample_repo import FIX, FIXED_LINE_NEW, FIXED_LINE_OLD, PYTEST, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

VERSION = "src/semver/version.py"


def run_cli(repo: SampleRepo, *args: str) -> tuple[int, str, Path]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", *args, "--repo", str(repo.path), "--output-dir", str(out)]
    )
    return result.exit_code, result.output, out


def test_run_fixes_bug_and_commits_only_the_edit(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    (sample_repo.path / "notes.txt").write_text("my untracked notes\n")
    head_before = sample_repo.head()
    status_before = sample_repo.git("status", "--porcelain")
    model_env.add(*fixing_script())
    # the product's default proof policy: the proof and coverage runs leave nothing behind either
    sample_repo.proof = True
    spec = sample_repo.write_spec()

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "success"
    assert report["proof"]["status"] == "proven" and report["proof"]["changed_lines"]["measured"]
    assert report["iterations"] == 1
    assert report["files_changed"] == [VERSION]
    assert report["rounds"][0]["tests"]["passed"] == 3
    assert report["usage"]["prompt_tokens"] > 0
    branch, commit = report["branch"], report["commit"]
    assert branch == "codegen/reset-patch-in-bump-minor"
    # one commit on the branch, touching only the edited file
    assert sample_repo.git("rev-list", "--count", f"{head_before}..{branch}").strip() == "1"
    assert sample_repo.git("diff", "--name-only", head_before, branch).split() == [VERSION]
    assert sample_repo.git("rev-parse", branch).strip() == commit
    assert sample_repo.git("log", "-1", "--format=%s", branch).startswith("fix(semver): ")
    # the user's checkout is untouched
    assert sample_repo.head() == head_before
    assert sample_repo.git("status", "--porcelain") == status_before
    assert (sample_repo.path / "notes.txt").read_text() == "my untracked notes\n"
    assert FIXED_LINE_OLD in (sample_repo.path / VERSION).read_text()
    assert sample_repo.git("worktree", "list").count("\n") == 1
    # artifacts
    assert (out / "diff.patch").read_text().count(FIXED_LINE_NEW) == 1
    lines = (out / "transcript.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["role"] == "system"
    # the model was offered the six tools with their fixed names
    tools = {t["function"]["name"] for t in model_env.tool_requests[0]["tools"]}
    assert tools == {
        "list_files",
        "read_file",
        "write_file",
        "edit_file",
        "search_files",
        "run_command",
    }


def test_files_the_commands_create_stay_out_of_the_commit(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Reports, caches and whatever else validation writes are artifacts, not the change;
    a file the model's own command writes is part of it."""
    head = sample_repo.head()
    test = PYTEST.replace(" -p no:cacheprovider", "")  # let pytest write .pytest_cache
    make_reports = "mkdir -p reports && echo data > reports/summary.txt && echo c > .coverage"
    model_env.add(
        Reply(tool_calls=[call("run_command", command="echo '# Changelog' > CHANGELOG.md")]),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )
    spec = sample_repo.write_spec(validation={"lint": [make_reports], "test": [test]})

    code, output, out = run_cli(sample_repo, str(spec))

    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    assert sorted(report["files_changed"]) == ["CHANGELOG.md", VERSION]
    committed = sample_repo.git("diff", "--name-only", head, report["branch"]).split()
    assert sorted(committed) == ["CHANGELOG.md", VERSION]
    assert "reports/summary.txt" in report["artifacts"]  # reported, not committed
