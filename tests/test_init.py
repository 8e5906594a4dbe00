"""`codegen-ci init`: detected commands, a `.codegen.yml` that validates, workflow templates."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from codegen_ci.cli import cli
from codegen_ci.spec import load_layer_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "workflows"
TEMPLATES = resources.files("codegen_ci").joinpath("templates", "workflows")


def init(repo: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["init", "--repo", str(repo), *args])


def validation_of(repo: Path) -> dict[str, list[str]]:
    """The written file, loaded and validated as users' runs load it."""
    layer = load_layer_file(repo / ".codegen.yml", is_spec=False)
    return layer["validation"]  # type: ignore[no-any-return]


def test_python_project_gets_pytest_and_ruff(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\n'
        '[project.optional-dependencies]\ntest = ["pytest>=8"]\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
        "[tool.ruff]\nline-length = 100\n"
    )

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    assert "wrote .codegen.yml" in result.output
    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest -q"]
    assert validation["lint"] == ["ruff check ."]
    text = (tmp_path / ".codegen.yml").read_text()
    assert "# Detected: pyproject.toml (pytest, ruff)" in text
    assert "# setup: [\"python -m pip install -e '.[test]'\"]" in text  # a suggestion only


def test_python_project_with_flake8_and_mypy_from_config_files(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(
        "[tool:pytest]\naddopts = -q\n[flake8]\nmax-line-length = 99\n"
    )
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\n")

    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest -q"]
    assert validation["lint"] == ["flake8", "mypy ."]


def test_node_project_uses_its_package_scripts(tmp_path: Path) -> None:
    scripts = {"test": "vitest run", "lint": "eslint .", "build": "tsc"}
    (tmp_path / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    (tmp_path / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")

    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["pnpm run test"]
    assert validation["lint"] == ["pnpm run lint"]


def test_npm_placeholder_test_script_is_not_a_test_command(tmp_path: Path) -> None:
    placeholder = 'echo "Error: no test specified" && exit 1'
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": placeholder}}))

    result = init(tmp_path)

    assert result.exit_code == 0
    assert validation_of(tmp_path)["test"] == []
    assert "no test command detected" in result.output


def test_go_project_and_makefile_fallback(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")
    (tmp_path / "Makefile").write_text("test:\n\tgo test ./...\nlint:\n\tgolangci-lint run\n")

    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["go test ./..."]
    assert validation["lint"] == ["go vet ./..."]


def test_makefile_and_cargo(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("VERSION := 1\nlint:\n\tshellcheck *.sh\ncheck: lint\n")
    assert init(tmp_path).exit_code == 0
    assert validation_of(tmp_path)["lint"] == ["make lint"]

    (tmp_path / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    assert init(tmp_path, "--force").exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["cargo test"]
    assert validation["lint"] == ["cargo clippy -- -D warnings"]


def test_workflows_are_written_from_the_templates(tmp_path: Path) -> None:
    result = init(tmp_path, "--workflows", "issue", "--workflows", "comment")

    assert result.exit_code == 0, result.output
    workflows = tmp_path / ".github" / "workflows"
    assert sorted(p.name for p in workflows.iterdir()) == [
        "codegen-comment.yml",
        "codegen-issue-labeled.yml",
    ]
    for name in ("comment.yml", "issue-labeled.yml"):
        assert (workflows / f"codegen-{name}").read_text() == (EXAMPLES / name).read_text()
        assert f"wrote .github/workflows/codegen-{name}" in result.output


def test_templates_stay_identical_to_the_examples() -> None:
    templates = {t.name: t.read_text(encoding="utf-8") for t in TEMPLATES.iterdir()}
    examples = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*.yml")}
    assert templates == examples


@pytest.mark.parametrize("existing", [".codegen.yml", ".github/workflows/codegen-nightly.yml"])
def test_existing_files_are_kept_unless_forced(tmp_path: Path, existing: str) -> None:
    target = tmp_path / existing
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine\n")
    (tmp_path / "go.mod").write_text("module demo\n")

    refused = init(tmp_path, "--workflows", "schedule")

    assert refused.exit_code == 2
    assert existing in refused.output and "--force" in refused.output
    assert target.read_text() == "mine\n"
    assert len(list(tmp_path.rglob("*.yml"))) == 1  # nothing else written either

    forced = init(tmp_path, "--workflows", "schedule", "--force")

    assert forced.exit_code == 0, forced.output
    assert target.read_text() != "mine\n"
    assert validation_of(tmp_path)["test"] == ["go test ./..."]
