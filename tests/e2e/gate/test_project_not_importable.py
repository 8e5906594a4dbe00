"""The repository's own package not importable on the untouched code: a configuration error
before any model call, not rounds of a model that cannot fix the environment. Only when the
module every collection error names is the repository's own (`src/<name>/`, `<name>/` with an
`__init__.py`, `<name>.py`, `src/<name>.py`) and the pre-flight, on the base commit, is the
run that cannot collect: a test that imports a module the task asks for still reaches the
model. Through the CLI, with the scripted model and real pytest and unittest."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from gate_repos import run_cli
from sample_repo import PYTEST, VERSION_PY, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# The sample repository's tests import `semver` from `src/semver/` through `pytest.ini`'s
# `pythonpath = src`; without it (no editable install, no PYTHONPATH) nothing can import it.
NO_PYTHONPATH = {"pytest.ini": "[pytest]\n"}


def test_the_projects_own_package_not_importable_is_a_config_error_before_any_model_call(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    error = report["error"]
    assert "`semver`" in error and "src/semver/" in error
    assert "pip install -e ." in error and "PYTHONPATH" in error
    assert "No module named 'semver'" in error  # the output's tail shows it
    assert model_env.requests == []
    assert report["iterations"] == 0


def test_the_dry_run_says_so_too(sample_repo: SampleRepo, model_env: ScriptedModelServer) -> None:
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    out = sample_repo.tmp / "dry"
    args = [
        "run",
        str(sample_repo.write_spec()),
        "--repo",
        str(sample_repo.path),
        "--output-dir",
        str(out),
        "--dry-run",
    ]

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 2, result.output
    assert "own module `semver`" in result.output and "`src/semver/`" in result.output
    assert model_env.requests == []


def test_a_unittest_suite_that_cannot_import_the_project_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """unittest reports it per module ("Failed to import test module"), exit 1."""
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    model_env.add(*fixing_script())
    command = f"{sys.executable} -m unittest discover -s tests -p 'test_*.py'"

    code, output, _, report = run_cli(
        sample_repo, sample_repo.write_spec(validation={"test": [command], "timeout": 120})
    )

    assert code == 2, output
    assert report["reason"] == "config" and "`src/semver/`" in report["error"]
    assert model_env.requests == []


def test_with_the_project_on_pythonpath_the_same_repository_runs_normally(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The control: the same repository, its test command putting `src` on PYTHONPATH."""
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(validation={"test": [f"PYTHONPATH=src {PYTEST}"], "timeout": 120})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["rounds"][-1]["tests"]["passed"] == 3


# The build writes `src/semver/_version.py` (hatch-vcs), git-ignored; this checkout was never
# built, so no worktree has it and the package fails inside its own `__init__.py`.
UNBUILT_VERSION_FILE = {
    "src/semver/__init__.py": "from ._version import __version__\n",
    ".gitignore": "__pycache__/\nsrc/semver/_version.py\n",
    "pyproject.toml": (
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"'
        '\n\n[project]\nname = "semver"\ndynamic = ["version"]\n\n'
        '[tool.hatch.build.hooks.vcs]\nversion-file = "src/semver/_version.py"\n'
    ),
}
UNITTEST = f"{sys.executable} -m unittest discover -s tests -p 'test_*.py'"


@pytest.mark.parametrize(
    "command", [PYTEST, f"PYTHONPATH=src {UNITTEST}"], ids=["pytest", "unittest"]
)
def test_the_package_failing_inside_itself_on_the_untouched_code_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, command: str
) -> None:
    """Every test module fails to import the package, the error raised in the package's own
    `__init__.py` (a module of it the build writes is missing): the environment's, not the
    model's."""
    sample_repo.commit(UNBUILT_VERSION_FILE, "version from the build")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(validation={"test": [command], "timeout": 120})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    error = report["error"]
    assert "1 of 1 test modules fail" in error and "at src/semver/__init__.py:1" in error
    assert "ModuleNotFoundError: No module named 'semver._version'" in error
    assert "`src/semver/_version.py` is not in the worktree" in error
    assert "pyproject.toml says the build writes it; your checkout does not have it" in error
    assert "pip install -e ." in error and "PYTHONPATH" in error
    assert model_env.requests == []


