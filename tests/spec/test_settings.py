from __future__ import annotations

from pathlib import Path

import pytest

from codegen_ci.errors import InputError
from codegen_ci.spec.action_inputs import ActionSettings
from codegen_ci.spec.layers import deep_merge, resolve_spec

RUNNER_ENV = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_EVENT_NAME": "issues",
    "GITHUB_EVENT_PATH": "/home/runner/work/_temp/_github_workflow/event.json",
    "GITHUB_REPOSITORY": "octo/hello",
    "GITHUB_SERVER_URL": "https://github.example.com",
    "GITHUB_API_URL": "https://github.example.com/api/v3/",
    "GITHUB_WORKSPACE": "/home/runner/work/hello/hello",
    "GITHUB_OUTPUT": "/home/runner/work/_temp/_runner_file_commands/set_output_1",
    "GITHUB_STEP_SUMMARY": "/home/runner/work/_temp/_runner_file_commands/step_summary_1",
    "GITHUB_RUN_ID": "9876",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_ACTOR": "octocat",
    "RUNNER_TEMP": "/home/runner/work/_temp",
}


def test_reads_the_runner_environment() -> None:
    s = ActionSettings.from_env(RUNNER_ENV)
    assert s.in_actions
    assert s.event_name == "issues"
    assert s.event_path == Path("/home/runner/work/_temp/_github_workflow/event.json")
    assert s.api_url == "https://github.example.com/api/v3"
    assert s.run_url == "https://github.example.com/octo/hello/actions/runs/9876"
    assert s.default_output_dir == Path("/home/runner/work/_temp/codegen/9876-1")
    assert s.triggering_actor == "octocat"  # falls back to GITHUB_ACTOR


def test_defaults_outside_actions() -> None:
    s = ActionSettings.from_env({})
    assert not s.in_actions
    assert s.api_url == "https://api.github.com"
    assert s.server_url == "https://github.com"
    assert s.run_url is None
    assert s.default_output_dir is None
    assert (s.trigger_phrase, s.trigger_label, s.run_attempt) == ("/codegen", "codegen", 1)
    assert s.spec_layer() == {} and s.env_layer() == {}


def test_a_rerun_links_to_its_attempt() -> None:
    s = ActionSettings.from_env({**RUNNER_ENV, "GITHUB_RUN_ATTEMPT": "3"})
    assert s.run_url == "https://github.example.com/octo/hello/actions/runs/9876/attempts/3"
    assert s.default_output_dir == Path("/home/runner/work/_temp/codegen/9876-3")


def test_output_dir_input_wins_over_the_default() -> None:
    s = ActionSettings.from_env({**RUNNER_ENV, "INPUT_OUTPUT-DIR": "out"})
    assert s.default_output_dir == Path("out")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"INPUT_OPENAI-API-KEY": "sk-hyphen"}, "sk-hyphen"),
        ({"INPUT_OPENAI_API_KEY": "sk-underscore"}, "sk-underscore"),
        ({"INPUT_OPENAI-API-KEY": "sk-hyphen", "INPUT_OPENAI_API_KEY": "sk-u"}, "sk-hyphen"),
        ({"INPUT_OPENAI-API-KEY": "", "INPUT_OPENAI_API_KEY": "sk-u"}, "sk-u"),
        ({"INPUT_OPENAI-API-KEY": "", "OPENAI_API_KEY": "sk-env"}, "sk-env"),
        ({"INPUT_OPENAI-API-KEY": "sk-in", "OPENAI_API_KEY": "sk-env"}, "sk-in"),
        ({"INPUT_OPENAI-API-KEY": "  "}, None),
    ],
)
def test_input_forms_and_fallback(env: dict[str, str], expected: str | None) -> None:
    assert ActionSettings.from_env(env).openai_api_key == expected


def test_token_from_input_or_environment() -> None:
    assert ActionSettings.from_env({"GITHUB_TOKEN": "ghs_env"}).github_token == "ghs_env"
    both = {"GITHUB_TOKEN": "ghs_env", "INPUT_GITHUB-TOKEN": "ghp_input"}
    assert ActionSettings.from_env(both).github_token == "ghp_input"


