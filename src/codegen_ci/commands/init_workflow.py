"""`init`'s workflows for repositories that need more than Python: the shipped templates use
the Docker action (Python and git only), so for Node, Go or Rust they switch to the
runner-host variant (`codegen-ci/codegen-ci/host`, which runs the commands on the runner) and
gain the setup steps and one install step before it. `examples/workflows/*-node.yml` and
`*-go.yml` are exactly this output (tests/commands/test_init.py keeps them so)."""

from __future__ import annotations

from codegen_ci.commands.init_detect import Detected

DOCKER_ACTION = "uses: codegen-ci/codegen-ci@v0"
HOST_ACTION = "uses: codegen-ci/codegen-ci/host@v0"
# Every template's codegen-ci step starts so; the setup steps go right before it.
ACTION_STEP = "      - name: codegen-ci\n        id: codegen\n"
PYTHON_VERSION = '"3.12"'  # the host variant needs Python 3.11+
NODE_VERSION = "20"
PNPM_VERSION = "9"


def needs_runner_host(found: Detected) -> bool:
    return any(eco in found.ecosystems for eco in ("node", "go", "rust"))


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
    if "go" in found.ecosystems:
        steps.append(
            "      - uses: actions/setup-go@v5\n        with:\n          go-version-file: go.mod\n"
        )
    return steps
