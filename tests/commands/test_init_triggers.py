"""Which workflows `codegen-ci init` reads as the repository's checks: those that run on pull
requests or on pushes of branches. mahmoud/boltons' publish.yml runs on `push: tags:` only (a
release); init read it as CI and listed its build and upload steps under "left out"."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli


def _workflow(repo: Path, name: str, on: object, run: str) -> None:
    folder = repo / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    steps = [{"uses": "actions/checkout@v4"}, {"run": run}]
    doc = {"name": name, "on": on, "jobs": {"job": {"runs-on": "ubuntu-latest", "steps": steps}}}
    (folder / f"{name}.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


def test_a_workflow_that_runs_for_tags_only_is_a_release_not_a_check(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    _workflow(tmp_path, "tests", {"push": None, "pull_request": None}, "python -m pytest tests")
    _workflow(
        tmp_path, "publish", {"push": {"tags": ["*"]}}, "python -m build && twine check dist/*"
    )
    _workflow(tmp_path, "nightly", {"schedule": [{"cron": "0 0 * * *"}]}, "python -m tox -e slow")
    # branches and tags: it runs for the branches, so it checks them
    _workflow(
        tmp_path, "lint", {"push": {"branches": ["main"], "tags": ["v*"]}}, "python -m ruff check ."
    )
    # `tags-ignore` alone is a tags filter too: without a branches one, no branch runs it
    _workflow(tmp_path, "docs", {"push": {"tags-ignore": ["v*"]}}, "python -m sphinx docs out")

    result = CliRunner().invoke(cli, ["init", "--repo", str(tmp_path)])

    assert result.exit_code == 0, result.output
    text = (tmp_path / ".codegen.yml").read_text()
    assert "publish.yml" not in result.output and "twine" not in text and "build" not in text
    assert "nightly.yml" not in result.output and "docs.yml" not in result.output
    assert "ruff check" in text and "pytest tests" in text