def test_secrets_never_show_in_repr_or_str() -> None:
    s = ActionSettings.from_env(
        {"INPUT_OPENAI-API-KEY": "sk-very-secret-1", "GITHUB_TOKEN": "ghs_very_secret_2"}
    )
    for text in (repr(s), str(s), f"{s}", f"{s!r}"):
        assert "sk-very-secret-1" not in text and "ghs_very_secret_2" not in text
        assert "openai_api_key='***'" in text
    assert set(s.secrets) == {"sk-very-secret-1", "ghs_very_secret_2"}
    assert "github_token=None" in repr(ActionSettings.from_env({}))


def test_multi_line_commands_and_lists() -> None:
    s = ActionSettings.from_env(
        {
            "INPUT_TEST-COMMAND": "pytest -q tests\n\n  npm test -- --ci  \n",
            "INPUT_LINT_COMMAND": "ruff check .",
            "INPUT_SETUP-COMMAND": "pip install -e .\npip install pytest",
            "INPUT_ALLOWED-BOTS": "Renovate[bot], dependabot\nmy-app[BOT]",
            "INPUT_ENV-PASSTHROUGH": "NPM_TOKEN,\nPIP_INDEX_URL",
            "INPUT_MAX-ITERATIONS": "5",
        }
    )
    assert s.test_command == ("pytest -q tests", "npm test -- --ci")
    assert s.lint_command == ("ruff check .",)
    assert s.setup_command == ("pip install -e .", "pip install pytest")
    assert s.env_passthrough == ("NPM_TOKEN", "PIP_INDEX_URL")
    assert s.max_iterations == 5
    for login in ("renovate[bot]", "RENOVATE", "dependabot[bot]", "My-App[bot]"):
        assert s.is_allowed_bot(login)
    assert not s.is_allowed_bot("github-actions[bot]")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("False", False), ("yes", True), ("NO", False), ("1", True), ("0", False)],
)
def test_booleans(value: str, expected: bool) -> None:
    env = {"INPUT_DRAFT-ON-FAILURE": value}
    assert ActionSettings.from_env(env).draft_on_failure is expected


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"INPUT_DRAFT-ON-FAILURE": "maybe"}, "input draft-on-failure"),
        ({"INPUT_MAX-ITERATIONS": "three"}, "input max-iterations"),
        ({"INPUT_MAX_ITERATIONS": "0"}, "input max-iterations"),
        ({"GITHUB_RUN_ATTEMPT": "x"}, "GITHUB_RUN_ATTEMPT"),
    ],
)
def test_bad_values_name_the_input(env: dict[str, str], names: str) -> None:
    with pytest.raises(InputError, match=names):
        ActionSettings.from_env(env)


def test_spec_layer_holds_only_the_inputs_that_are_set() -> None:
    s = ActionSettings.from_env(
        {
            "INPUT_TEST-COMMAND": "pytest -q",
            "INPUT_MODEL": "gpt-4.1-mini",
            "INPUT_MAX-ITERATIONS": "4",
            "INPUT_ENV_PASSTHROUGH": "NPM_TOKEN",
            "CODEGEN_MODEL": "from-env",
            "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
        }
    )
    assert s.spec_layer() == {
        "validation": {"test": ["pytest -q"]},
        "limits": {"max_iterations": 4},
        "model": {"name": "gpt-4.1-mini"},
        "env_passthrough": ["NPM_TOKEN"],
    }
    assert s.env_layer() == {"model": {"name": "from-env", "base_url": "http://127.0.0.1:8000/v1"}}


def test_layers_merge_in_contract_order() -> None:
    """environment < .codegen.yml < action input < spec."""
    s = ActionSettings.from_env(
        {"INPUT_LINT-COMMAND": "ruff check .", "CODEGEN_MODEL": "env-model"}
    )
    repo_config = {"validation": {"test": ["pytest"], "lint": ["flake8"]}, "model": {"name": "m"}}
    spec = {"task": "do it", "validation": {"test": ["pytest -x"]}}
    merged = resolve_spec(s.env_layer(), repo_config, s.spec_layer(), spec)
    assert merged.validation.lint == ["ruff check ."]
    assert merged.validation.test == ["pytest -x"]
    assert merged.model.name == "m"
    assert deep_merge(s.env_layer())["model"]["name"] == "env-model"
