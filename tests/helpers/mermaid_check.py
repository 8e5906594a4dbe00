"""Mermaid's own parser (the npm package `mermaid`, with `jsdom` for the DOM it loads with),
installed once per session from the npm registry into a shared directory, run by node on
charts: what GitHub renders, checked by the code GitHub renders it with."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("mermaid@11.17.2", "jsdom@29.1.1")
SCRIPT = Path(__file__).with_name("mermaid_parse.mjs")
TIMEOUT = 600


def install(shared: Path) -> Path:
    """The directory holding node_modules with mermaid and jsdom (installed once)."""
    root = shared / ("mermaid-" + "-".join(p.replace("@", "_") for p in PACKAGES))
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / ".codegen-installed"
        if not marker.exists():
            (root / "package.json").write_text('{"name": "mermaid-check", "private": true}\n')
            cache = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")
            # --prefer-offline: metadata from npm's cache where it has it, not one registry
            # request per package (the two packages' versions are pinned)
            argv = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"]
            argv.append("--prefer-offline")
            subprocess.run(
                [*argv, "--cache", cache, "--no-package-lock", *PACKAGES],
                cwd=root,
                check=True,
                capture_output=True,
                timeout=TIMEOUT,
            )
            marker.write_text("ok\n")
    shutil.copy(SCRIPT, root / SCRIPT.name)
    return root


def parse(root: Path, charts: list[str]) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["node", str(root / SCRIPT.name)],
        input=json.dumps(charts),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def blocks(markdown: str) -> list[str]:
    """The ```mermaid blocks of a Markdown text."""
    charts, current = [], None
    for line in markdown.splitlines(keepends=True):
        if current is None and line.strip() == "```mermaid":
            current = ""
        elif current is not None and line.strip() == "```":
            charts.append(current)
            current = None
        elif current is not None:
            current += line
    return charts
