"""The environment's failures are not the model's: when the untouched code's run fails in a
way that names no test (a program under the HOME the sandbox hides, a command missing inside
a script, a download with the network off, rustup with no toolchain, Go modules not in the
cache), the run stops before any model call with exit 2, the dry run too, and the message
says what to do in the user's terms (`validation.network`, the sandbox's HOME and what of the
user's is shown, the variable to set), never a sandbox scratch path as if it were theirs.
Real make, sh, pytest, cargo (rustup) and go, both sandbox backends where the sandbox matters,
the scripted model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any
from venv import EnvBuilder

import pytest
from click.testing import CliRunner
from gate_repos import run_cli
from sample_repo import SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import ScriptedModelServer

needs_bwrap = pytest.mark.skipif(not shutil.which("bwrap"), reason="needs bubblewrap")
BACKENDS = [pytest.param("bwrap", marks=needs_bwrap), "landlock"]
SCRATCH = "codegen-sandbox-"  # the sandbox's folders: never shown as the user's

# A venv under HOME in a folder no tool keeps venvs in (virtualenvwrapper's `~/.virtualenvs`
# is shown inside: security/toolchains.py, and the last test here).
MAKEFILE = "test:\n\t~/envs/semver/bin/python -m pytest -q -p no:cacheprovider tests\n"
DOWNLOADS = """\
import urllib.request

DATA = urllib.request.urlopen("http://files.example.invalid/cases.json", timeout=10).read()


def test_cases():
    assert DATA
"""
MISSING_TOOL = "#!/bin/sh\nset -e\nfrobnicate-tests --all tests\n"


def venv_in_home(name: str, folder: str = "envs") -> Path:
    """A virtualenv under the user's HOME (the test's) that sees this run's pytest: it works
    outside the sandbox."""
    venv = Path(os.environ["HOME"]) / folder / name
    # what `python -m venv --without-pip` makes (the same files), without a process
    EnvBuilder(symlinks=True).create(venv)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "_test_tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def assert_stopped_before_the_model(
    code: int, output: str, report: dict[str, Any], server: ScriptedModelServer
) -> str:
    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert server.requests == []
    assert report["iterations"] == 0
    error: str = report["error"]
    assert SCRATCH not in error and SCRATCH not in output
    assert "not its code" in error and "The model is not asked to fix this" in error
    return error


def run_stopped(
    repo: SampleRepo, server: ScriptedModelServer, validation: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """A run whose pre-flight fails for the environment's sake (`validation`: the spec's, its
    default when None): stopped before the model (the model scripted with the fix, never
    asked); its error and report."""
    server.add(*fixing_script())
    spec = repo.write_spec(validation=validation) if validation else repo.write_spec()
    code, output, _, report = run_cli(repo, spec)
    return assert_stopped_before_the_model(code, output, report, server), report


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_makefile_whose_venv_is_under_home_stops_before_the_model(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    venv = venv_in_home("semver")
    sample_repo.commit({"Makefile": MAKEFILE}, "make test")
    ran = subprocess.run(["make", "-s", "test"], cwd=sample_repo.path, capture_output=True)
    assert b"1 failed, 2 passed" in ran.stdout  # outside the sandbox it runs (the bug fails)

    error, report = run_stopped(sample_repo, model_env, {"test": ["make test"], "timeout": 120})

    assert report["sandbox"] == backend
    assert "`~/envs/semver/bin/python` was not found inside the sandbox" in error
    assert "is under HOME" in error and f"not your {os.environ['HOME']}" in error
    assert "VIRTUAL_ENV" in error and "PATH" in error
    assert str(venv) not in error.split("Last lines")[0]  # what the sandbox hid is named as ~


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_makefile_whose_venv_is_virtualenvwrappers_runs_inside(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    """Issue 33: `mkvirtualenv`'s `~/.virtualenvs` is among the toolchains shown inside."""
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    venv_in_home("semver", ".virtualenvs")
    makefile = MAKEFILE.replace("~/envs/", "~/.virtualenvs/")
    sample_repo.commit({"Makefile": makefile}, "make test")
    model_env.add(*fixing_script())
    spec = sample_repo.write_spec(validation={"test": ["make test"], "timeout": 120})

    code, output, _, report = run_cli(sample_repo, spec)

    assert report["sandbox"] == backend
    assert code == 0, output
    assert report["status"] == "success"


def test_the_dry_run_exits_2_there_too_and_never_says_success(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    venv_in_home("semver")
    sample_repo.commit({"Makefile": MAKEFILE}, "make test")
    spec = sample_repo.write_spec(validation={"test": ["make test"], "timeout": 120})
    out = sample_repo.tmp / "dry"
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]

    result = CliRunner().invoke(cli, [*args, "--dry-run"])

    assert result.exit_code == 2, result.output
    assert "success" not in result.output
    assert "~/envs/semver/bin/python" in result.output
    assert SCRATCH not in result.output
    assert model_env.requests == []


