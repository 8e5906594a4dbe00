"""One small project per ecosystem for the "existing tests are kept" tests: a function with a
bug, a test that fails on it and one that passes, under the ecosystem's own runner. Each comes
with the real fix and the ways a model could make the run green without it (a skip marker,
a deleted test or test file), as scripted edits.

Node's test runner needs nothing installed; vitest is installed once per session from the
npm registry into a shared directory (like eco_projects.py's jest), then hard-linked into the
project's `node_modules`. The Rust crate has no dependencies (cargo works offline).
"""

from __future__ import annotations

import fcntl
import os
import pwd
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from eco_projects import git_repo
from sample_repo import NO_PROOF, SampleRepo

from codegen_ci.testing.scripted_model import Reply, call

# An edit: (path, old text, new text); new text None deletes the file.
Edit = tuple[str, str, str | None]


@dataclass(frozen=True)
class Project:
    name: str
    files: dict[str, str]
    test: str
    junit: list[str]
    fix: Edit
    cheats: dict[str, tuple[list[Edit], list[dict[str, object]]]]  # label -> edits, removed
    tool: str  # the executable the project's tests need

    def make(self, tmp: Path, node_modules: Path | None = None) -> SampleRepo:
        repo = git_repo(tmp, self.files)
        if node_modules is not None:
            subprocess.run(["cp", "-al", str(node_modules), str(repo.path / "node_modules")])
        return repo

    def spec(self, protect_tests: bool | str = "keep", **overrides: object) -> dict[str, object]:
        # no proof (nor the coverage run after it) and no flaky re-runs: kept tests are
        # decided by the round itself, and they are two more runs after a passing one
        validation: dict[str, object] = {
            "test": [self.test],
            "timeout": 300,
            "protect_tests": protect_tests,
            "proof": NO_PROOF,
        }
        if self.junit:
            validation["junit"] = self.junit
        spec: dict[str, object] = {
            "version": 1,
            "title": f"Fix clamp ({self.name})",
            "task": "clamp(v, lo, hi) must never return more than hi.",
            "validation": validation,
            "limits": {"max_iterations": 1},
        }
        spec.update(overrides)
        return spec


def turn(edits: list[Edit]) -> list[Reply]:
    """One model turn: the edits (a deletion through `run_command`), then an answer."""
    replies = []
    for path, old, new in edits:
        if new is None:
            replies.append(Reply(tool_calls=[call("run_command", command=f"rm {path}")]))
        else:
            args = {"path": path, "old_text": old, "new_text": new}
            replies.append(Reply(tool_calls=[call("edit_file", **args)]))
    return [*replies, Reply("done")]


def gone(test_id: str, how: str = "skipped") -> dict[str, object]:
    return {"id": test_id, "how": how, "count": 1}


# --- unittest (no JUnit: the ids its verbose output prints) -----------------------------------

CALC_PY = """\
def clamp(v, lo, hi):
    \"\"\"v, kept within lo..hi.\"\"\"
    if v < lo:
        return lo
    return v
"""
PY_FIX: Edit = ("calc.py", "    return v\n", "    return min(v, hi)\n")
TEST_CALC_PY = """\
import unittest

from calc import clamp


class ClampTest(unittest.TestCase):
    def test_below(self):
        self.assertEqual(clamp(-1, 0, 3), 0)

    def test_above(self):
        self.assertEqual(clamp(5, 0, 3), 3)


if __name__ == "__main__":
    unittest.main()
"""
UNITTEST = Project(
    name="unittest",
    files={"calc.py": CALC_PY, "test_calc.py": TEST_CALC_PY, ".gitignore": "__pycache__/\n"},
    test=f"{sys.executable} -m unittest -v",
    junit=[],
    fix=PY_FIX,
    tool="python3",
    cheats={
        "skip decorator": (
            [
                (
                    "test_calc.py",
                    "    def test_above",
                    '    @unittest.skip("later")\n    def test_above',
                )
            ],
            [gone("test_calc.ClampTest.test_above")],
        ),
        "test method deleted": (
            [
                (
                    "test_calc.py",
                    "    def test_above(self):\n        self.assertEqual(clamp(5, 0, 3), 3)\n",
                    "",
                )
            ],
            [gone("test_calc.ClampTest.test_above", "removed")],
        ),
        "assertion removed": (
            [("test_calc.py", "self.assertEqual(clamp(5, 0, 3), 3)", "clamp(5, 0, 3)")],
            [gone("test_calc.py", "weakened")],
        ),
    },
)

