"""Where users keep toolchains, and how a confined command finds them (docs/sandbox.md,
"Toolchains in HOME").

Inside the sandbox HOME is a fresh scratch folder, and the real HOME is hidden: an allowlist,
so no credential file in it is readable whatever its name. The places in `HOME_TOOLCHAINS`
(none holds credentials: `~/.cargo` is shown by its parts, never its `credentials.toml` or
`config.toml`) are shown again read-only at their real paths, and the scratch HOME gets a link
at the same relative path to each (`furnish_home`), so a Makefile's `~/.virtualenvs/x/bin/python`
or pyenv's shims (which default to `$HOME/.pyenv`) reach them. `toolchain_env` names them in
the variables the tools read (`RUSTUP_HOME`, `CARGO_HOME`, `GOMODCACHE`, ...), where the user
had not set them: `CARGO_HOME` is the scratch HOME's `.cargo`, whose `bin`, `registry` and `git`
are links to the real ones and where cargo's own lock files can be written."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# Toolchains and package caches kept in HOME (relative to it), shown read-only when they exist.
HOME_TOOLCHAINS = (
    ".pyenv",
    ".nvm",
    ".volta",
    ".fnm",
    ".local/share/fnm",
    ".rustup",
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    "go/pkg/mod",
    "go/bin",
    ".sdkman/candidates",
    ".asdf",
    ".local/share/mise/installs",
    ".local/share/uv/python",
    ".local/pipx",
    ".local/share/pipx",
    ".virtualenvs",  # virtualenvwrapper (WORKON_HOME)
    ".local/share/virtualenvs",  # pipenv
    ".cache/pypoetry/virtualenvs",  # poetry
    ".rbenv",
    ".nodenv",
    ".goenv",
    ".jenv/versions",
    ".bun/bin",
    ".deno/bin",
    ".dotnet",
    ".ghcup/bin",
    ".elan/toolchains",
    ".juliaup",
    ".m2/repository",
    ".gradle/wrapper/dists",
    ".gradle/caches/modules-2",
)
# Variables naming a toolchain (shown whole) or a tree whose named parts are toolchains.
TOOLCHAIN_VARS = (
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "FNM_DIR",
    "RUSTUP_HOME",
    "GOROOT",
    "GOMODCACHE",
    "SDKMAN_CANDIDATES_DIR",
    "ASDF_DATA_DIR",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "RUNNER_TOOL_CACHE",
    "AGENT_TOOLSDIRECTORY",
    "WORKON_HOME",
    "PIPX_HOME",
    "UV_PYTHON_INSTALL_DIR",
    "POETRY_VIRTUALENVS_PATH",
)
TOOLCHAIN_PARTS = {"GOPATH": ("pkg/mod", "bin"), "CARGO_HOME": ("bin", "registry", "git")}
# What a tool reads to find its toolchain, set inside to the place in HOME when the user had
# not set it (its default is under HOME, which is the scratch folder there).
HOME_VARS = {
    "RUSTUP_HOME": ".rustup",
    "GOMODCACHE": "go/pkg/mod",
    "PYENV_ROOT": ".pyenv",
    "NVM_DIR": ".nvm",
    "VOLTA_HOME": ".volta",
    "ASDF_DATA_DIR": ".asdf",
    "UV_PYTHON_INSTALL_DIR": ".local/share/uv/python",
}


def furnish_home(scratch_home: Path, home: Path, shown: Sequence[Path]) -> None:
    """Links in the scratch HOME to each toolchain of the real `home` that is `shown`, at the
    same relative path (`.cargo` is a folder of the scratch holding links to its shown parts:
    cargo's `CARGO_HOME` there, with nothing else of the user's `~/.cargo`)."""
    kept = set(shown)
    for name in HOME_TOOLCHAINS:
        try:
            real = (home / name).resolve()
        except (OSError, RuntimeError):
            continue
        link = scratch_home / name
        if real in kept and not os.path.lexists(link):
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(real)


def toolchain_env(
    environ: Mapping[str, str], home: Path, scratch_home: Path, shown: Sequence[Path]
) -> dict[str, str]:
    """The variables a confined command gets so its tools find the toolchains in `home`
    (only those the user had not set, only for places that are `shown`)."""
    kept = set(shown)
    out: dict[str, str] = {}
    for name, rel in HOME_VARS.items():
        if environ.get(name):
            continue
        place = _real(home / rel)
        if name == "GOMODCACHE" and environ.get("GOPATH"):
            place = _real(Path(environ["GOPATH"].split(os.pathsep)[0]) / "pkg" / "mod")
        if place is not None and place in kept:
            out[name] = str(place)
    if not environ.get("CARGO_HOME") and (scratch_home / ".cargo").is_dir():
        out["CARGO_HOME"] = str(scratch_home / ".cargo")
    return out


def _real(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None
