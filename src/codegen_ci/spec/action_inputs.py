"""The action's settings, read once from the environment into a frozen object.

Inputs come from `INPUT_<NAME>`: the runner keeps hyphens (`INPUT_OPENAI-API-KEY`), a shell can
only set the underscore form (`INPUT_OPENAI_API_KEY`); both are read, the hyphen form wins, and an
empty value counts as unset (the runner passes declared inputs without a default as ""). The
model service and token also fall back to their plain variables so the same code runs locally.
How one value is read and checked (lines, lists, numbers, booleans) is in `spec/input_readers.py`.

Only action inputs feed `spec_layer()`; `CODEGEN_MODEL` and `OPENAI_BASE_URL` feed `env_layer()`,
because the contract ranks `.codegen.yml` between the two.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from codegen_ci.spec.input_readers import ActionInputs, PlainVariables

_SECRET_FIELDS = {"openai_api_key", "github_token"}
_BOT_SUFFIX = "[bot]"


def bot_key(login: str) -> str:
    """How a login is compared with `allowed-bots`: case-insensitive, `[bot]` suffix optional."""
    login = login.strip().lower()
    return login[: -len(_BOT_SUFFIX)] if login.endswith(_BOT_SUFFIX) else login


@dataclass(frozen=True)
class ActionSettings:
    # action inputs
    task: str | None = None
    spec: str | None = None
    model: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    github_token: str | None = None
    trigger_phrase: str = "/codegen"
    trigger_label: str = "codegen"
    max_iterations: int | None = None
    candidates: int | None = None
    test_command: tuple[str, ...] = ()
    lint_command: tuple[str, ...] = ()
    setup_command: tuple[str, ...] = ()
    allowed_bots: frozenset[str] = frozenset()
    draft_on_failure: bool = False
    env_passthrough: tuple[str, ...] = ()
    output_dir: Path | None = None
    working_directory: Path | None = None
    max_ci_fix_attempts: int = 2
    ci_fix_label: str = ""
    sandbox: str = "auto"  # auto, bwrap, landlock or off; security/sandbox.py reads the same input
    # plain environment, lower in precedence than `.codegen.yml`
    env_model: str | None = None
    env_base_url: str | None = None
    # the GitHub Actions environment
    in_actions: bool = False
    event_name: str | None = None
    event_path: Path | None = None
    repository: str | None = None
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    workspace: Path | None = None
    output_file: Path | None = None
    step_summary: Path | None = None
    run_id: str | None = None
    run_attempt: int = 1
    actor: str | None = None
    triggering_actor: str | None = None
    runner_temp: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ActionSettings:
        env = os.environ if environ is None else environ
        inp = ActionInputs(env)
        plain = PlainVariables(env)
        return cls(
            task=inp.text("task"),
            spec=inp.text("spec"),
            model=inp.text("model"),
            openai_api_key=inp.text("openai-api-key") or plain.text("OPENAI_API_KEY"),
            openai_base_url=inp.text("openai-base-url"),
            github_token=inp.text("github-token") or plain.text("GITHUB_TOKEN"),
            trigger_phrase=inp.text("trigger-phrase") or "/codegen",
            trigger_label=inp.text("trigger-label") or "codegen",
            max_iterations=inp.positive_int("max-iterations"),
            candidates=inp.positive_int("candidates"),
            test_command=inp.lines("test-command"),
            lint_command=inp.lines("lint-command"),
            setup_command=inp.lines("setup-command"),
            allowed_bots=frozenset(bot_key(b) for b in inp.items("allowed-bots")),
            draft_on_failure=inp.boolean("draft-on-failure", default=False),
            env_passthrough=inp.items("env-passthrough"),
            output_dir=inp.path("output-dir"),
            working_directory=inp.path("working-directory"),
            max_ci_fix_attempts=inp.count("max-ci-fix-attempts", default=2),
            ci_fix_label=inp.text("ci-fix-label") or "",
            sandbox=inp.text("sandbox") or "auto",
            env_model=plain.text("CODEGEN_MODEL"),
            env_base_url=plain.text("OPENAI_BASE_URL"),
            in_actions=plain.text("GITHUB_ACTIONS") == "true",
            event_name=plain.text("GITHUB_EVENT_NAME"),
            event_path=plain.path("GITHUB_EVENT_PATH"),
            repository=plain.text("GITHUB_REPOSITORY"),
            api_url=(plain.text("GITHUB_API_URL") or cls.api_url).rstrip("/"),
            server_url=(plain.text("GITHUB_SERVER_URL") or cls.server_url).rstrip("/"),
            workspace=plain.path("GITHUB_WORKSPACE"),
            output_file=plain.path("GITHUB_OUTPUT"),
            step_summary=plain.path("GITHUB_STEP_SUMMARY"),
            run_id=plain.text("GITHUB_RUN_ID"),
            run_attempt=plain.positive_int("GITHUB_RUN_ATTEMPT") or 1,
            actor=plain.text("GITHUB_ACTOR"),
            triggering_actor=plain.text("GITHUB_TRIGGERING_ACTOR") or plain.text("GITHUB_ACTOR"),
            runner_temp=plain.path("RUNNER_TEMP"),
        )

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown = "'***'" if f.name in _SECRET_FIELDS and value else repr(value)
            parts.append(f"{f.name}={shown}")
        return f"ActionSettings({', '.join(parts)})"

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values to mask in logs and to redact from everything the tool writes."""
        return tuple(v for v in (self.openai_api_key, self.github_token) if v)

    @property
    def run_url(self) -> str | None:
        """The run's page; a re-run's page names its attempt, whose logs the reader wants."""
        if not (self.repository and self.run_id):
            return None
        url = f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        return f"{url}/attempts/{self.run_attempt}" if self.run_attempt > 1 else url

    @property
    def default_output_dir(self) -> Path | None:
        """`$RUNNER_TEMP/codegen/<run id>-<attempt>`; None outside Actions (the CLI decides)."""
        if self.output_dir:
            return self.output_dir
        if not (self.runner_temp and self.run_id):
            return None
        return self.runner_temp / "codegen" / f"{self.run_id}-{self.run_attempt}"

    def is_allowed_bot(self, login: str) -> bool:
        return bot_key(login) in self.allowed_bots

    def spec_layer(self) -> dict[str, Any]:
        """The action inputs that are spec fields, as a partial spec (only keys that are set)."""
        layer: dict[str, Any] = {}
        validation = {
            key: list(commands)
            for key, commands in (
                ("setup", self.setup_command),
                ("lint", self.lint_command),
                ("test", self.test_command),
            )
            if commands
        }
        if validation:
            layer["validation"] = validation
        if self.max_iterations is not None:
            layer["limits"] = {"max_iterations": self.max_iterations}
        if self.candidates is not None:
            layer["candidates"] = {"count": self.candidates}
        model = _present(name=self.model, base_url=self.openai_base_url)
        if model:
            layer["model"] = model
        if self.env_passthrough:
            layer["env_passthrough"] = list(self.env_passthrough)
        return layer

    def env_layer(self) -> dict[str, Any]:
        """`CODEGEN_MODEL` and `OPENAI_BASE_URL` as a partial spec (below `.codegen.yml`)."""
        model = _present(name=self.env_model, base_url=self.env_base_url)
        return {"model": model} if model else {}


def _present(**values: str | None) -> dict[str, str]:
    return {key: value for key, value in values.items() if value}
