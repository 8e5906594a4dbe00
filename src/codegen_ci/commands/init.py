"""`codegen-ci init`: a starter `.codegen.yml` with the repository's own test and lint commands
(detected from its build files) and, on request, the example workflows, copied from the
templates shipped in the package (`codegen_ci/templates/workflows`, kept identical to
`examples/workflows` by a test).

The shipped templates use the Docker action (Python and git only), so for Node, Go or Rust the
workflows switch to the runner-host variant (`codegen-ci/codegen-ci/host`, which runs the
commands on the runner) and gain the setup steps and one install step before it.
`examples/workflows/*-node.yml` and `*-go.yml` are exactly this output
(tests/commands/test_init.py keeps them so). What the repository's commands are is
`init_detect.py`'s guess."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import click

from codegen_ci import runners
from codegen_ci.commands.init_detect import Detected, ci_workflows, detect, explain
from codegen_ci.errors import InputError
from codegen_ci.runners import WorkflowAsk
from codegen_ci.security import guarded_read, guarded_write
from codegen_ci.spec.layers import REPO_CONFIG_NAME, parse_layer_text

# --workflows choice -> template file; written as .github/workflows/codegen-<file> so it cannot
# clash with the repository's own workflows.
WORKFLOW_TEMPLATES = {
    "issue": "issue-labeled.yml",
    "comment": "comment.yml",
    "dispatch": "dispatch.yml",
    "schedule": "nightly.yml",
    "review": "review.yml",
    "ci-fix": "ci-fix.yml",
}
DOCKER_ACTION = "uses: codegen-ci/codegen-ci@v0"
HOST_ACTION = "uses: codegen-ci/codegen-ci/host@v0"
# Every template's codegen-ci step starts so; the setup steps go right before it.
ACTION_STEP = "      - name: codegen-ci\n        id: codegen\n"
PYTHON_VERSION = '"3.12"'  # the host variant needs Python 3.11+
NODE_VERSION = "20"
PNPM_VERSION = "9"


def parse_workflows(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--workflows issue,comment` (README's form) and repeated `--workflows` alike."""
    choices = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [c for c in choices if c not in WORKFLOW_TEMPLATES]
    if unknown:
        raise InputError(
            f"--workflows: unknown workflow {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(WORKFLOW_TEMPLATES)} (comma-separated)"
        )
    return tuple(dict.fromkeys(choices))


def init_command(repo: Path, workflows: tuple[str, ...], force: bool) -> int:
    workflows = parse_workflows(workflows)
    root = repo.resolve()
    if not root.is_dir():
        raise InputError(f"{repo} is not a directory")
    detected = detect(root)
    config = config_text(detected)
    # The starter must load as it is written; a failure here is our bug, not the user's input.
    parse_layer_text(config, REPO_CONFIG_NAME, is_spec=False)
    files = {root / REPO_CONFIG_NAME: config}
    # Files the commands need (nextest's JUnit profile), never replacing the repository's own.
    files.update({root / path: text for path, text in detected.files.items()})
    if workflows and (root / REPO_CONFIG_NAME).exists() and not force:
        # Workflows beside the repository's own configuration: keep it, add what was asked.
        files = {}
        click.echo(f"kept {REPO_CONFIG_NAME} (use --force to replace it)")
    ci_names = [name for name, _ in ci_workflows(root)]
    for choice in dict.fromkeys(workflows):
        name = WORKFLOW_TEMPLATES[choice]
        text = in_place(render_workflow(workflow_template(name), detected), ci_names)
        files[root / ".github" / "workflows" / f"codegen-{name}"] = text
    existing = [path.relative_to(root).as_posix() for path in files if path.exists()]
    if existing and not force:
        raise InputError(f"not overwriting {', '.join(existing)} (use --force to replace)")
    # A clone's `.github` or `.codegen.yml` may be a link out: refused before anything is
    # written, and the writer itself never follows one (should it appear meanwhile).
    linked = [rel for path in files if (rel := _linked_part(root, path))]
    if linked:
        raise InputError(_link_message(linked[0]))
    for path, text in files.items():
        rel = path.relative_to(root).as_posix()
        try:
            guarded_write.write_text(root, rel, text, replace=force)
        except guarded_read.Refused as exc:
            raise InputError(_link_message(exc.path) + f" ({exc.reason})") from None
        click.echo(f"wrote {rel}")
    for line in explain(detected):
        click.echo(line)
    show_next_steps(detected, workflows)
    return 0