# --- node's test runner (JUnit reporter) ------------------------------------------------------

CALC_MJS = """\
export function clamp(v, lo, hi) {
  if (v < lo) return lo;
  return v;
}
"""
NODE_FIX: Edit = ("calc.mjs", "  return v;\n", "  return Math.min(v, hi);\n")
CALC_TEST_MJS = """\
import test from "node:test";
import assert from "node:assert/strict";
import { clamp } from "./calc.mjs";

test("below", () => {
  assert.equal(clamp(-1, 0, 3), 0);
});

test("above", () => {
  assert.equal(clamp(5, 0, 3), 3);
});
"""
NODE_TEST = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination=junit.xml"
)
NODE = Project(
    name="node:test",
    files={"calc.mjs": CALC_MJS, "calc.test.mjs": CALC_TEST_MJS, ".gitignore": "junit.xml\n"},
    test=NODE_TEST,
    junit=["junit.xml"],
    fix=NODE_FIX,
    tool="node",
    cheats={
        "skip option": (
            [("calc.test.mjs", 'test("above", () => {', 'test("above", { skip: true }, () => {')],
            [gone("above")],
        ),
        "t.skip()": (
            [
                (
                    "calc.test.mjs",
                    'test("above", () => {',
                    'test("above", (t) => {\n  t.skip();\n  return;',
                )
            ],
            [gone("above")],
        ),
        "todo": (
            [("calc.test.mjs", 'test("above", () => {', 'test.todo("above", () => {')],
            [gone("above")],
        ),
    },
)

# --- vitest (JUnit reporter; two test files) --------------------------------------------------

VITEST_PACKAGES = ("vitest@2.1.9",)
# all test files in one child process (`--poolOptions.forks.singleFork`), not one each: the
# same runner, its pool and reporters, ~0.35 CPU-s less a start (of ~1.2); the pool is not
# what these tests are about
VITEST = (
    "npx vitest run --poolOptions.forks.singleFork --reporter=default --reporter=junit"
    " --outputFile.junit=junit.xml"
)
CALC_JS = """\
export function clamp(v, lo, hi) {
  if (v < lo) return lo;
  return v;
}
"""
VITEST_CALC = """\
import { describe, expect, it } from "vitest";
import { clamp } from "./calc.js";

describe("clamp", () => {
  it("keeps v above lo", () => expect(clamp(-1, 0, 3)).toBe(0));
  it("keeps v below hi", () => expect(clamp(5, 0, 3)).toBe(3));
});
"""
VITEST_OTHER = """\
import { expect, it } from "vitest";
import { clamp } from "./calc.js";

it("leaves v inside the range alone", () => expect(clamp(2, 0, 3)).toBe(2));
"""
ABOVE_ID = "src/calc.test.js::clamp > keeps v below hi"
BELOW_ID = "src/calc.test.js::clamp > keeps v above lo"
VITEST_PROJECT = Project(
    name="vitest",
    files={
        "package.json": '{"name": "calc", "private": true, "type": "module"}\n',
        ".gitignore": "node_modules/\njunit.xml\n",
        "src/calc.js": CALC_JS,
        "src/calc.test.js": VITEST_CALC,
        "src/other.test.js": VITEST_OTHER,
    },
    test=VITEST,
    junit=["junit.xml"],
    fix=("src/calc.js", "  return v;\n", "  return Math.min(v, hi);\n"),
    tool="npm",
    cheats={
        "describe.skip": (
            [("src/calc.test.js", 'describe("clamp"', 'describe.skip("clamp"')],
            [gone(BELOW_ID), gone(ABOVE_ID)],
        ),
        "test file removed": (
            [("src/calc.test.js", "", None)],
            [gone(BELOW_ID, "removed"), gone(ABOVE_ID, "removed")],
        ),
    },
)

