"""A small JavaScript project tested by vitest, with vitest's V8 coverage package, for proof
and changed-line coverage end to end; and a shared `npm install` of pinned packages.

The packages come from the npm registry once per test session into a shared directory (a
file lock keeps xdist workers from installing twice), then are hard-linked into each
project's `node_modules`, as if the workflow had run `npm ci` before the run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from eco_projects import git_repo
from sample_repo import SampleRepo

VITEST_COVERAGE_PACKAGES = ("vitest@2.1.9", "@vitest/coverage-v8@2.1.9")
# all test files in one child process (`--poolOptions.forks.singleFork`), not one each: the
# same runner, its pool and reporters, ~0.35 CPU-s less a start (of ~1.2); the pool is not
# what these tests are about
VITEST_JUNIT = (
    "npx vitest run --poolOptions.forks.singleFork --reporter=default --reporter=junit"
    " --outputFile.junit=junit.xml"
)
CALC_FILE = "src/calc.js"
CALC_JS = """\
/** v, kept within lo..hi. */
export function clamp(v, lo, hi) {
  if (v < lo) return lo;
  return v;
}
"""
CALC_BUG = "  return v;\n"
CALC_FIX = "  return Math.min(v, hi);\n"
CALC_TEST = """\
import { expect, it } from "vitest";
import { clamp } from "./calc.js";

it("keeps v above lo", () => expect(clamp(-1, 0, 3)).toBe(0));
"""
CALC_TASK = "clamp(v, lo, hi) must never return more than hi."


def npm_install(shared_root: Path, packages: Sequence[str], *, over: Path | None = None) -> Path:
    """A node_modules holding `packages` (pinned), installed once per session. With `over`
    (another such install's node_modules): a copy of it with `packages` installed on top, as a
    workflow adds a package to an install it has (vitest's, then its coverage package: the
    same tree, 2.4 CPU-s instead of 4.4; npm re-extracts every package of a new install)."""
    key = hashlib.sha1(" ".join(packages).encode()).hexdigest()[:10]
    root = shared_root / f"npm-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "node_modules" / ".codegen-installed"
        if not marker.exists():
            shutil.rmtree(root / "node_modules", ignore_errors=True)  # an earlier one, cut short
            if over is not None:
                subprocess.run(["cp", "-a", str(over), str(root / "node_modules")], check=True)
                marker.unlink()  # the copy's, not this install's
            (root / "package.json").write_text('{"name": "deps", "private": true}\n')
            cache = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")  # tests get a new HOME
            subprocess.run(
                [
                    *("npm", "install", "--no-audit", "--no-fund", "--loglevel=error"),
                    # the cache's packages without asking the registry again (6.8 -> 4.4 CPU-s
                    # for vitest and its coverage package)
                    *("--prefer-offline", "--cache", cache, "--save-dev", *packages),
                ],
                cwd=root,
                check=True,
                capture_output=True,
                timeout=600,
            )
            marker.write_text("ok\n")
    return root / "node_modules"


def make_vitest_repo(
    tmp: Path, node_modules: Path, files: dict[str, str] | None = None
) -> SampleRepo:
    """The clamp project (its one test passes on the base), committed, with node_modules."""
    tree = {
        "package.json": '{"name": "calc", "private": true, "type": "module"}\n',
        ".gitignore": "node_modules/\njunit.xml\n.flaky-count\n",
        CALC_FILE: CALC_JS,
        "src/calc.test.js": CALC_TEST,
        **(files or {}),
    }
    repo = git_repo(tmp, tree)
    subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")], check=True)
    return repo