def _linked_part(root: Path, path: Path) -> str | None:
    """The first part of `path` below `root` that is a symlink, if any."""
    rel = path.relative_to(root)
    for n in range(1, len(rel.parts) + 1):
        part = Path(*rel.parts[:n])
        if (root / part).is_symlink():
            return part.as_posix()
    return None


def _link_message(rel: str) -> str:
    return (
        f"not writing through {rel}: it is a symlink (it may point outside the repository); "
        "init writes only real files and folders inside the repository: replace the link "
        "and run init again"
    )


COPY_NOTE = re.compile(
    r"^# Copy to \.github/workflows/(?:, name your CI workflow below,)? and add an "
    r"OPENAI_API_KEY (?:repository )?secret\.$",
    re.M,
)
CI_TRIGGER = "    workflows: [CI]\n"


def in_place(text: str, ci_names: list[str]) -> str:
    """A template as written into the repository: no "copy me" line (it is in place), and the
    CI-fix trigger names the repository's own CI workflows (`name:`), when it has any."""
    note = "# Written by `codegen-ci init`; needs an OPENAI_API_KEY repository secret."
    if CI_TRIGGER in text:
        if ci_names:
            text = text.replace(CI_TRIGGER, f"    workflows: {json.dumps(ci_names)}\n")
            note = (
                "# Written by `codegen-ci init` for the CI workflow(s) named below; needs an "
                "OPENAI_API_KEY secret."
            )
        else:
            note = (
                "# Written by `codegen-ci init`: name your CI workflow below (no workflow on "
                "push or pull_request was found); needs an OPENAI_API_KEY secret."
            )
    return COPY_NOTE.sub(note, text)


def workflow_template(name: str) -> str:
    template = resources.files("codegen_ci").joinpath("templates", "workflows", name)
    return template.read_text(encoding="utf-8")


def config_text(found: Detected) -> str:
    detected = "; ".join(found.found) or "nothing (fill in the commands below)"
    lines = [
        "# codegen-ci repository defaults: the spec's schema minus `task`. A spec, an issue or a",
        "# /codegen comment overrides any key. Check with: codegen-ci validate .codegen.yml",
        f"# Detected: {detected}",
        *(f"# Left out: {item.what}: {item.why}" for item in found.left_out),
        "version: 1",
        "",
        "validation:",
        "  # Run once before the first round, e.g. to install dependencies on a fresh CI runner:",
        *_commented("setup", found.setup),
        "  # Lint runs every round before the tests; its errors go back to the model.",
        *_commands("lint", found.lint, "no lint command detected", found.origins),
        "  # The repository's own tests decide when the task is done.",
        *_commands(
            "test", found.test, "no test command detected: add what your CI runs", found.origins
        ),
        *_junit(found.junit),
        *(
            [
                "  # tox downloads its environments' dependencies:",
                f"  network: {json.dumps(found.network)}",
            ]
            if found.network
            else []
        ),
        "  timeout: 600  # seconds per command",
        "  # Existing tests are kept: a change that removes or skips a test the base commit",
        "  # ran is not a success (new tests are welcome). true: no edits to tests at all;",
        "  # false: the task may remove or skip tests (the pull request says so).",
        "  protect_tests: keep",
        "  # Proof: a success names the tests that fail without the change (fail to pass).",
        "  # preferred: say `unproven` when none does; required: ask the model for one; off.",
        "  proof:",
        "    tests: preferred",
        "",
        "limits:",
        "  max_iterations: 3  # validation rounds before giving up",
        "  max_tokens: 400000  # token budget for the whole run",
        "  timeout_minutes: 30",
        "",
        "# model:",
        "#   name: gpt-4o-mini  # or CODEGEN_MODEL; base_url for any OpenAI-compatible endpoint",
        "# pr:",
        "#   draft: false",
        "#   labels: [codegen]",
        "# Paths the model may never change (the default):",
        '# protected_paths: [".github/**", ".gitlab-ci.yml", ".env*", "**/*.pem", "**/*.key"]',
    ]
    return "\n".join(lines) + "\n"


