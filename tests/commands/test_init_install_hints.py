"""`codegen-ci init` says how to install a missing tool the repository's own way
(commands/init_install.py): the install line of the CI job that runs the command, then the
dependency group, extra or requirements file that names the tool, and `pip install TOOL` only
when nothing names it; a Node project's dependencies as its lockfile pins them. The
repositories are modelled on real ones' shapes (mahmoud/boltons, pypa/packaging), written into
temporary folders; init runs in-process (the subject is what it prints, not a process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli

HINT = "is not installed; install it with:"


@pytest.fixture(autouse=True)
def bare_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No active virtualenv, and a PATH whose `python3` has none of the tools (the system's):
    every Python tool the commands need is missing."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")


def init(repo: Path) -> str:
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    return result.output


def missing(output: str, tool: str) -> str:
    """How init says to install `tool` ("" when it does not name it missing)."""
    prefix = f"missing: {tool} {HINT} "
    lines = [line.removeprefix(prefix) for line in output.splitlines() if line.startswith(prefix)]
    assert len(lines) <= 1, output
    return lines[0] if lines else ""


def python_project(repo: Path, pyproject: str = "") -> Path:
    """A project with a pytest suite (conftest.py: init writes `python -m pytest -q`)."""
    (repo / "pyproject.toml").write_text(f"[project]\nname = 'demo'\nversion = '1'\n{pyproject}")
    (repo / "conftest.py").write_text("")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_demo.py").write_text("def test_demo():\n    pass\n")
    return repo


def workflow(repo: Path, jobs: dict[str, str]) -> None:
    """`.github/workflows/ci.yml` with one job per entry, each a checkout and one `run:`."""
    folder = repo / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": "CI",
        "on": {"push": None, "pull_request": None},
        "jobs": {
            name: {
                "runs-on": "ubuntu-latest",
                "steps": [{"uses": "actions/checkout@v4"}, {"run": script}],
            }
            for name, script in jobs.items()
        },
    }
    (folder / "ci.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


# pypa/packaging's groups (pyproject.toml at 053c8846): `test` names pytest, `dev` includes it
PACKAGING_GROUPS = """
[dependency-groups]
docs = ["furo"]
test = ["coverage[toml]>=7.2.0", "pytest>=6.2.0", "tomli; python_version<'3.11'"]
benchmark = ["asv", "pip"]
dev = [{ include-group = "test" }, { include-group = "benchmark" }]
"""


def test_the_dependency_group_that_names_pytest_is_the_hint(tmp_path: Path) -> None:
    """pypa/packaging: `missing: pytest ... pip install pytest` although its `test` group
    (what its nox session installs) names pytest; `dev` only includes `test`, `docs` does not
    name it."""
    repo = python_project(tmp_path, PACKAGING_GROUPS)

    output = init(repo)

    assert missing(output, "pytest") == "python -m pip install --group test (pip >= 25.1)"


def test_a_group_is_installed_by_uv_sync_where_uv_lock_is(tmp_path: Path) -> None:
    """mahmoud/boltons' `dev` group (pytest), with a uv.lock beside it: uv's way, which makes
    the .venv init then names."""
    repo = python_project(tmp_path, '[dependency-groups]\ndev = ["pytest>=8"]\n')
    (repo / "uv.lock").write_text("version = 1\n")

    output = init(repo)

    assert missing(output, "pytest") == (
        "uv sync --group dev (it makes .venv: run init again, so the commands use it)"
    )


def test_the_extra_that_names_pytest_is_the_hint(tmp_path: Path) -> None:
    repo = python_project(
        tmp_path,
        "[project.optional-dependencies]\ndocs = ['sphinx']\ntesting = ['pytest', 'coverage']\n",
    )

    assert missing(init(repo), "pytest") == "python -m pip install -e '.[testing]'"


def test_the_requirements_file_that_names_pytest_is_the_hint(tmp_path: Path) -> None:
    """`dev-requirements.txt` names pytest through its `-r requirements/test.txt`;
    `requirements.txt` (the runtime's) does not name it."""
    repo = python_project(tmp_path)
    (repo / "requirements.txt").write_text("attrs\n")
    (repo / "requirements").mkdir()
    (repo / "requirements" / "test.txt").write_text("# tests\npytest==8.3.0\n")
    (repo / "dev-requirements.txt").write_text("-r requirements/test.txt\nblack\n")

    assert missing(init(repo), "pytest") == "python -m pip install -r dev-requirements.txt"


def test_ci_install_line_of_the_job_that_runs_the_tool_comes_first(tmp_path: Path) -> None:
    """CI's own install line beats the group and the extra that also name pytest; of two CI
    lines that install pytest, the one of the job that runs the tests (not the lint job's,
    written first); ruff, named by the lint job's line only, gets that line."""
    repo = python_project(
        tmp_path,
        "[project.optional-dependencies]\ntesting = ['pytest']\n"
        "[dependency-groups]\ndev = ['pytest', 'ruff']\n[tool.ruff]\n",
    )
    (repo / "requirements-test.txt").write_text("pytest\npytest-cov\n")
    workflow(
        repo,
        {
            "lint": "pip install ruff pytest\nruff check .",
            "test": "pip install -r requirements-test.txt\npython -m pytest",
        },
    )

    output = init(repo)

    assert missing(output, "pytest") == (
        "python -m pip install -r requirements-test.txt (.github/workflows/ci.yml, job test)"
    )
    assert missing(output, "ruff") == (
        "python -m pip install ruff pytest (.github/workflows/ci.yml, job lint)"
    )


def test_ci_installs_through_a_group_extra_or_poetry(tmp_path: Path) -> None:
    """A CI line names pytest through what it installs: an extra of the project (`.[test]`),
    a group (`uv sync --group`, `pip install --group`), Poetry's groups."""
    repo = python_project(
        tmp_path,
        "[project.optional-dependencies]\ntest = ['pytest']\n"
        "[dependency-groups]\nlint = ['mypy']\ntyping = [{include-group = 'lint'}]\n"
        "[tool.poetry.group.style.dependencies]\nruff = '*'\n[tool.ruff]\n[tool.mypy]\n",
    )
    workflow(
        repo,
        {
            "test": "pip install -e '.[test]'\npython -m pytest",
            "style": "poetry install --only style\nruff check .",
            "typing": "uv sync --group typing\nmypy .",
        },
    )

    output = init(repo)

    where = "(.github/workflows/ci.yml, job"
    assert missing(output, "pytest") == f"python -m pip install -e '.[test]' {where} test)"
    assert missing(output, "ruff") == f"poetry install --only style {where} style)"
    assert missing(output, "mypy") == f"uv sync --group typing {where} typing)"


def test_nothing_that_does_not_name_the_tool_is_offered_for_it(tmp_path: Path) -> None:
    """A group, an extra, a requirements file and a CI install line, none naming pytest: the
    hint is pytest itself."""
    repo = python_project(
        tmp_path,
        "[project.optional-dependencies]\ndocs = ['sphinx']\n"
        "[dependency-groups]\ndev = ['build']\n",
    )
    (repo / "requirements-docs.txt").write_text("sphinx\n")
    workflow(repo, {"test": "pip install -r requirements-docs.txt -e .[docs]\npython -m pytest"})

    assert missing(init(repo), "pytest") == "python -m pip install pytest"


@pytest.mark.parametrize(
    "pyproject",
    [
        "[dependency-groups\ntest = ['pytest'",  # not TOML
        "[project]\nname = 3\noptional-dependencies = 3\ndependencies = 'pytest'\n"
        "[dependency-groups]\ntest = 'pytest'\ndev = [{include-group = 'dev'}, 7]\n"
        "[tool.uv]\ndefault-groups = 5\n[tool.poetry]\ngroup = []\ndependencies = 1\n",
    ],
    ids=["not-toml", "tables-of-the-wrong-shape"],
)
def test_a_malformed_pyproject_does_not_crash_init(tmp_path: Path, pyproject: str) -> None:
    """A pyproject.toml init cannot read, or whose tables have the wrong shape (a group that
    includes itself among them): init still runs, and names pytest by itself."""
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "conftest.py").write_text("")
    workflow(tmp_path, {"test": "uv sync --group dev\npip install -e .[test]\npython -m pytest"})

    assert missing(init(tmp_path), "pytest") == "python -m pip install pytest"


