"""A runner-like world for `codegen-ci action`: the GitHub REST double, the scripted model, a
bare `origin`, a workspace cloned from it the way actions/checkout leaves it, webhook payloads
built from real fixtures, and the environment the runner sets. Each run is the CLI's `action`
command, in-process (click's runner, in the workspace, with the runner's variables set); a world
given another `command` (the Docker entrypoint, an installed script) starts it as a process."""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sample_repo import PYTEST, QUICK_GATE, SampleRepo, sh

from codegen_ci.testing.github_double import GitHubDouble
from codegen_ci.testing.provider_cache import PromptCache
from codegen_ci.testing.scripted_model import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "fixtures" / "github-events"
OCTOKIT = EVENTS / "octokit-webhooks" / "api.github.com"
REPOSITORY = "octo-org/hello"
TOKEN = "ghs_" + "T0kenForTheActionTests1234567890abcd"
API_KEY = "sk-test-action-key-0000000000000000000000"
VERSION = "src/semver/version.py"


def checkout_header(token: str) -> str:
    """What actions/checkout writes into .git/config with persist-credentials: true."""
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    @property
    def log(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


@dataclass
class ActionWorld:
    sample: SampleRepo
    github: GitHubDouble
    model: ScriptedModelServer
    inputs: dict[str, str] = field(default_factory=dict)
    runs: int = 0
    # how the runner starts the tool; none: the `action` command in this process (what
    # `codegen-ci action` runs after its start-up, tests/e2e/security/test_secret_env.py)
    command: list[str] | None = None

    @property
    def tmp(self) -> Path:
        return self.sample.tmp

    # -- payloads from the real fixtures ---------------------------------------------------

    def _retarget(self, payload: dict[str, Any]) -> dict[str, Any]:
        owner, name = REPOSITORY.split("/")
        repo = payload["repository"]
        repo.update(full_name=REPOSITORY, name=name, default_branch="main")
        repo["owner"]["login"] = owner
        return payload

    def issue_labeled(
        self, number: int, sender: str = "alice", label: str = "codegen", sender_type: str = "User"
    ) -> dict[str, Any]:
        payload = _fixture(OCTOKIT / "issues" / "labeled.payload.json")
        issue = self.github.issues[number]
        payload["issue"].update(number=number, title=issue.title, body=issue.body)
        payload["label"]["name"] = label
        payload["sender"].update(login=sender, type=sender_type)
        return self._retarget(payload)

    def comment(
        self, number: int, body: str, user: str = "alice", user_type: str = "User"
    ) -> dict[str, Any]:
        """A new comment (seeded in the double too) on issue or pull request `number`."""
        issue = self.github.issues[number]
        on_pr = issue.pull is not None
        source = (
            EVENTS / "go-playground-webhooks" / "pull-request-issue-comment.json"
            if on_pr
            else OCTOKIT / "issue_comment" / "created.payload.json"
        )
        payload = _fixture(source)
        seeded = self.github.add_comment(number, body, user)
        payload["issue"].update(number=number, title=issue.title, body=issue.body)
        payload["comment"].update(id=seeded.id, body=body)
        payload["comment"]["user"].update(login=user, type=user_type)
        payload["sender"].update(login=user, type=user_type)
        return self._retarget(payload)

    def dispatch(self, task: str, sender: str = "alice") -> dict[str, Any]:
        payload = _fixture(OCTOKIT / "workflow_dispatch" / "payload.json")
        payload["inputs"] = {"task": task}
        payload["sender"].update(login=sender, type="User")
        return self._retarget(payload)

    # -- running the action --------------------------------------------------------------

    def workspace(self) -> Path:
        """A fresh clone of origin, with the credentials actions/checkout persists."""
        path = self.tmp / f"workspace-{self.runs}"
        sh(["git", "clone", "-q", str(self.sample.origin), str(path)], self.tmp)
        sh(
            [
                "git",
                "config",
                "--local",
                "http.https://github.com/.extraheader",
                checkout_header(TOKEN),
            ],
            path,
        )
        return path

    def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        attempt: int = 1,
        env: dict[str, str] | None = None,
        **inputs: str,
    ) -> Result:
        self.runs += 1
        n = self.runs
        workspace = self.workspace()
        event_path = self.tmp / f"event-{n}.json"
        event_path.write_text(json.dumps(payload))
        output, summary = self.tmp / f"output-{n}", self.tmp / f"summary-{n}.md"
        output.touch()
        summary.touch()
        (self.tmp / "runner-temp").mkdir(exist_ok=True)
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_API_URL": self.github.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_ATTEMPT": str(attempt),
            "RUNNER_TEMP": str(self.tmp / "runner-temp"),
            "CODEGEN_RETRY_BACKOFF": "0.01",
            **_input_env({**action_defaults(), **self.inputs, **inputs}),
            **(env or {}),
        }
        if self.command is None:
            code, stdout, stderr = _action_in_process(workspace, env)
        else:
            proc = subprocess.run(
                [*self.command, "action"],
                cwd=workspace,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=120,
            )
            code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        self.last_workspace = workspace
        return Result(code, stdout, stderr, parse_outputs(output.read_text()), summary.read_text())

    # -- inspecting origin -----------------------------------------------------------------

    def origin_refs(self) -> dict[str, str]:
        out = sh(["git", "for-each-ref", "--format=%(refname) %(objectname)"], self.sample.origin)
        return dict(line.split(" ") for line in out.splitlines())

    def origin_git(self, *args: str) -> str:
        return sh(["git", *args], self.sample.origin)


