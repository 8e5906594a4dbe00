"""Where `cargo nextest run` writes its JUnit, read from the repository's own nextest config, so
a command CI runs as it is gives the gate its cases without a `validation.junit` glob.

nextest writes a report for the profile it runs when that profile has `[profile.<name>.junit]
path = "..."` in `.config/nextest.toml` (the workspace root's): at
`<store.dir>/<profile>/<path>`, `store.dir` being `target/nextest` unless the config says
otherwise. The profile is `--profile`/`-P` on the command line, else `NEXTEST_PROFILE`, else
`default`. A profile without a JUnit path writes none: the command's JUnit hint
(gate/junit/capture.py) says how to add one. The config is read through the guarded reader:
the worktree is shaped by the model."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from codegen_ci.security import guarded_read

NEXTEST_RUN = re.compile(r"\bcargo\s+(?:\+\S+\s+)?nextest\s+run\b")
PROFILE = re.compile(r"\s(?:--profile|-P)(?:=|\s+)([\w.-]+)")
CONFIG = ".config/nextest.toml"
STORE = "target/nextest"


def nextest_reports(command: str, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The JUnit file (relative to `cwd`) a `cargo nextest run` in `command` writes; [] when it
    runs no nextest or its profile writes no JUnit."""
    if not NEXTEST_RUN.search(command):
        return []
    match = PROFILE.search(command)
    profile = match[1] if match else env.get("NEXTEST_PROFILE") or "default"
    try:
        config = tomllib.loads(guarded_read.read_text(cwd, CONFIG, max_bytes=1024 * 1024))
    except (guarded_read.Refused, tomllib.TOMLDecodeError):
        return []
    path = _get(config, "profile", profile, "junit", "path")
    store = _get(config, "store", "dir")
    if not isinstance(path, str) or not path:
        return []
    where = PurePosixPath(store if isinstance(store, str) and store else STORE, profile, path)
    if where.is_absolute() or ".." in where.parts:
        return []
    return [str(where)]


def _get(table: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table
