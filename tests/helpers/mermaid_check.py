"""Mermaid's own parser (the npm package `mermaid`, with `jsdom` for the DOM it loads with),
installed once per session from the npm registry into a shared directory, run by node on
charts: what GitHub renders, checked by the code GitHub renders it with.

mermaid is the package's own self-contained ESM build (`dist/mermaid.esm.min.mjs` and its
chunks, every dependency bundled in), taken from the package's tarball (`npm pack`): the same
parser as `npm install mermaid`'s, without the 150 packages and 180 MB that install unpacks
(11 of the test's 13 CPU-s); jsdom is `npm install`ed."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

MERMAID = "mermaid@11.17.2"
JSDOM = "jsdom@29.1.1"
PACKAGES = (MERMAID, JSDOM)
SCRIPT = Path(__file__).with_name("mermaid_parse.mjs")
# the bundle mermaid_parse.mjs imports, and the folder of the chunks it loads (no source maps)
BUNDLE = ("package/dist/mermaid.esm.min.mjs", "package/dist/chunks/mermaid.esm.min/")
TIMEOUT = 600


def _bundled(member: tarfile.TarInfo) -> bool:
    """A file of the bundle, named within the package (no `..`)."""
    name = member.name
    wanted = name == BUNDLE[0] or (name.startswith(BUNDLE[1]) and name.endswith(".mjs"))
    return member.isfile() and wanted and ".." not in name.split("/")


def install(shared: Path) -> Path:
    """The directory holding node_modules with mermaid and jsdom (installed once)."""
    root = shared / ("mermaid-bundle-" + "-".join(p.replace("@", "_") for p in PACKAGES))
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / ".codegen-installed"
        if not marker.exists():
            (root / "package.json").write_text('{"name": "mermaid-check", "private": true}\n')
            cache = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")
            # --prefer-offline: metadata from npm's cache where it has it, not one registry
            # request per package (the two packages' versions are pinned)
            npm = ["--loglevel=error", "--prefer-offline", "--cache", cache]
            argv = ["npm", "install", "--no-audit", "--no-fund", *npm, "--no-package-lock"]
            subprocess.run(
                [*argv, JSDOM], cwd=root, check=True, capture_output=True, timeout=TIMEOUT
            )
            packed = subprocess.run(
                ["npm", "pack", *npm, MERMAID],
                cwd=root,
                check=True,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            tarball = root / packed.stdout.strip().splitlines()[-1]
            with tarfile.open(tarball) as tar:
                for member in filter(_bundled, tar.getmembers()):
                    dest = root.joinpath("mermaid", *member.name.split("/"))
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None
                    dest.write_bytes(source.read())
            tarball.unlink()
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