@contextmanager
def open_world(
    sample: SampleRepo,
    *,
    readers: Sequence[str] = (),
    token: str | None = None,
    token_user: str = "github-actions[bot]",
    cache: PromptCache | None = None,
    command: Sequence[str] | None = None,
    proof: bool = False,
    reruns: int | None = None,
    quick: bool = False,
    **inputs: str,
) -> Iterator[ActionWorld]:
    """The action's world: the GitHub double for `octo-org/hello` (alice may write, each of
    `readers` may only read) and the scripted model, both serving until the block ends, with
    the inputs every test passes (the sample's pytest, the model's URL) plus `inputs`.

    `token`: the double then refuses any other credentials; `token_user`: whom the token
    belongs to (the Actions token writes as the bot); `cache`: the model reports usage as a
    caching provider; `command`: how the runner starts the tool (default: this interpreter);
    `proof`: the product's default proof policy (else `no_proof`); `reruns`: the repository's
    `validation.proof.reruns` too (0: no flaky re-run of a failing round's failing tests, one
    more pytest run per failing round, for a test that is not about flakiness); `quick`: the
    test command is `QUICK_GATE`'s check of the fixed line, decided by its exit code (the
    repository's `.codegen.yml` allows a command that runs no tests), for a test whose subject
    is not what the gate finds: no pytest starts (two fewer a passing run)."""
    with (
        GitHubDouble(REPOSITORY, actor=token_user, token=token) as github,
        ScriptedModelServer(cache=cache) as model,
    ):
        github.add_user("alice", role="write")
        if not proof:
            no_proof(sample, reruns=reruns, allow_no_tests=quick)
        for login in readers:
            github.add_user(login, role="read")
        world = ActionWorld(sample, github, model)
        if command is not None:
            world.command = list(command)
        world.inputs = {
            "test-command": QUICK_GATE["test"][0] if quick else PYTEST,
            "openai-base-url": model.base_url,
            "model": "scripted-model",
            **{name.replace("_", "-"): value for name, value in inputs.items()},
        }
        yield world


def _action_in_process(workspace: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """`codegen-ci action` run by click's runner in `workspace` with `env` added to this
    process's environment: its exit code, stdout and stderr (an exception that escaped the
    command is printed to stderr as the interpreter would). As a process it cost about 1.5 s
    of CPU a run (two interpreter starts, the package's and the openai SDK's imports) for what
    a few tests cover once: the start-up of `action` as a process (the re-execution without
    secrets, the inputs restored from the pipe) is test_action_entrypoint_confined.py's (the
    Docker entrypoint) and tests/e2e/install/test_install.py's (the installed script), and what
    a command can read of our environment block is tests/e2e/security/test_secret_env.py's."""
    from click.testing import CliRunner

    from codegen_ci.cli import cli

    cwd = Path.cwd()
    os.chdir(workspace)
    try:
        result = CliRunner().invoke(cli, ["action"], env=env)
    finally:
        os.chdir(cwd)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
        return 1, result.stdout, stderr
    return result.exit_code, result.stdout, stderr


def no_proof(
    sample: SampleRepo, *, reruns: int | None = None, allow_no_tests: bool = False
) -> None:
    """The repository's `.codegen.yml` on origin's main turns the proof run (and the coverage
    run after it) off: two more pytest runs after each passing run, which the action's tests
    are not about (tests/e2e/gate/test_proof_*.py are; test_event_settings.py's proof test and
    any test committing its own `.codegen.yml` get the policy that file gives). `reruns`: the
    flaky re-runs of a failing round's failing tests too (default: the product's);
    `allow_no_tests`: a test command that runs no tests may pass (`open_world`'s `quick`)."""
    if not (sample.path / ".codegen.yml").exists():
        more = "" if reruns is None else f", reruns: {reruns}"
        allow = ", allow_no_tests: true" if allow_no_tests else ""
        sample.commit(
            {
                ".codegen.yml": (
                    f"version: 1\nvalidation: {{proof: {{tests: 'off'{more}}}{allow}}}\n"
                )
            },
            "config",
        )
        sh(["git", "push", "-q", "origin", "main"], sample.path)


def action_defaults() -> dict[str, str]:
    """The runner passes every input that has a default, as action.yml declares it."""
    inputs = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    values = {name: str(spec["default"]) for name, spec in inputs.items() if "default" in spec}
    values["github-token"] = TOKEN
    values["openai-api-key"] = API_KEY
    return values


def _input_env(inputs: dict[str, str]) -> dict[str, str]:
    return {f"INPUT_{name.upper()}": value for name, value in inputs.items()}


def parse_outputs(text: str) -> dict[str, str]:
    """`name<<DELIMITER ... DELIMITER` records (and plain `name=value` lines)."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


def _fixture(path: Path) -> dict[str, Any]:
    return copy.deepcopy(json.loads(path.read_text()))


def push_branch(sample: SampleRepo, branch: str, files: dict[str, str], message: str) -> str:
    """Commit `files` on a new branch from main in the sample repo and push it to origin."""
    sample.git("checkout", "-q", "-b", branch, "main")
    sha = sample.commit(files, message)
    sample.git("push", "-q", "origin", branch)
    sample.git("checkout", "-q", "main")
    return sha
