from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codegen_ci.security.safe_env import is_hard_denied, is_secret_name, removed_names, safe_env

# What a Docker action step sees on a GitHub-hosted runner, plus a few user secrets.
ACTIONS_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/github/home",
    "LANG": "C.UTF-8",
    "CI": "true",
    "PWD": "/github/workspace",
    "GITHUB_ACTIONS": "true",
    "GITHUB_WORKSPACE": "/github/workspace",
    "GITHUB_EVENT_PATH": "/github/workflow/event.json",
    "GITHUB_REPOSITORY": "octo/hello",
    "GITHUB_API_URL": "https://api.github.com",
    "RUNNER_TEMP": "/home/runner/work/_temp",
    "GITHUB_TOKEN": "ghs_" + "x" * 36,
    "GH_TOKEN": "ghs_" + "y" * 36,
    "OPENAI_API_KEY": "sk-" + "z1" * 20,
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.actions.githubusercontent.com/abc",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "eyJ0eXAiOiJKV1Qi",
    "ACTIONS_RUNTIME_TOKEN": "eyJ0eXAiOiJKV1Qi",
    "ACTIONS_RUNTIME_URL": "https://pipelines.actions.githubusercontent.com/x/",
    "ACTIONS_CACHE_URL": "https://artifactcache.actions.githubusercontent.com/x/",
    "ACTIONS_RESULTS_URL": "https://results-receiver.actions.githubusercontent.com/",
    "ACTIONS_STEP_DEBUG": "false",
    "GITHUB_ENV": "/github/file_commands/set_env_1",
    "GITHUB_PATH": "/github/file_commands/add_path_1",
    "GITHUB_OUTPUT": "/github/file_commands/set_output_1",
    "GITHUB_STATE": "/github/file_commands/save_state_1",
    "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary_1",
    "INPUT_GITHUB-TOKEN": "ghs_" + "w" * 36,
    "INPUT_OPENAI-API-KEY": "sk-" + "v1" * 20,
    "INPUT_OPENAI_API_KEY": "sk-" + "u1" * 20,
    "INPUT_MODEL": "gpt-4o-mini",
    "INPUT_TRIGGER-LABEL": "codegen",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "NPM_TOKEN": "npm_abcdef",
    "DATABASE_PASSWORD": "hunter22",
    "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",
    "TOKENIZERS_PARALLELISM": "false",
    "KEYBOARD_LAYOUT": "us",
    "GIT_AUTHOR_NAME": "codegen-ci",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
}