def _commands(key: str, commands: list[str], missing: str, origins: dict[str, str]) -> list[str]:
    if not commands:
        return [f"  # {missing}", f"  {key}: []"]
    lines = [f"  {key}:"]
    for command in commands:
        if origins.get(command):  # where it came from, so a reader can check it against CI
            lines.append(f"    # {origins[command]}")
        lines.append(f"    - {json.dumps(command)}")
    return lines


def _commented(key: str, commands: list[str]) -> list[str]:
    example = ", ".join(json.dumps(c) for c in commands) if commands else '"make install"'
    return [f"  # {key}: [{example}]"]


def _junit(globs: list[str]) -> list[str]:
    if not globs:
        return [
            "  # JUnit XML the tests write, for precise failures (pytest gets --junitxml itself):",
            '  # junit: ["reports/**/*.xml"]',
        ]
    return [
        "  # The JUnit XML the test commands above write: failures by test, file and line.",
        f"  junit: [{', '.join(json.dumps(g) for g in globs)}]",
    ]


def show_next_steps(found: Detected, workflows: tuple[str, ...]) -> None:
    if not found.test:
        click.echo("warning: no test command detected; add one under validation.test", err=True)
    for install in found.node.reporters if found.node else []:
        click.echo(
            f"next: {install} (the test command's JUnit reporter; package.json does not declare it)"
        )
    click.echo("next: codegen-ci run SPEC --dry-run runs these commands once, with no model call")
    if workflows:
        click.echo("next: add an OPENAI_API_KEY repository secret for the workflows")
        if needs_runner_host(found):
            click.echo(
                "note: the workflows use the runner-host action (codegen-ci/codegen-ci/"
                "host) with the toolchain setup and install steps for this repository"
            )
    if "schedule" in workflows:
        click.echo("next: put the nightly tasks under specs/ (codegen-ci batch specs/ --matrix)")


# -- the host variant of the workflows ----------------------------------------------------


def needs_runner_host(found: Detected) -> bool:
    """Node's projects, and a repository whose runners need a toolchain set up in CI."""
    return "node" in found.ecosystems or bool(_runner_steps(found))


def _runner_steps(found: Detected) -> list[str]:
    """The steps the runners found say set up their toolchains (`workflow_steps`)."""
    ask = WorkflowAsk(tuple(found.ecosystems), tuple(found.lint), tuple(found.test))
    return runners.workflow_steps(ask)


def render_workflow(template: str, found: Detected) -> str:
    """`template` as is for a Python (or undetected) repository; else the host variant."""
    if not needs_runner_host(found) or ACTION_STEP not in template:
        return template
    steps = [
        "      # The runner-host variant runs your lint and test commands on this runner: set up\n"
        "      # their toolchains and install the dependencies once; the agent's working copies\n"
        "      # use what is installed here.\n"
        "      - uses: actions/setup-python@v5\n"
        "        with:\n"
        f"          python-version: {PYTHON_VERSION}\n",
        *_toolchain_steps(found),
    ]
    if found.install:
        script = "".join(f"          {command}\n" for command in found.install)
        steps.append(f"      - name: Install dependencies\n        run: |\n{script}")
    block = "\n".join(steps) + "\n"
    return template.replace(ACTION_STEP, block + ACTION_STEP).replace(DOCKER_ACTION, HOST_ACTION)


def _toolchain_steps(found: Detected) -> list[str]:
    steps: list[str] = []
    node = found.node
    if node is not None:
        if node.manager == "pnpm":
            pin = (
                "" if node.pinned_manager else f"        with:\n          version: {PNPM_VERSION}\n"
            )
            steps.append("      - uses: pnpm/action-setup@v4\n" + pin)
        cache = (
            f"          cache: {node.manager}\n" if node.lockfile and node.manager != "bun" else ""
        )
        steps.append(
            "      - uses: actions/setup-node@v4\n        with:\n"
            f"          node-version: {NODE_VERSION}\n{cache}"
        )
        if node.manager == "bun":
            steps.append("      - uses: oven-sh/setup-bun@v2\n")
    return steps + _runner_steps(found)