def test_a_script_calling_a_missing_command_stops_before_the_model(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    script = sample_repo.path / "run-tests.sh"
    script.write_text(MISSING_TOOL)
    script.chmod(0o755)
    sample_repo.commit({}, "a test script")

    error, _ = run_stopped(sample_repo, model_env, {"test": ["./run-tests.sh"], "timeout": 120})

    assert "`frobnicate-tests` was not found inside the sandbox" in error
    assert "validation.setup" in error and "PATH" in error


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_test_that_downloads_with_the_network_off_says_validation_network(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    sample_repo.commit({"tests/test_cases.py": DOWNLOADS}, "cases from the server")

    error, report = run_stopped(sample_repo, model_env)

    assert report["sandbox"] == backend
    assert "tried to reach the network" in error
    assert "`validation.network: [test]`" in error
    assert "name resolution" in error or "Name or service not known" in error


CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n'
LIB_RS = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n"


@pytest.mark.skipif(
    not (shutil.which("rustup") and shutil.which("cargo")), reason="needs cargo through rustup"
)
def test_rustup_with_no_toolchain_in_the_sandboxs_home_names_rustup_home(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cargo = Path(shutil.which("cargo") or "")
    if Path(shutil.which("rustup") or "").parent != cargo.parent:
        pytest.skip("cargo is not rustup's proxy here")
    monkeypatch.delenv("RUSTUP_HOME", raising=False)  # the default: ~/.rustup
    monkeypatch.delenv("RUSTUP_TOOLCHAIN", raising=False)
    monkeypatch.setenv("RUST_BACKTRACE", "1")  # as CI workflows set it: rustup's error has one
    sample_repo.commit({"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB_RS}, "a crate")

    error, _ = run_stopped(sample_repo, model_env, {"test": ["cargo test"], "timeout": 120})

    assert "rustup found no Rust toolchain" in error
    assert "RUSTUP_HOME" in error and "HOME (`~`) is an empty folder" in error
    # the error, not the backtrace RUST_BACKTRACE asked for: its frames are left out
    assert "rustup could not choose a version of cargo" in error.split("Last lines")[1]
    assert "Stack backtrace" not in error and "rustup::config" not in error
    assert "backtrace left out" in error


GO_MOD = "module example.com/adder\n\ngo 1.21\n\nrequire github.com/google/go-cmp v0.6.0\n"
GO_SUM = (
    "github.com/google/go-cmp v0.6.0 h1:ofyhxvXcZhMsU5ulbFiLKl/XBFqE1GSq7atu8tAmTRI=\n"
    "github.com/google/go-cmp v0.6.0/go.mod h1:17dUlkBOakJ0+DkrSSNjCkIjxS6bF9zb3elmeNGIjoY=\n"
)
GO_TEST = """\
package adder

import (
\t"testing"

\t"github.com/google/go-cmp/cmp"
)

func TestAdd(t *testing.T) {
\tif d := cmp.Diff(3, 1+2); d != "" {
\t\tt.Fatal(d)
\t}
}
"""


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
def test_go_modules_missing_from_the_cache_with_the_network_off_name_gomodcache(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY"):
        monkeypatch.delenv(name, raising=False)
    sample_repo.commit(
        {"go.mod": GO_MOD, "go.sum": GO_SUM, "adder_test.go": GO_TEST}, "a Go module"
    )

    error, _ = run_stopped(sample_repo, model_env, {"test": ["go test ./..."], "timeout": 120})

    assert "`validation.network: [test]`" in error
    assert "GOMODCACHE" in error and "go env GOMODCACHE" in error


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_go_module_missing_from_a_read_only_module_cache_says_go_mod_download(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    backend: str,
) -> None:
    """The user's module cache is shown read-only, and the module is not in it: Go fails
    making its download lock there (EROFS). That is a module to download outside, not a place
    to make writable: a configuration error (exit 2), never the environment's EROFS (exit 3)."""
    cache = tmp_path / "gomodcache"
    (cache / "cache" / "download").mkdir(parents=True)  # a real cache, this module not in it
    monkeypatch.setenv("GOMODCACHE", str(cache))
    monkeypatch.setenv("CODEGEN_SANDBOX", backend)
    for name in ("GOPATH", "GOFLAGS", "GOPROXY"):
        monkeypatch.delenv(name, raising=False)
    sample_repo.commit(
        {"go.mod": GO_MOD, "go.sum": GO_SUM, "adder_test.go": GO_TEST}, "a Go module"
    )

    error, _ = run_stopped(sample_repo, model_env, {"test": ["go test ./..."], "timeout": 120})

    assert "`go mod download`" in error and "Make the place writable" not in error
    assert "cache/download" in error  # Go's own line, as it said it


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
@pytest.mark.parametrize("broken", ["goroot", "go.mod"])
def test_a_go_that_cannot_build_the_module_stops_before_the_model(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    broken: str,
) -> None:
    """hashicorp/go-version with GOROOT naming a folder that is gone: "go: cannot find GOROOT
    directory", gotestsum's report of 0 tests, and three model rounds ending "failed (stuck)";
    a go.mod newer than the installed Go reads the same way to the gate."""
    go_mod = "module example.com/adder\n\ngo 1.16\n"
    if broken == "goroot":
        monkeypatch.setenv("GOROOT", str(sample_repo.tmp / "go-removed"))
    else:  # Go before 1.21 cannot read the version; 1.21+ with the local toolchain refuses it
        go_mod = "module example.com/adder\n\ngo 1.99.1\n"
        monkeypatch.setenv("GOTOOLCHAIN", "local")
    test = 'package adder\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {}\n'
    sample_repo.commit({"go.mod": go_mod, "adder_test.go": test}, "a Go module")

    error, _ = run_stopped(sample_repo, model_env, {"test": ["go test ./..."], "timeout": 120})

    assert "the installed Go cannot build the module" in error
    assert "go env GOROOT" in error