NEW_MODULE_TEST = """\
from slugs import slugify


def test_slugify():
    assert slugify("Hello World") == "hello-world"
"""
NEW_SUBMODULE_TEST = """\
from semver.ranges import satisfies


def test_satisfies():
    assert satisfies("1.2.3", ">=1.0.0")
"""
NEW_NAME_TEST = """\
from semver.version import Version, is_prerelease


def test_is_prerelease():
    assert is_prerelease("1.0.0-rc1") and not is_prerelease(str(Version(1, 0, 0)))
"""
SLUGS = 'def slugify(text):\n    return "-".join(text.lower().split())\n'
PRERELEASE = "\n\ndef is_prerelease(text):\n    return '-' in text\n"
RANGES = (
    "def satisfies(version, spec):\n"
    "    key = lambda v: tuple(int(p) for p in v.split('.'))\n"
    "    return key(version) >= key(spec.removeprefix('>='))\n"
)


# The three cases planted in one run (one run instead of three: the pre-flight, the round
# and the base re-run are ~1.4 CPU-s a run): each collection error is judged on its own
# (`repository_module` for each missing name, `missing_dependencies` for each failing test
# module, either one enough for a configuration error), so any one of them taken for the
# environment's would stop the run before the model; `package_not_importable` leaves them to
# those in both shapes (1 of 2 test modules failing alone, 3 of 4 here: under its "every
# module" share).
NEW_CASES = [
    ("tests/test_slugs.py", NEW_MODULE_TEST, "src/slugs.py", SLUGS),  # not in the repository
    ("tests/test_ranges.py", NEW_SUBMODULE_TEST, "src/semver/ranges.py", RANGES),
    ("tests/test_pre.py", NEW_NAME_TEST, "src/semver/version.py", VERSION_PY + PRERELEASE),
]


