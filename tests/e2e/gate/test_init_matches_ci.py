"""`codegen-ci init` started as a process on repositories shaped like real ones, and the
commands it writes run as written: an in-repo venv's interpreter, a Makefile-and-unittest
project, the tools CI needs but this machine lacks, a Rust crate."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CODEGEN_CI = Path(sys.executable).parent / "codegen-ci"

UNITTEST_SUITE = """\
import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def init(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run(
        [str(CODEGEN_CI), "init", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def validation_of(repo: Path) -> dict[str, list[str]]:
    config = yaml.safe_load((repo / ".codegen.yml").read_text())
    return config["validation"]  # type: ignore[no-any-return]


def test_a_makefile_unittest_project_with_its_venv_gets_the_venvs_interpreter(
    tmp_path: Path,
) -> None:
    """The shape of a small library: `make test` runs unittest from `.venv`, CI runs `make
    test` after `make venv`, and the venv has no pytest. The command init writes names the
    venv's interpreter, runs, and init says the counts stay unknown; CI's mypy step, which
    the venv lacks, is named with how to install it."""
    repo = tmp_path / "lib"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(UNITTEST_SUITE)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='calc')\n")
    (repo / "Makefile").write_text(
        "venv:\n\tpython3 -m venv .venv\n\n"
        "test:\n\t.venv/bin/python -m unittest discover -s tests\n"
    )
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "ci.yml").write_text(
        "name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n      - run: make venv\n"
        "      - run: .venv/bin/pip install mypy\n      - run: .venv/bin/mypy calc.py\n"
        "      - run: python -m unittest discover -s tests\n"
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)

    done = init(repo)

    validation = validation_of(repo)
    assert validation["test"] == [".venv/bin/python -m unittest discover -s tests"]
    assert validation["lint"] == [".venv/bin/python -m mypy calc.py"]
    assert "Python commands use .venv/bin/python, the repository's .venv" in done.stdout
    assert "missing: mypy is not installed" in done.stdout
    assert "left out: make venv (.github/workflows/ci.yml, job test)" in done.stdout
    assert '# setup: [".venv/bin/python -m pip install mypy"' in (repo / ".codegen.yml").read_text()
    ran = subprocess.run(
        validation["test"][0], shell=True, cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert "Ran 1 test" in ran.stderr


def test_without_ci_the_venv_runs_the_unittest_suite_with_counts_without_pytest(
    tmp_path: Path,
) -> None:
    """A plain `python -m unittest` writes JUnit through codegen-ci's own runner: no note that
    counts stay unknown, whether or not pytest is installed."""
    repo = tmp_path / "lib"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text(UNITTEST_SUITE)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='calc')\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)

    done = init(repo)

    [command] = validation_of(repo)["test"]
    assert command == ".venv/bin/python -m unittest discover -s tests"
    assert "test counts stay unknown" not in done.stdout
    ran = subprocess.run(command, shell=True, cwd=repo, capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr


def rust_env() -> dict[str, str]:
    """The test's HOME is a scratch folder: rustup's toolchains are the user's real ones."""
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    env = dict(os.environ)
    for name, folder in (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")):
        if name not in env and (home / folder).is_dir():
            env[name] = str(home / folder)
    return env


def cargo_works() -> bool:
    if shutil.which("cargo") is None:
        return False
    done = subprocess.run(["cargo", "--version"], env=rust_env(), capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.skipif(not cargo_works(), reason="needs a working cargo")
def test_the_rust_crates_test_command_runs_offline(tmp_path: Path) -> None:
    repo = tmp_path / "crate"
    (repo / "src").mkdir(parents=True)
    (repo / "Cargo.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    (repo / "src" / "lib.rs").write_text(
        "pub fn one() -> u32 { 1 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n"
        "    fn it_is_one() { assert_eq!(super::one(), 1); }\n}\n"
    )

    done = init(repo)

    validation = validation_of(repo)
    assert validation["lint"] == []  # no CI runs clippy
    [command, *_] = validation["test"]
    env = {**rust_env(), "CARGO_NET_OFFLINE": "true", "CARGO_TARGET_DIR": str(tmp_path / "t")}
    ran = subprocess.run(
        command, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    if command.startswith("cargo nextest"):
        assert "cargo nextest is installed" in done.stdout
    else:
        assert "test result: ok. 1 passed" in ran.stdout
        assert "counted from the lines libtest prints" in done.stdout
