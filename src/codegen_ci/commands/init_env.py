"""What this machine has for the repository, for `codegen-ci init`: the Python interpreter the
commands name (the repository's own `.venv`, or an active virtualenv inside it, else `python`:
an active virtualenv elsewhere is the `python` it probes, never a path written), which
tools are installed (whether `cargo nextest` is: runners/cargo.py), and how to install what
a written command needs but is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci import runners
from codegen_ci.commands.init_checks import PY_TOOLS, bare
from codegen_ci.commands.init_ci import CiLine
from codegen_ci.commands.init_install import ci_install, node_install, python_install

VENV_DIRS = (".venv", "venv")
# How to install a lint tool or `make` (a test runner's programs are its own: runners/,
# `INSTALLS`; both joined in `install_hints`).
LINT_INSTALL_HINTS = {
    "cargo-clippy": "rustup component add clippy",
    "cargo-fmt": "rustup component add rustfmt",
    "golangci-lint": "see https://golangci-lint.run/welcome/install/",
    "staticcheck": "go install honnef.co/go/tools/cmd/staticcheck@latest",
    "make": "install make (apt-get install make)",
}
NODE_EXEC = ("npx", "bunx", "yarn")
PROGRAM = re.compile(r"[A-Za-z0-9][\w.+-]*")  # a program found on PATH (not a path, no `=`)
SHELL_WORDS = frozenset(
    {
        "cd",
        "env",
        "exec",
        "export",
        "set",
        "test",
        "true",
        "false",
        "echo",
        "exit",
        "source",
        "if",
        "then",
        "else",
        "fi",
        "for",
        "do",
        "done",
        "while",
        "case",
        "esac",
        "time",
        "command",
        "builtin",
        "eval",
        "",
    }
)


# exit 0 when the interpreter would find the top-level module `argv[1]`, without importing it
FIND_MODULE = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"


@dataclass
class Toolchain:
    root: Path
    python: str  # as written in commands: ".venv/bin/python" (in the repository) or "python"
    python_origin: str  # why that interpreter: "the repository's .venv", "VIRTUAL_ENV", ""
    venv_in_repo: bool
    probe: str = ""  # the interpreter `python` is here (an active venv outside the repository)
    _modules: dict[str, bool] = field(default_factory=dict)
    _factor: str | None = None

    def has_command(self, name: str) -> bool:
        if self.probe and (Path(self.probe).parent / name).exists():
            return True
        if self.python != "python" and (self.root / self.python).parent.joinpath(name).exists():
            return True
        return shutil.which(name) is not None

    @property
    def pip_install(self) -> str:
        """How a package goes into the interpreter's environment: pip, or uv's for a venv uv
        made (which has no pip: `python -m pip` fails with "No module named pip")."""
        if self.venv_in_repo and _made_by_uv(self.root / self.python):
            return f"uv pip install --python {self.python}"
        return f"{self.python} -m pip install"

    def has_module(self, module: str) -> bool:
        """Whether the interpreter finds `module` (asked once, without running any of the
        repository's code: `-I` ignores the current folder and user site). Found, not
        imported: no code of the module runs, and the probe costs an interpreter's start
        (0.02 s of CPU), not the tool's import (0.25 s for pytest)."""
        if module not in self._modules:
            try:
                done = subprocess.run(
                    [self._python_path(), "-I", "-c", FIND_MODULE, module],
                    cwd=self.root,
                    capture_output=True,
                    timeout=20,
                    check=False,
                )
                self._modules[module] = done.returncode == 0
            except (OSError, subprocess.SubprocessError):
                self._modules[module] = False
        return self._modules[module]

    @property
    def python_factor(self) -> str:
        """`py311`: the tox factor of the interpreter the commands use; "" when unknown."""
        if self._factor is None:  # asked once
            self._factor = ""
            try:
                done = subprocess.run(
                    [self._python_path(), "-I", "-c", "import sys; print(*sys.version_info[:2])"],
                    cwd=self.root,
                    capture_output=True,
                    text=True,
                    timeout=20,
                    check=False,
                )
                if done.returncode == 0:
                    self._factor = "py" + "".join(done.stdout.split())
            except (OSError, subprocess.SubprocessError):
                pass
        return self._factor

    def _python_path(self) -> str:
        if self.probe:
            return self.probe
        if self.python == "python":
            return shutil.which("python") or shutil.which("python3") or "python3"
        return str(self.root / self.python)


def toolchain(root: Path) -> Toolchain:
    for name in VENV_DIRS:
        if (root / name / "bin" / "python").exists():
            origin = (
                f"the repository's {name} (a workflow running codegen-ci must create {name} "
                "before it)"
            )
            return Toolchain(root, f"{name}/bin/python", origin, True)
    active = os.environ.get("VIRTUAL_ENV")
    if active and (Path(active) / "bin" / "python").exists():
        venv = Path(active).resolve()
        if venv.is_relative_to(root):
            where = venv.relative_to(root).as_posix()
            return Toolchain(root, f"{where}/bin/python", f"the active virtualenv ({where})", True)
        # .codegen.yml is committed: a path of this machine would break every other checkout
        origin = (
            f"the active virtualenv's while it is active when codegen-ci runs (its `bin` first "
            f"on PATH): VIRTUAL_ENV={venv} is outside the repository, and a path of this "
            "machine is not written into .codegen.yml (a venv in the repository, .venv, would "
            "be named)"
        )
        return Toolchain(root, "python", origin, False, probe=str(venv / "bin" / "python"))
    return Toolchain(root, "python", "", False)


def install_hints() -> dict[str, str]:
    """How to install a tool that is not a Python package or the project's own dependency."""
    return {**runners.installs(), **LINT_INSTALL_HINTS}


def _made_by_uv(python: Path) -> bool:
    try:
        config = (python.parent.parent / "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^uv\s*=", config, re.M) is not None


def missing_tool(
    command: str, tools: Toolchain, ci: Sequence[CiLine] = (), origin: str = ""
) -> tuple[str, str] | None:
    """(tool, how to install it) when `command` needs a tool this machine lacks: a Python
    tool the repository's way (init_install.python_install, with `ci` the install lines of
    its CI and `origin` where `command` came from), a Node project's dependencies as its
    lockfile pins them."""
    hints = install_hints()
    words = bare(command).split()
    if not words:
        return None
    first = words[0]
    if first == tools.python or first in ("python", "python3"):
        module = words[2] if words[1:2] == ["-m"] and len(words) > 2 else None
        if module in PY_TOOLS and not tools.has_module(module):
            return module, _python_install(tools, module, tools.pip_install, ci, origin)
        return None
    if first in PY_TOOLS:
        if tools.has_command(first):
            return None
        return first, _python_install(tools, first, "python -m pip install", ci, origin)
    if first == "cargo" and len(words) > 1 and words[1] in ("nextest", "clippy", "fmt"):
        tool = f"cargo-{words[1]}"
        return (
            None
            if tools.has_command(tool)
            else (tool, _ci_or(hints[tool], tool, tools, ci, origin))
        )
    if first in NODE_EXEC or words[:2] == ["pnpm", "exec"]:
        tool = (
            words[2] if first == "pnpm" and len(words) > 2 else words[1] if len(words) > 1 else ""
        )
        folder = _folder(command, tools.root)
        if tool and not (folder / "node_modules" / ".bin" / tool).exists():
            return tool, f"{node_install(folder).command} (the project's dependencies)"
        return None
    if first in ("npm", "pnpm", "yarn", "bun"):
        folder = _folder(command, tools.root)
        if not tools.has_command(first):
            return first, "corepack enable (pnpm, yarn) or install it (https://nodejs.org)"
        if (folder / "package.json").is_file() and not (folder / "node_modules").is_dir():
            return "node_modules", f"{node_install(folder).command} (the project's dependencies)"
        return None
    if first in hints and not tools.has_command(first):
        return first, _ci_or(hints[first], first, tools, ci, origin)
    if PROGRAM.fullmatch(first) and first not in SHELL_WORDS and not tools.has_command(first):
        # `check-manifest` from a tox env: whatever it is, the run cannot start it
        how = "put it on PATH (or in the venv the commands use) before codegen-ci runs"
        return first, _ci_or(how, first, tools, ci, origin)
    return None


def _ci_or(how: str, tool: str, tools: Toolchain, ci: Sequence[CiLine], origin: str) -> str:
    """CI's install line for a program that is no Python tool init knows (golangci-lint,
    cargo-nextest, a tox env's `check-manifest`), else `how`."""
    return ci_install(tools.root, tool, tools.python, ci, origin) or how


def _python_install(
    tools: Toolchain, tool: str, pip: str, ci: Sequence[CiLine], origin: str
) -> str:
    # `uv sync` makes (or updates) the root's .venv: the commands' interpreter, or the one
    # init names once it exists
    uv_venv = tools.python == ".venv/bin/python" or (tools.python == "python" and not tools.probe)
    return python_install(tools.root, tool, pip, tools.python, uv_venv, ci, origin)


def _folder(command: str, root: Path) -> Path:
    words = command.split()
    return root / words[1] if words[:1] == ["cd"] and len(words) > 1 else root