def test_a_venv_uv_made_installs_a_tool_nothing_names_with_uv_pip(tmp_path: Path) -> None:
    """A venv `uv sync` made has no pip: a tool nothing names goes in with `uv pip install`."""
    repo = python_project(tmp_path)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")  # no pytest there
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.7.8\n")

    assert missing(init(repo), "pytest") == "uv pip install --python .venv/bin/python pytest"


@pytest.mark.parametrize(
    ("lockfile", "install"),
    [
        ("pnpm-lock.yaml", "pnpm install --frozen-lockfile"),
        ("yarn.lock", "yarn install --frozen-lockfile"),
        ("package-lock.json", "npm ci"),
    ],
)
def test_node_dependencies_are_installed_as_the_lockfile_pins_them(
    tmp_path: Path, lockfile: str, install: str
) -> None:
    """The hint for missing node_modules said `pnpm install` (`yarn install`), which may
    update the lockfile: the install init writes for the project keeps to it."""
    package = {
        "name": "demo",
        "scripts": {"test": "vitest run"},
        "devDependencies": {"vitest": "^3"},
    }
    (tmp_path / "package.json").write_text(json.dumps(package))
    (tmp_path / lockfile).write_text("")

    output = init(tmp_path)

    hints = [line for line in output.splitlines() if line.startswith("missing: ")]
    assert hints, output
    assert all(line.endswith(f"{HINT} {install} (the project's dependencies)") for line in hints)