HARD_DENIED_IN_ENV = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "OPENAI_API_KEY",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_OUTPUT",
    "GITHUB_STATE",
    "GITHUB_STEP_SUMMARY",
    "INPUT_GITHUB-TOKEN",
    "INPUT_OPENAI-API-KEY",
    "INPUT_OPENAI_API_KEY",
    "INPUT_MODEL",
    "INPUT_TRIGGER-LABEL",
]
SECRET_LOOKING_IN_ENV = ["AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "DATABASE_PASSWORD", "SSH_AUTH_SOCK"]
KEPT = [
    "PATH",
    "HOME",
    "LANG",
    "CI",
    "PWD",
    "GITHUB_ACTIONS",
    "GITHUB_WORKSPACE",
    "GITHUB_EVENT_PATH",
    "GITHUB_REPOSITORY",
    "GITHUB_API_URL",
    "RUNNER_TEMP",
    "ACTIONS_STEP_DEBUG",
    "TOKENIZERS_PARALLELISM",
    "KEYBOARD_LAYOUT",
    "GIT_AUTHOR_NAME",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_0",
    "GIT_CONFIG_VALUE_0",
]


def test_drops_every_listed_and_secret_looking_name() -> None:
    env = safe_env(ACTIONS_ENV)
    for name in HARD_DENIED_IN_ENV + SECRET_LOOKING_IN_ENV:
        assert name not in env, name


def test_keeps_ordinary_variables_unchanged() -> None:
    env = safe_env(ACTIONS_ENV)
    for name in KEPT:
        assert env[name] == ACTIONS_ENV[name], name
    assert env["CI"] == "true"


def test_no_secret_value_survives() -> None:
    values = set(safe_env(ACTIONS_ENV).values())
    for name in HARD_DENIED_IN_ENV + SECRET_LOOKING_IN_ENV:
        if name != "INPUT_MODEL" and name != "INPUT_TRIGGER-LABEL":
            assert ACTIONS_ENV[name] not in values, name


def test_git_never_prompts() -> None:
    assert safe_env({})["GIT_TERMINAL_PROMPT"] == "0"
    assert safe_env({"GIT_TERMINAL_PROMPT": "1"})["GIT_TERMINAL_PROMPT"] == "0"


def test_does_not_change_user_semantics() -> None:
    env = safe_env({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "GIT_TERMINAL_PROMPT": "0"}


def test_input_mapping_is_not_modified() -> None:
    original = dict(ACTIONS_ENV)
    safe_env(original, passthrough=["*"], extra={"X": "1"})
    assert original == ACTIONS_ENV


def test_passthrough_keeps_secret_looking_names_by_exact_name_or_glob() -> None:
    env = safe_env(ACTIONS_ENV, passthrough=["DATABASE_PASSWORD", "AWS_*"])
    assert env["DATABASE_PASSWORD"] == "hunter22"
    assert env["AWS_SECRET_ACCESS_KEY"] == ACTIONS_ENV["AWS_SECRET_ACCESS_KEY"]
    assert "NPM_TOKEN" not in env


@pytest.mark.parametrize(
    "passthrough",
    [
        ["*"],
        ["GITHUB_TOKEN", "OPENAI_API_KEY", "GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH"],
        ["INPUT_*", "ACTIONS_*", "GITHUB_*", "GH_*", "OPENAI_*"],
    ],
)
def test_hard_denied_names_cannot_be_passed_through(passthrough: list[str]) -> None:
    env = safe_env(ACTIONS_ENV, passthrough=passthrough)
    for name in HARD_DENIED_IN_ENV:
        assert name not in env, name


def test_hard_denied_regardless_of_case() -> None:
    env = safe_env({"github_token": "ghs_x", "Input_Openai-Api-Key": "k"}, passthrough=["*"])
    assert "github_token" not in env
    assert "Input_Openai-Api-Key" not in env


def test_extra_is_added_but_cannot_reintroduce_hard_denied_names() -> None:
    assert safe_env({}, extra={"PYTHONHASHSEED": "0"})["PYTHONHASHSEED"] == "0"
    with pytest.raises(ValueError, match="GITHUB_TOKEN"):
        safe_env({}, extra={"GITHUB_TOKEN": "x"})


def test_removed_names_lists_exactly_what_was_dropped_sorted() -> None:
    names = removed_names(ACTIONS_ENV)
    assert names == sorted(names)
    assert set(names) == set(HARD_DENIED_IN_ENV + SECRET_LOOKING_IN_ENV)
    assert set(names) == set(ACTIONS_ENV) - set(safe_env(ACTIONS_ENV))


def test_removed_names_honours_passthrough() -> None:
    names = removed_names(ACTIONS_ENV, ["DATABASE_PASSWORD", "GITHUB_TOKEN"])
    assert "DATABASE_PASSWORD" not in names
    assert "GITHUB_TOKEN" in names


def test_a_child_process_sees_no_credentials() -> None:
    env = safe_env({**ACTIONS_ENV, "PATH": "/usr/bin:/bin"})
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    for name in HARD_DENIED_IN_ENV + SECRET_LOOKING_IN_ENV:
        assert name not in seen
    assert seen["CI"] == "true"


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "GITHUBTOKEN",
        "npm_config__authToken",
        "NODE_AUTH_TOKEN",
        "AWS_SESSION_TOKENS",
        "API_KEY",
        "APIKEY",
        "STRIPE_SECRET",
        "MYSECRETS",
        "DB_PASSWORD",
        "DBPASSWORD",
        "MYSQL_PWD_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "DOCKER_CREDS",
        "SSH_PRIVATE_KEY",
        "PRIVATE",
        "KEY",
        "SIGNING_KEYS",
        "COMPOSER_AUTH",
        "HTTP_AUTHORIZATION",
        "SMTP_PASS",
        "GH_PAT",
        "SESSION_COOKIE",
        "INPUT_OPENAI-API-KEY",
        "azure.openai.key",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "PWD",
        "HOME",
        "KEYBOARD_LAYOUT",
        "MONKEY_PATCH",
        "TOKENIZERS_PARALLELISM",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "PASSTHROUGH",
        "PATTERN",
        "AUTHOR",
        "GIT_CONFIG_KEY_0",
        "PYTHONPATH",
        "CI",
        "LANG",
    ],
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_hard_denied_covers_inputs_in_both_forms() -> None:
    assert is_hard_denied("INPUT_GITHUB-TOKEN")
    assert is_hard_denied("INPUT_GITHUB_TOKEN")
    assert is_hard_denied("ACTIONS_SOMETHING_NEW_TOKEN")
    assert not is_hard_denied("ACTIONS_STEP_DEBUG")
    assert not is_hard_denied("PATH")