def test_a_test_importing_a_module_the_task_asks_for_still_reaches_the_model(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The missing module is the task itself: it does not exist in the repository (or only
    its package does, or only its module without the name), so the pre-flight's collection
    errors are the model's to fix."""
    sample_repo.commit({test_file: test for test_file, test, _, _ in NEW_CASES}, "new tests")
    writes = [call("write_file", path=path, content=content) for _, _, path, content in NEW_CASES]
    model_env.add(Reply(tool_calls=writes), Reply("Added them."))
    asks = "; ".join(
        f"add {path} so that {test_file} passes" for test_file, _, path, _ in NEW_CASES
    )
    spec = sample_repo.write_spec(task=asks.capitalize() + ".", limits={"max_iterations": 1})

    code, output, _, report = run_cli(sample_repo, spec)

    preflight = report["preflight"]["commands"][0]
    assert preflight["exit_code"] == 2  # collection failed there
    collect_log = (sample_repo.tmp / "out" / preflight["output_path"]).read_text()
    for test_file, _, _, _ in NEW_CASES:  # each of the three failed to collect
        assert f"ERROR collecting {test_file}" in collect_log, collect_log
    assert model_env.requests  # yet the model was asked
    assert code == 1, output  # the sample's own bug is still there: 1 of 6 fails
    assert report["rounds"][0]["tests"]["total"] == 6
    [failure] = report["rounds"][0]["failures"]
    assert failure["id"].endswith("test_bump_minor_resets_patch")


def test_a_round_that_breaks_the_import_is_the_models_failure_not_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Only the pre-flight, on the untouched code, decides: the model removing the path
    setting fails its round like any other break."""
    model_env.add(
        Reply(tool_calls=[call("write_file", path="pytest.ini", content="[pytest]\n")]),
        Reply("Done."),
    )
    spec = sample_repo.write_spec(limits={"max_iterations": 1})

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 1, output
    assert report["status"] == "failed" and report["reason"] != "config"
    assert len(model_env.requests) >= 2


USES_A_DEPENDENCY = """\
import frobnitz_client

from semver.version import Version


def test_parse_with_the_client():
    assert Version.parse("1.2.3").major == frobnitz_client.ONE
"""
PYPROJECT = '[project]\nname = "semver"\nversion = "0.1"\ndependencies = ["Frobnitz-Client>=2"]\n'


def test_a_declared_dependency_not_installed_is_a_config_error_before_any_model_call(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """`frobnitz_client` is the project's declared dependency (pyproject.toml), not its code
    and not the task's: the environment is not set up."""
    sample_repo.commit(
        {"tests/test_client.py": USES_A_DEPENDENCY, "pyproject.toml": PYPROJECT}, "a client"
    )
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    error = report["error"]
    assert "`frobnitz_client`" in error and "declares it in pyproject.toml" in error
    assert "validation.setup" in error and "network: [setup]" in error
    assert model_env.requests == []


USES_IT_TOO = """\
from frobnitz_client import ONE


def test_one():
    assert ONE == 1
"""
IN_A_GROUP = (
    '[project]\nname = "semver"\nversion = "0.1"\n\n'
    '[dependency-groups]\ntests = ["pytest", "frobnitz-client"]\n'
)


def test_a_test_dependency_missing_from_two_modules_of_many_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """pallets/itsdangerous with freezegun uninstalled: two test modules of several cannot be
    collected for a module the repository does not hold (here declared in a dependency
    group); the other tests never run while collection fails, and no edit installs it."""
    sample_repo.commit(
        {
            "tests/test_client.py": USES_A_DEPENDENCY,
            "tests/test_one.py": USES_IT_TOO,
            "pyproject.toml": IN_A_GROUP,
        },
        "a client",
    )
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    error = report["error"]
    assert "`frobnitz_client`" in error and "No module named 'frobnitz_client'" in error
    assert "imported by tests/test_client.py, tests/test_one.py" in error
    assert "the `tests` dependency group" in error and "--group tests" in error
    assert "interpreter the test command uses" in error
    assert model_env.requests == []


def test_an_undeclared_missing_module_is_a_config_error_too(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """Not the repository's, declared nowhere: still a module the interpreter lacks, not
    code the model can write (a test of a module the task asks for is named after it:
    `tests/test_slugs.py` above)."""
    sample_repo.commit({"tests/test_client.py": USES_A_DEPENDENCY}, "a client")
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(sample_repo, sample_repo.write_spec())

    assert code == 2, output
    assert report["reason"] == "config" and "declares it nowhere" in report["error"]
    assert "`pip install frobnitz_client`" in report["error"]
    assert model_env.requests == []


def test_the_dry_run_of_a_missing_test_dependency_exits_2(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The dry run (the suite run in full, not collected only) says the same, exit 2."""
    sample_repo.commit({"tests/test_client.py": USES_A_DEPENDENCY}, "a client")
    out = sample_repo.tmp / "dry"
    spec = str(sample_repo.write_spec())
    args = ["run", spec, "--repo", str(sample_repo.path), "--output-dir", str(out), "--dry-run"]

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 2, result.output
    assert "`frobnitz_client`" in result.output and "tests/test_client.py" in result.output
    assert model_env.requests == []


UNBUILT_NODE_PACKAGE = {
    "package.json": '{"name": "semver-js", "version": "1.0.0", "main": "dist/index.js"}\n',
    ".gitignore": "__pycache__/\ndist/\n",
    "test/semver.test.js": (
        'const test = require("node:test");\nconst assert = require("node:assert");\n'
        'const semver = require("..");\n\n'
        'test("parses", () => assert.strictEqual(semver.parse("1.2.3").major, 1));\n'
    ),
}


def test_a_node_packages_main_the_build_writes_is_a_config_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """package.json's "main" is the build's output (`dist/`, git-ignored), never built in this
    checkout: node cannot load the package the tests `require`."""
    sample_repo.commit(UNBUILT_NODE_PACKAGE, "a node package")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(
        validation={"test": ["node --test test/semver.test.js"], "timeout": 120}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert '"main" is `dist/index.js`' in report["error"] and "npm run build" in report["error"]
    assert model_env.requests == []