def test_ci_install_line_through_python_m_pip_skips_what_does_not_name_the_tool(
    tmp_path: Path,
) -> None:
    """`python -m pip install --upgrade pip` installs pip, not ruff: the job's next line, whose
    requirements file names ruff, is the hint."""
    repo = python_project(tmp_path, "[tool.ruff]\n")
    (repo / "requirements-lint.txt").write_text("ruff==0.6.9\n")
    workflow(
        repo,
        {
            "lint": "python -m pip install --upgrade pip\n"
            "python -m pip install -r requirements-lint.txt\nruff check ."
        },
    )

    assert missing(init(repo), "ruff") == (
        "python -m pip install -r requirements-lint.txt (.github/workflows/ci.yml, job lint)"
    )


def test_a_go_linter_is_installed_as_ci_installs_it(tmp_path: Path) -> None:
    """CI pins staticcheck (`go install ...@2023.1.6`); the runner's own hint says `@latest`,
    which may fail the untouched code on newer checks. golangci-lint, downloaded by a script CI
    pipes to sh, gets that line."""
    (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")
    (tmp_path / "demo.go").write_text("package demo\n")
    workflow(
        tmp_path,
        {
            "lint": "go install honnef.co/go/tools/cmd/staticcheck@2023.1.6\nstaticcheck ./...",
            "golangci": "curl -sSfL https://raw.githubusercontent.com/golangci/golangci-lint/"
            "master/install.sh | sh -s -- -b /usr/local/bin v1.55.2\ngolangci-lint run",
        },
    )

    output = init(tmp_path)

    assert missing(output, "staticcheck") == (
        "go install honnef.co/go/tools/cmd/staticcheck@2023.1.6 (.github/workflows/ci.yml, job "
        "lint)"
    )
    assert missing(output, "golangci-lint").startswith("curl -sSfL https://raw.githubusercontent")
    # a machine without Go is told to install Go, not the line that installs staticcheck with it
    assert not missing(output, "go").startswith("go install")


def test_a_poetry_group_that_names_pytest_is_the_hint(tmp_path: Path) -> None:
    repo = python_project(
        tmp_path,
        "[tool.poetry.group.docs.dependencies]\nsphinx = '*'\n"
        "[tool.poetry.group.test]\noptional = true\n"
        "[tool.poetry.group.test.dependencies]\npytest = '^8'\n",
    )

    assert missing(init(repo), "pytest") == "poetry install --with test"


def test_a_plain_uv_sync_in_ci_installs_uvs_default_groups(tmp_path: Path) -> None:
    """`uv sync` installs the `dev` group unasked (or `[tool.uv] default-groups`): CI's plain
    `uv sync` installs pytest from `dev`, and ruff from `lint` only where that is a default."""
    repo = python_project(
        tmp_path,
        "[dependency-groups]\ndev = ['pytest']\nlint = ['ruff']\n[tool.ruff]\n",
    )
    workflow(repo, {"test": "uv sync\nuv run pytest\nuv run ruff check ."})

    output = init(repo)

    assert missing(output, "pytest") == "uv sync (.github/workflows/ci.yml, job test)"
    assert missing(output, "ruff") == "python -m pip install --group lint (pip >= 25.1)"

    with (repo / "pyproject.toml").open("a") as pyproject:
        pyproject.write("[tool.uv]\ndefault-groups = ['dev', 'lint']\n")
    (repo / ".codegen.yml").unlink()  # init again, as the user would after the change
    assert missing(init(repo), "ruff") == "uv sync (.github/workflows/ci.yml, job test)"


def test_yarn_berry_installs_immutable(tmp_path: Path) -> None:
    package = {
        "name": "demo",
        "scripts": {"test": "vitest run"},
        "devDependencies": {"vitest": "1"},
    }
    (tmp_path / "package.json").write_text(json.dumps(package))
    (tmp_path / "yarn.lock").write_text("")
    (tmp_path / ".yarnrc.yml").write_text("nodeLinker: node-modules\n")

    output = init(tmp_path)

    assert "install it with: yarn install --immutable (the project's dependencies)" in output
