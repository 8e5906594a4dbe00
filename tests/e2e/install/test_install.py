"""Installed as a user installs it: the tool's own process never imports pytest, and the
wheel installed alone by `pipx install` in a fresh virtualenv (no test extras, no pytest) runs
`codegen-ci run` and `codegen-ci action` end to end, while the repository's tests run under
another interpreter that has pytest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import venv as venv_module
from pathlib import Path

import pytest
from install_env import (
    PIP_QUIET,
    START_ENV,
    Installed,
    clean_env,
    install_with_pipx,
    pipx_bin,
    run_tool,
)
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, PYTEST, SampleRepo
from sandbox_attacks import path_without_bwrap

from codegen_ci import __version__
from codegen_ci.gate import codegen_first, pytest_commands

ROOT = Path(__file__).resolve().parents[3]
WRONG_LINE = "return Version(self.major, self.minor + 1, self.patch * 1)"
STILL_WRONG = WRONG_LINE.replace("* 1", "+ 0")

# Every module of the package, imported where pytest cannot be imported; the plugin module is
# the one exception: it is loaded only inside the repository's own pytest process (and
# `__main__` would run the CLI).
IMPORT_ALL = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    sys.modules["pytest"] = None  # `import pytest` now raises ImportError, as without it
    sys.modules["_pytest"] = None
    import codegen_ci
    names = [m.name for m in pkgutil.walk_packages(codegen_ci.__path__, "codegen_ci.")]
    for name in names:
        if name not in ("codegen_ci.gate.codegen_first", "codegen_ci.__main__"):
            importlib.import_module(name)
    print(len(names))
    """
)


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's wheel and install live, shared by the xdist workers (their
    temporary directories share a parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """One install for the whole session: `pipx install` of the wheel, offline from the
    wheelhouse (pipx's virtualenv holds the wheel and its runtime dependencies only: the
    fresh virtualenv the wheel-alone tests run the tool from). Tests only read it."""
    return install_with_pipx(_shared(tmp_path_factory))


def test_no_module_of_the_tool_imports_pytest() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 40  # the walk found the package's modules


def test_the_plugin_reads_the_environment_the_harness_sets() -> None:
    """pytest_commands names the plugin's variables without importing it; they must agree."""
    names = ("IDS_ENV", "MODE_ENV", "STATUS_ENV", "COLLECTED_ENV")
    assert [getattr(pytest_commands, n) for n in names] == [
        getattr(codegen_first, n) for n in names
    ]
    assert pytest_commands.PLUGIN_SOURCE.read_text() == Path(codegen_first.__file__).read_text()


@pytest.mark.slow
def test_wheel_alone_runs_with_targeted_pytest_reruns(
    installed: Installed, sample_repo: SampleRepo, model_env: object
) -> None:
    assert not installed.has("pytest") and not installed.has("_pytest")
    assert installed.module_path().is_relative_to(installed.venv)
    from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

    assert isinstance(model_env, ScriptedModelServer)

    def edit(old: str, new: str) -> Reply:
        version = "src/semver/version.py"
        return Reply(tool_calls=[call("edit_file", path=version, old_text=old, new_text=new)])

    model_env.add(
        edit(FIXED_LINE_OLD, WRONG_LINE),
        Reply("First try."),
        edit(WRONG_LINE, STILL_WRONG),
        Reply("Second try."),
        edit(STILL_WRONG, FIXED_LINE_NEW),
        Reply("Fixed."),
    )
    spec = sample_repo.write_spec()  # tests: PYTEST, this test's own interpreter
    assert PYTEST.startswith(sys.executable)
    out = sample_repo.tmp / "out"

    proc = run_tool(
        installed,
        ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)],
        cwd=sample_repo.path,
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert (report["status"], report["iterations"]) == ("success", 3)
    rounds = [r["commands"][0] for r in report["rounds"]]
    # round 2 ran only the previously failing test and stopped; round 3 ran it first
    assert [(c["targeted"], c["failing_first"], c["exit_code"]) for c in rounds] == [
        (False, False, 1),
        (True, True, 1),
        (False, True, 0),
    ]
    # the suite's totals: the two tests it did not run count as in round 1
    assert (report["rounds"][1]["tests"]["total"], report["rounds"][1]["tests_carried"]) == (3, 2)
    # the baseline re-ran just that test on the base commit, through the plugin
    status = out / "baseline" / "pytest_plugin" / "baseline-01-status.jsonl"
    assert json.loads(status.read_text().splitlines()[0])["matched"] == 1
    assert sample_repo.git("log", "-1", "--format=%s", report["branch"]).startswith("fix(")


@pytest.mark.slow
def test_wheel_alone_answers_an_issue_event(installed: Installed, sample_repo: SampleRepo) -> None:
    from action_env import open_world
    from sample_repo import fixing_script

    with open_world(sample_repo, command=[str(installed.script)]) as world:
        github, model = world.github, world.model
        github.add_issue("Reset patch in bump_minor", "bump_minor must reset the patch", "rob")
        model.add(*fixing_script())

        result = world.run("issues", world.issue_labeled(1))

    assert result.code == 0, result.log
    assert "Traceback" not in result.stderr
    assert result.outputs["status"] == "success"
    (pull,) = github.pulls()
    assert result.outputs["pr-url"].endswith(f"/pull/{pull.number}")


