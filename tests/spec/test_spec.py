"""Spec loading and validation through `codegen-ci validate`, `schema` and `run`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.spec.layers import deep_merge, resolve_spec

GOOD = """\
version: 1
title: Reset patch in bump_minor
task: |
  Version.bump_minor() must reset the patch number to 0.
context: [src/semver/version.py, tests/]
validation:
  test: ["python -m pytest -q tests"]
  timeout: 600
limits:
  max_iterations: 3
"""


def validate(tmp_path: Path, text: str, name: str = "spec.yaml") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_valid_spec_passes(tmp_path: Path) -> None:
    code, output = validate(tmp_path, GOOD)
    assert code == 0, output
    assert "ok:" in output


def test_unknown_key_is_named_with_line_and_suggestion(tmp_path: Path) -> None:
    code, output = validate(tmp_path, GOOD.replace("validation:", "validaton:"))
    assert code == 2
    assert "spec.yaml:6: validaton: unknown key 'validaton' (did you mean 'validation'?)" in output


def test_nested_unknown_key_names_the_path(tmp_path: Path) -> None:
    code, output = validate(tmp_path, GOOD.replace("  timeout: 600", "  timout: 600"))
    assert code == 2
    assert "spec.yaml:8: validation.timout: unknown key 'timout'" in output


def test_wrong_type_names_key_and_line(tmp_path: Path) -> None:
    code, output = validate(tmp_path, GOOD.replace("max_iterations: 3", "max_iterations: many"))
    assert code == 2
    assert "spec.yaml:10: limits.max_iterations:" in output
    assert "'many'" in output


def test_missing_task(tmp_path: Path) -> None:
    text = "\n".join(
        line for line in GOOD.splitlines() if "task" not in line and "bump" not in line
    )
    code, output = validate(tmp_path, text)
    assert code == 2
    assert "task: required key is missing" in output


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "version: 1\ntask: [unclosed\ntitle: x\n")
    assert code == 2
    assert "spec.yaml:" in output and "YAML error" in output


def test_not_a_mapping(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "- just\n- a list\n")
    assert code == 2
    assert "expected a mapping of keys, got a list" in output


def test_every_problem_of_every_file_is_reported(tmp_path: Path) -> None:
    bad1 = tmp_path / "a.yaml"
    bad1.write_text("task: x\nfoo: 1\nbar: 2\n")
    bad2 = tmp_path / "b.yaml"
    bad2.write_text("title: no task\n")
    result = CliRunner().invoke(cli, ["validate", str(bad1), str(bad2)])
    assert result.exit_code == 2
    assert "a.yaml:2: foo:" in result.output and "a.yaml:3: bar:" in result.output
    assert "b.yaml" in result.output and "2 of 2 file(s) invalid" in result.output


def test_repo_config_validates_without_task(tmp_path: Path) -> None:
    code, output = validate(tmp_path, "validation:\n  test: pytest -q\n", name=".codegen.yml")
    assert code == 0, output
    code, output = validate(tmp_path, "task: nope\n", name=".codegen.yml")
    assert code == 2 and "unknown key 'task'" in output


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_single_string_commands_become_lists(tmp_path: Path) -> None:
    spec = resolve_spec({"task": "t", "validation": {"test": "pytest -q", "lint": "ruff check ."}})
    assert spec.validation.test == ["pytest -q"]
    assert spec.validation.lint == ["ruff check ."]


def test_precedence_later_layers_win_lists_replace() -> None:
    repo_config = {
        "validation": {"test": ["make test"], "lint": ["make lint"]},
        "limits": {"max_iterations": 5},
    }
    spec_file = {"task": "t", "validation": {"test": ["pytest"]}}
    flags = {"limits": {"max_iterations": 2}}
    spec = resolve_spec({"model": {"name": "from-env"}}, repo_config, spec_file, flags)
    assert spec.validation.test == ["pytest"]
    assert spec.validation.lint == ["make lint"]
    assert spec.limits.max_iterations == 2
    assert spec.model.name == "from-env"
    assert deep_merge({"a": {"b": 1}}, {"a": {"c": 2}}) == {"a": {"b": 1, "c": 2}}


def test_schema_is_json_schema_with_descriptions() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["required"] == ["task"]
    assert schema["additionalProperties"] is False
    assert "description" in schema["properties"]["task"]
    validation = schema["$defs"]["Validation"]
    assert all("description" in p for p in validation["properties"].values())


@pytest.mark.e2e
def test_schema_validates_a_spec_with_check_jsonschema(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(CliRunner().invoke(cli, ["schema"]).output)
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("validation:", "validaton:"))
    tool = str(Path(sys.executable).parent / "check-jsonschema")
    ok = subprocess.run([tool, "--schemafile", str(schema), str(good)], capture_output=True)
    assert ok.returncode == 0, ok.stdout
    nok = subprocess.run([tool, "--schemafile", str(schema), str(bad)], capture_output=True)
    assert nok.returncode == 1


@pytest.mark.e2e
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"]])
def test_module_entry_point(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "codegen_ci", *args], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    if args == ["--version"]:
        assert result.stdout.strip() == "codegen-ci, version 0.1.0"


@pytest.mark.e2e
def test_run_with_bad_spec_exits_2_without_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("task: x\nvalidaton: {}\n")
    result = subprocess.run(
        [sys.executable, "-m", "codegen_ci", "run", str(spec), "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "validaton" in result.stderr


@pytest.mark.parametrize("value", ["keep", "true", "false"])
def test_protect_tests_takes_keep_and_the_old_booleans(tmp_path: Path, value: str) -> None:
    code, output = validate(tmp_path, GOOD.replace("timeout: 600", f"protect_tests: {value}"))
    assert code == 0, output


def test_protect_tests_refuses_other_words(tmp_path: Path) -> None:
    code, output = validate(tmp_path, GOOD.replace("timeout: 600", "protect_tests: strict"))
    assert code != 0 and "protect_tests" in output


def test_existing_tests_are_kept_by_default_in_the_schema() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).output)
    protect = schema["$defs"]["Validation"]["properties"]["protect_tests"]
    assert protect["default"] == "keep"
    spec = resolve_spec({"task": "t"})
    assert spec.validation.protect_tests == "keep" and spec.validation.keep_tests
    assert not spec.validation.refuse_test_edits
