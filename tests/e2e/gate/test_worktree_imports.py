"""The tests exercise the worktree, not the user's checkout: the project installed editable
into an activated virtualenv (setuptools' `__editable__` finder, or the older `setup.py
develop` egg-link and `.pth`), or a release of it in that interpreter's site-packages, would
make `python -m pytest` import the checkout's code. The pre-flight finds it, with the
commands' own interpreter inside the sandbox, and puts the worktree first on PYTHONPATH; when
that does not win, the run stops before any model call (exit 2) naming the interpreter and
the path. Real venvs made here, activated through PATH and VIRTUAL_ENV, real pytest, both
sandbox backends, the scripted model; in both directions: a break fails, the fix passes."""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path
from venv import EnvBuilder

import pytest
from click.testing import CliRunner
from gate_repos import run_cli
from sample_repo import (
    FIXED_LINE_OLD,
    VERSION_FILE,
    SampleRepo,
    fixing_script,
)

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

needs_bwrap = pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap")
BACKENDS = [pytest.param("bwrap", marks=needs_bwrap), "landlock"]
NO_PYTHONPATH = {"pytest.ini": "[pytest]\n"}  # the sample's `pythonpath = src` would hide it
SETUP_PY = (
    "from setuptools import setup\n"
    'setup(name="semver", version="0.1", package_dir={"": "src"}, packages=["semver"])\n'
)
TEST = "python -m pytest -q -p no:cacheprovider tests"
MAJOR_OK, MAJOR_BROKEN = "Version(self.major + 1, 0, 0)", "Version(self.major + 2, 0, 0)"
MAJOR_BREAK = call("edit_file", path=VERSION_FILE, old_text=MAJOR_OK, new_text=MAJOR_BROKEN)
UNBREAK = call("edit_file", path=VERSION_FILE, old_text=MAJOR_BROKEN, new_text=MAJOR_OK)


def make_venv(where: Path) -> Path:
    """A virtualenv whose interpreter also sees this test run's packages (pytest, setuptools)
    through a `.pth`, as a project's venv would have them installed."""
    # what `python -m venv --without-pip` makes (the same files), without a process
    EnvBuilder(symlinks=True).create(where)
    site = venv_site(where)
    (site / "_test_tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where


def venv_site(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))


def install_editable(venv: Path, project: Path, style: str) -> None:
    """`pip install -e .` as setuptools makes it: the `__editable__` finder (the modern
    default, written by setuptools' own template), or `setup.py develop` (egg-link, .pth)."""
    if style == "egg-link":
        # what `python setup.py develop --no-deps` of SETUP_PY writes (setuptools' develop and
        # egg_info commands, byte for byte), written here without a process importing
        # setuptools: the egg-link and easy-install.pth in the venv, the egg-info in src/
        src = project / "src"
        info = src / "semver.egg-info"
        info.mkdir()
        listed = ["PKG-INFO", "SOURCES.txt", "dependency_links.txt", "top_level.txt"]
        code = sorted(p.relative_to(project).as_posix() for p in (src / "semver").glob("*.py"))
        sources = ["setup.py", *code, *(f"src/semver.egg-info/{name}" for name in listed)]
        (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: semver\nVersion: 0.1\n")
        (info / "SOURCES.txt").write_text("\n".join(sources))
        (info / "dependency_links.txt").write_text("\n")
        (info / "top_level.txt").write_text("semver\n")
        site = venv_site(venv)
        (site / "semver.egg-link").write_text(f"{src}\n../")
        (site / "easy-install.pth").write_text(f"{src}\n")
        return
    # setuptools' own template, written here: the text its `python -c` in the venv wrote
    # (the venv sees this run's setuptools), without a process importing setuptools per test
    from setuptools.command.editable_wheel import _finder_template

    name = "__editable___semver_0_1_finder"
    finder = _finder_template(name, {"semver": str(project / "src" / "semver")}, {})
    site = venv_site(venv)
    (site / f"{name}.py").write_text(finder)
    (site / "__editable__.semver-0.1.pth").write_text(f"import {name}; {name}.install()\n")


def install_release(venv: Path, project: Path) -> None:
    """A release of the package in the interpreter's site-packages (the checkout's code as it
    is now, copied, with its metadata)."""
    site = venv_site(venv)
    shutil.copytree(project / "src" / "semver", site / "semver")
    info = site / "semver-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: semver\nVersion: 0.1\n")