@pytest.mark.slow
def test_pipx_install_of_the_wheel_runs_a_dry_run(
    installed: Installed,
    sample_repo: SampleRepo,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """`pipx install codegen-ci`, with the wheel standing in for the index (the session's
    install: `installed` is pipx's virtualenv, install_env.install_with_pipx asserts that
    `pipx install` exited 0)."""
    script = pipx_bin(_shared(tmp_path_factory)) / "codegen-ci"
    assert installed.venv.parent.name == "venvs" and script.resolve().is_relative_to(
        installed.venv.resolve()
    )
    assert not installed.has("pytest")  # pipx's virtualenv, its python

    version = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, env=clean_env()
    )
    assert version.returncode == 0
    assert version.stdout.strip() == f"codegen-ci, version {__version__}"
    out = tmp_path / "out"
    dry = subprocess.run(
        [str(script), "run", str(sample_repo.write_spec()), "--dry-run", "--output-dir", str(out)],
        cwd=sample_repo.path,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["rounds"][0]["tests"]["failed"] == 1  # the sample's bug, seen by real pytest
    assert report["usage"]["prompt_tokens"] == 0


def test_readme_and_docs_say_how_to_install_for_use_and_for_development() -> None:
    """Nothing is published on PyPI: the docs say so and give the installs that work."""
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    guide = (ROOT / "docs" / "install.md").read_text()
    pinned = f"pip install git+https://github.com/codegen-ci/codegen-ci@v{__version__}"
    for text in (quick_start, guide):
        assert "No release is published on PyPI yet" in " ".join(text.split())
        assert "`pip install codegen-ci`" in text
        assert pinned in text and "pipx install dist/codegen_ci-" in text
    assert "pip install -e '.[test]'" in quick_start and "pip install -e '.[test]'" in guide
    assert "docs/install.md" in quick_start


def _first_block(text: str) -> str:
    return text.split("```bash\n", 1)[1].split("```", 1)[0].strip()


def _clone(into: Path) -> Path:
    """A clone of this repository's committed state, as a user gets it."""
    clone = into / "codegen-ci"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    return clone


@pytest.mark.slow
@pytest.mark.timeout(1200)  # a fresh `pip install -e '.[test]'` on a loaded machine
def test_readmes_first_command_runs_confined_without_bubblewrap_and_without_root() -> None:
    """README's first command, exactly as written, in a fresh clone, on a machine without
    bubblewrap (not on PATH), as an unprivileged user when the tests run as root: it installs,
    and the dry run confines its commands with Landlock (report.json says so)."""
    command = _first_block((ROOT / "README.md").read_text())
    assert command.startswith("python3 -m venv .venv") and "--dry-run" in command
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system python3 an unprivileged user can run")
    top = Path(tempfile.mkdtemp(prefix="codegen-readme-"))  # reachable by another user
    try:
        top.chmod(0o755)
        clone, home, tmp = _clone(top), top / "home", top / "tmp"
        home.mkdir()
        tmp.mkdir()  # a fresh machine's: nothing another user left in a shared /tmp
        env = {
            **clean_env(START_ENV),
            **PIP_QUIET,  # pip's own work, not the README's command: that runs as written
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "PATH": path_without_bwrap(top),
        }
        for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "CODEGEN_SANDBOX", "CODEGEN_BWRAP"):
            env.pop(name, None)
        argv = ["/bin/sh", "-c", command]
        if os.geteuid() == 0:  # nobody: no capability, no sudo, no namespace tricks
            subprocess.run(["chown", "-R", "65534:65534", str(top)], check=True)
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        proc = subprocess.run(
            argv, cwd=clone, env=env, capture_output=True, text=True, timeout=1100
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "confined with Landlock" in proc.stderr
        [report_path] = (clone / ".git" / "codegen" / "runs").glob("*/report.json")
        report = json.loads(report_path.read_text())
        assert report["sandbox"] == "landlock" and report["landlock_abi"] >= 1
        assert report["rounds"][0]["commands"], report  # its commands ran, confined
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_documented_pinned_git_install_works(tmp_path: Path) -> None:
    """docs/install.md's `pip install git+https://github.com/...@<tag>`, with a local clone's
    file:// URL in place of GitHub's (same pip, same git, same build from the tag)."""
    guide = (ROOT / "docs" / "install.md").read_text()
    [line] = [ln.strip() for ln in guide.splitlines() if ln.strip().startswith("pip install git+")]
    url, tag = line.split("git+", 1)[1].split()[0].rsplit("@", 1)
    assert url.startswith("https://github.com/") and tag == f"v{__version__}"
    clone = _clone(tmp_path)
    subprocess.run(["git", "-C", str(clone), "tag", tag], check=True)
    # A fresh virtualenv without a pip of its own: this session's pip installs into it
    # (`pip --python`), the line's own words otherwise; ensurepip's copy of pip into the venv
    # (3.4 CPU-s) is not what the test is about (README's command test makes its venv as
    # written, pip included).
    venv = tmp_path / "venv"
    venv_module.create(venv, with_pip=False, symlinks=True)
    pinned = line.replace(url, f"file://{clone}").split("#", 1)[0].split()
    assert pinned[:2] == ["pip", "install"], line
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *pinned[1:]],
        capture_output=True,
        text=True,
        env={**clean_env(START_ENV), **PIP_QUIET},
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    version = subprocess.run(
        [str(venv / "bin" / "codegen-ci"), "--version"],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert version.stdout.strip() == f"codegen-ci, version {__version__}"