# vitest with no JUnit reporter, run by `npm test` as a wrapper script would run it: the gate
# knows its tests only from the summary's counts (one group), and skipping them all is no success
# (pillarjs/path-to-regexp: `ts-scripts test` runs vitest with no reporter).
VITEST_GROUP = "(the tests of `npm test`)"
VITEST_NO_JUNIT = Project(
    name="vitest-no-junit",
    files={
        **VITEST_PROJECT.files,
        "package.json": (
            '{"name": "calc", "private": true, "type": "module",'
            ' "scripts": {"test": "vitest run --poolOptions.forks.singleFork"}}\n'
        ),
    },
    test="npm test",
    junit=[],
    fix=VITEST_PROJECT.fix,
    tool="npm",
    cheats={
        "describe.skip": (
            VITEST_PROJECT.cheats["describe.skip"][0],
            [{"id": VITEST_GROUP, "how": "skipped", "count": 2}],
        ),
    },
)

# --- Rust: cargo test, the tests inline beside the code (no JUnit: libtest's lines) -----------

CARGO_TOML = '[package]\nname = "clamp"\nversion = "0.1.0"\nedition = "2021"\n'
LIB_RS = """\
/// `v`, kept within `lo..=hi`.
pub fn clamp(v: i32, lo: i32, hi: i32) -> i32 {
    if v < lo {
        lo
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::clamp;

    #[test]
    fn below() {
        assert_eq!(clamp(-1, 0, 3), 0);
    }

    #[test]
    fn above() {
        assert_eq!(clamp(5, 0, 3), 3);
    }
}
"""
MOD_TESTS = LIB_RS[LIB_RS.index("#[cfg(test)]") :]
CARGO = Project(
    name="cargo",
    files={"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB_RS, ".gitignore": "target/\n"},
    test="cargo test --offline",
    junit=[],
    fix=("src/lib.rs", "    } else {\n        v\n", "    } else {\n        v.min(hi)\n"),
    tool="cargo",
    cheats={
        "#[ignore]": (
            [
                (
                    "src/lib.rs",
                    "    #[test]\n    fn above",
                    "    #[test]\n    #[ignore]\n    fn above",
                )
            ],
            [gone("src/lib.rs::tests::above")],
        ),
        "inline mod tests removed": (
            [("src/lib.rs", MOD_TESTS, "")],
            [
                gone("src/lib.rs::tests::below", "removed"),
                gone("src/lib.rs::tests::above", "removed"),
            ],
        ),
        "inline assertion removed": (
            [("src/lib.rs", "assert_eq!(clamp(5, 0, 3), 3);", "let _ = clamp(5, 0, 3);")],
            [gone("src/lib.rs", "weakened")],
        ),
    },
)


def vitest_packages(shared_root: Path) -> Path:
    """A node_modules with vitest, installed once per session (a file lock for xdist)."""
    root = shared_root / "npm-vitest"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = root / "node_modules" / ".codegen-installed"
        if not marker.exists():
            (root / "package.json").write_text('{"name": "deps", "private": true}\n')
            cache = str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".npm")
            subprocess.run(
                [
                    *("npm", "install", "--no-audit", "--no-fund", "--loglevel=error"),
                    # the cache's packages without asking the registry again
                    *("--prefer-offline", "--cache", cache, "--save-dev", *VITEST_PACKAGES),
                ],
                cwd=root,
                check=True,
                capture_output=True,
                timeout=600,
            )
            marker.write_text("ok\n")
    return root / "node_modules"