def activate(venv: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_an_editable_install_a_break_fails_and_the_right_fix_passes(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    """Both directions in one run. The checkout holds bump_minor's bug and a correct
    bump_major; round 1 fixes the one and breaks the other: only bump_major fails (the
    checkout's code would fail bump_minor and pass bump_major). Round 2 undoes the break: the
    fix passes."""
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    venv = make_venv(sample_repo.tmp / "venv")
    install_editable(venv, sample_repo.path, "finder")
    activate(venv, monkeypatch, backend)
    read, fix, done = fixing_script()
    model_env.add(read, fix, Reply(tool_calls=[MAJOR_BREAK]), done, Reply(tool_calls=[UNBREAK]))
    spec = sample_repo.write_spec(
        validation={"test": [TEST], "timeout": 120}, limits={"max_iterations": 2}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert report["sandbox"] == backend
    # round 1: the worktree's break fails, its fix passes
    [failure] = report["rounds"][0]["failures"]
    assert failure["id"].endswith("test_bump_major"), failure
    [seen] = report["imports"]
    assert f"from {sample_repo.path / 'src' / 'semver'}" in seen and "PYTHONPATH" in seen
    # round 2: the checkout still has the bug; the worktree's fix is judged
    assert code == 0, output
    assert report["status"] == "success" and report["rounds"][-1]["tests"]["passed"] == 3
    assert FIXED_LINE_OLD in (sample_repo.path / VERSION_FILE).read_text()  # checkout as was


@pytest.mark.parametrize("style", ["egg-link", "release"])
def test_an_egg_link_or_a_release_in_site_packages_is_redirected_too(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    style: str,
) -> None:
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    venv = make_venv(sample_repo.tmp / "venv")
    if style == "release":
        install_release(venv, sample_repo.path)
    else:
        install_editable(venv, sample_repo.path, style)
    activate(venv, monkeypatch, "bwrap" if shutil.which("bwrap") else "landlock")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(
        validation={"test": [TEST], "timeout": 120}, limits={"max_iterations": 1}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success"
    [seen] = report["imports"]
    assert "PYTHONPATH" in seen


FIRST_ON_PATH = "import sys; sys.path.insert(0, {src!r})\n"


def test_a_copy_that_puts_itself_first_stops_the_run_before_the_model(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `.pth` that inserts the checkout before PYTHONPATH cannot be redirected: exit 2,
    naming the interpreter and where it imports the package from."""
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    venv = make_venv(sample_repo.tmp / "venv")
    src = str(sample_repo.path / "src")
    (venv_site(venv) / "zz_first.pth").write_text(FIRST_ON_PATH.format(src=src))
    activate(venv, monkeypatch, "bwrap" if shutil.which("bwrap") else "landlock")
    model_env.add(*fixing_script())

    code, output, _, report = run_cli(
        sample_repo, sample_repo.write_spec(validation={"test": [TEST], "timeout": 120})
    )

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    error = report["error"]
    assert str(venv / "bin" / "python") in error
    assert f"from {sample_repo.path / 'src' / 'semver'}" in error
    assert model_env.requests == []


def test_the_dry_run_says_where_the_code_is_imported_from(
    sample_repo: SampleRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample_repo.commit(NO_PYTHONPATH, "no pythonpath")
    venv = make_venv(sample_repo.tmp / "venv")
    install_editable(venv, sample_repo.path, "finder")
    activate(venv, monkeypatch, "bwrap" if shutil.which("bwrap") else "landlock")
    spec = sample_repo.write_spec(validation={"test": [TEST], "timeout": 120})
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir"]

    result = CliRunner().invoke(cli, [*args, str(sample_repo.tmp / "dry"), "--dry-run"])

    assert "imports the repository's own code" in result.output, result.output
    assert f"from {sample_repo.path / 'src' / 'semver'}" in result.output
    # the dry run's tests ran on the worktree: its bug fails there, as in the checkout
    assert "test_bump_minor_resets_patch" in result.output
    assert result.exit_code == 0, result.output
    assert "success after" not in result.output and "Dry run checked:" in result.output
    assert "dry run: 1 command(s) checked on the untouched code; no model call" in result.output


def test_an_in_repo_venv_with_an_editable_install_tests_the_worktree(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.venv` in the repository, the project installed editable into it, the test command
    naming its interpreter: the worktree's copy of the venv imports the worktree's code."""
    sample_repo.commit({**NO_PYTHONPATH, ".gitignore": "__pycache__/\n.venv/\n"}, "own venv")
    venv = make_venv(sample_repo.path / ".venv")
    install_editable(venv, sample_repo.path, "finder")
    monkeypatch.setenv("CODEGEN_SANDBOX", "bwrap" if shutil.which("bwrap") else "landlock")
    model_env.add(*fixing_script())
    command = ".venv/bin/python -m pytest -q -p no:cacheprovider tests"
    spec = sample_repo.write_spec(
        validation={"test": [command], "timeout": 120}, limits={"max_iterations": 1}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["status"] == "success" and report["rounds"][-1]["tests"]["passed"] == 3
