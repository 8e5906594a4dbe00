"""The wheel, built once per test session and installed alone in one fresh virtualenv, the way
a user gets codegen-ci from `pip install codegen-ci`: runtime dependencies only, no test
extras, so no pytest (`install_with_pipx`). Under xdist the workers share the build and the
install through lock files."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The environment pytest started with: pip keeps its cache under the real HOME, which the
# autouse fixture later replaces with a temporary one.
START_ENV = dict(os.environ)
PIP_TIMEOUT = 900
# pip's own work that no install test is about: no version check, and no byte-compiling of
# every installed file (`--no-compile`; Python compiles what it imports when it imports it).
PIP_QUIET = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_COMPILE": "0"}


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.venv / "bin" / "codegen-ci"

    def has(self, module: str) -> bool:
        """Whether `module` can be imported in the installed virtualenv."""
        code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        return subprocess.run([str(self.python), "-c", code], env=clean_env()).returncode == 0

    def module_path(self) -> Path:
        code = "import codegen_ci; print(codegen_ci.__file__)"
        out = subprocess.run(
            [str(self.python), "-c", code],
            env=clean_env(),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return Path(out.strip())


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) without what would let the installed tool see the
    development checkout or its virtualenv."""
    env = dict(os.environ if env is None else env)
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    return env


def pip(*args: str, python: str = sys.executable) -> None:
    env = {**clean_env(START_ENV), **PIP_QUIET}
    proc = subprocess.run(
        [python, "-m", "pip", *args], env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT
    )
    assert proc.returncode == 0, f"pip {' '.join(args)}\n{proc.stdout}\n{proc.stderr}"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_wheel(shared: Path) -> Path:
    """The project's wheel (hatchling), built once into `shared`."""
    dist = shared / "dist"
    with locked(shared / "wheel.lock"):
        if not (dist / "complete").exists():
            pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(ROOT))
            (dist / "complete").touch()
    (wheel,) = dist.glob("codegen_ci-*.whl")
    return wheel


def run_tool(
    installed: Installed, args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed.script), *args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def install_with_pipx(shared: Path) -> Installed:
    """The wheel installed by `pipx install` (docs/install.md's way for use), once, its runtime
    dependencies resolved by pip against the configured index: pipx's own virtualenv
    (`PIPX_HOME` and `PIPX_BIN_DIR` under `shared`) holds the wheel and its runtime dependencies
    only, so it is also the fresh virtualenv the wheel-alone tests run the tool from. Its
    `codegen-ci` on PATH is `pipx_bin(shared)`."""
    wheel = build_wheel(shared)
    home = shared / "pipx"
    venv = home / "venvs" / "codegen-ci"
    with locked(shared / "pipx.lock"):
        if not (shared / "pipx-installed").exists():
            env = {
                **clean_env(START_ENV),
                "PIPX_HOME": str(home),
                "PIPX_BIN_DIR": str(pipx_bin(shared)),
                "PIPX_MAN_DIR": str(shared / "pipx-man"),
                **PIP_QUIET,
            }
            command = [sys.executable, "-m", "pipx", "install", str(wheel)]
            proc = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            (shared / "pipx-installed").touch()
    return Installed(venv, wheel)


def pipx_bin(shared: Path) -> Path:
    """`PIPX_BIN_DIR` of `install_with_pipx`: where pipx puts `codegen-ci` for the PATH."""
    return shared / "pipx-bin"
