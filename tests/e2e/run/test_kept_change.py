"""The change is never dropped: a lint command that rewrites the model's file (ruff with
`fix = true`) leaves it in the commit as rewritten; a run that changed nothing is not a
success. What the tests find is not the subject: a gate of exit codes (QUICK_GATE) beside the
lint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner
from sample_repo import (
    FIX,
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    QUICK_GATE,
    VERSION_FILE,
    VERSION_PY,
    SampleRepo,
)

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

RUFF_FIXES = '[tool.ruff]\nfix = true\n\n[tool.ruff.lint]\nselect = ["F401"]\n'
RUFF = f"{sys.executable} -m ruff check --no-cache src"
UNUSED = "import os\n"


def run_cli(repo: SampleRepo, spec: Path) -> tuple[int, str, dict[str, object]]:
    out = repo.tmp / "out"
    args = ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out)]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output, json.loads((out / "report.json").read_text())


def test_a_fixing_linter_rewrites_the_models_file_and_the_commit_holds_both(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    head = sample_repo.commit({"pyproject.toml": RUFF_FIXES}, "ruff fixes what it can")
    fixed_with_unused_import = UNUSED + VERSION_PY.replace(FIXED_LINE_OLD, FIXED_LINE_NEW)
    write = call("write_file", path=VERSION_FILE, content=fixed_with_unused_import)
    model_env.add(Reply(tool_calls=[write]), Reply("done"))
    spec = sample_repo.write_spec(validation={"lint": [RUFF], **QUICK_GATE})

    code, output, report = run_cli(sample_repo, spec)

    assert (code, report["status"]) == (0, "success"), output
    branch = report["branch"]
    assert isinstance(branch, str) and report["commit"]
    assert report["files_changed"] == [VERSION_FILE]
    assert VERSION_FILE not in report["artifacts"]  # type: ignore[operator]
    committed = sample_repo.git("show", f"{branch}:{VERSION_FILE}")
    assert FIXED_LINE_NEW in committed  # the model's fix
    assert UNUSED not in committed  # and the lint's rewrite
    assert sample_repo.git("diff", "--name-only", head, branch).split() == [VERSION_FILE]


def test_a_run_that_changed_nothing_is_not_a_success(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.commit({VERSION_FILE: VERSION_PY.replace(FIXED_LINE_OLD, FIXED_LINE_NEW)})
    model_env.add(Reply("The code already resets the patch number; nothing to do."))

    code, output, report = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))

    assert (code, report["status"], report["reason"]) == (1, "failed", "no_change"), output
    assert "success" not in output
    assert "nothing the model changed" in output
    assert report["branch"] is None and report["commit"] is None
    assert report["files_changed"] == []
    assert "codegen/" not in sample_repo.git("branch", "--list")


def test_formatting_alone_is_no_change(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The linter fixes a tracked file the model never touched; the model changes nothing:
    the lint's rewrite on its own is not the change the task asked for."""
    fixed = VERSION_PY.replace(FIXED_LINE_OLD, FIXED_LINE_NEW)
    sample_repo.commit({"pyproject.toml": RUFF_FIXES, VERSION_FILE: UNUSED + fixed})
    model_env.add(Reply("nothing to do"))
    spec = sample_repo.write_spec(validation={"lint": [RUFF], **QUICK_GATE})

    code, output, report = run_cli(sample_repo, spec)

    assert (code, report["reason"]) == (1, "no_change"), output
    assert report["branch"] is None and report["commit"] is None


def test_the_fix_stays_when_a_linter_also_formats_an_untouched_file(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """What the linter rewrote of a tracked file is the repository's own formatting and
    goes into the commit beside the model's fix."""
    head = sample_repo.commit(
        {"pyproject.toml": RUFF_FIXES, "src/semver/extra.py": UNUSED + "X = 1\n"}
    )
    model_env.add(Reply(tool_calls=[FIX]), Reply("done"))
    spec = sample_repo.write_spec(validation={"lint": [RUFF], **QUICK_GATE})

    code, output, report = run_cli(sample_repo, spec)

    assert (code, report["status"]) == (0, "success"), output
    branch = str(report["branch"])
    changed = sorted(sample_repo.git("diff", "--name-only", head, branch).split())
    assert changed == ["src/semver/extra.py", VERSION_FILE]
    assert sample_repo.git("show", f"{branch}:src/semver/extra.py") == "X = 1\n"
