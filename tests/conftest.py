"""Shared fixtures: an isolated environment, real git repositories with a bare origin, and the
scripted OpenAI-compatible model server."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sample_repo import (  # tests/helpers (pyproject's pythonpath)
    SampleRepo,
    copy_sample_repo,
    make_sample_repo,
)

from codegen_ci.testing.scripted_model import ScriptedModelServer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NO_BWRAP = (
    "bubblewrap cannot run on this machine: the tests of the bwrap backend are skipped (install "
    "it: apt-get install bubblewrap; in CI, where .ci/run installs it, they fail instead)"
)


@functools.cache
def bwrap_runs() -> bool:
    """Whether bubblewrap is there and starts a command (not installed, or refused by the
    kernel or AppArmor, it cannot)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "true"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A developer's machine without bubblewrap (README's second command) skips the bwrap
    backend's cases, saying why; CI (`CI` set) runs them, so a machine that lost bubblewrap
    fails there rather than passing by skipping."""
    if os.environ.get("CI") or bwrap_runs():
        return
    skip = pytest.mark.skip(reason=NO_BWRAP)
    for item in items:
        callspec = getattr(item, "callspec", None)
        if item.get_closest_marker("bwrap") or (
            callspec is not None and "bwrap" in callspec.params.values()
        ):
            item.add_marker(skip)


def isolate_git(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No real credentials, no user git config: a HOME whose .gitconfig is the test user's."""
    for name in list(os.environ):
        if (
            name.startswith(
                ("OPENAI_", "GITHUB_", "CODEGEN_", "INPUT_", "ACTIONS_", "RUNNER_", "GIT_", "GH_")
            )
            or name in ("PYTEST_ADDOPTS", "XDG_CACHE_HOME")  # the cache: under the test's HOME
        ):
            monkeypatch.delenv(name, raising=False)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No real credentials, no user git config, CI-style plain logs."""
    isolate_git(monkeypatch, tmp_path_factory.mktemp("home"))
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CODEGEN_RETRY_BACKOFF", "0.01")
    # The pytest runs a test starts (a run's gate, proof and coverage runs, eval's checks) load
    # no plugin by entry point: scanning this venv's entry points is more than half of an
    # inner pytest's start (0.36 s of CPU against 0.15 s), and no sample project uses one. A
    # test of a command that needs one (`-n 2`) deletes this variable.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture(scope="session")
def sample_template(tmp_path_factory: pytest.TempPathFactory) -> SampleRepo:
    """The sample repository made once per worker, with the git config every test has; each
    test gets a copy (six git processes fewer a test)."""
    tmp = tmp_path_factory.mktemp("sample-template")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, tmp_path_factory.mktemp("template-home"))
        return make_sample_repo(tmp)


@pytest.fixture
def sample_repo(tmp_path: Path, sample_template: SampleRepo) -> SampleRepo:
    return copy_sample_repo(sample_template, tmp_path)


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def model_env(
    model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> ScriptedModelServer:
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000000000")
    return model_server


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP server recording what connections send (sandbox_attacks.py)."""
    from sandbox_attacks import loopback_listener

    with loopback_listener() as listening:
        yield listening
