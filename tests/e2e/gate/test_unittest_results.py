"""A unittest suite's rounds have per-test results: `python -m unittest ...` runs through
codegen-ci's unittest runner (the same tests, unittest's own discovery), which writes JUnit,
also in an interpreter without pytest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

PYTHON = "/usr/bin/python3"  # the system's: no pytest installed in it
UNITTEST = f"{PYTHON} -m unittest discover -s tests -t ."
VERSION_PY = """\
def bump_minor(version):
    major, minor, patch = version
    return (major, minor + 1, patch)
"""
TEST_PY = """\
import unittest

from semver.version import bump_minor


class BumpTest(unittest.TestCase):
    def test_minor(self):
        self.assertEqual(bump_minor((3, 4, 5))[:2], (3, 5))

    def test_minor_resets_patch(self):
        self.assertEqual(bump_minor((3, 4, 5)), (3, 5, 0))

    @unittest.skip("not yet")
    def test_later(self):
        pass
"""
FAILING_ID = "tests.test_version.BumpTest::test_minor_resets_patch"


def make_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    files = {
        "semver/__init__.py": "",
        "semver/version.py": VERSION_PY,
        "tests/__init__.py": "",
        "tests/test_version.py": TEST_PY,
        ".gitignore": "__pycache__/\n",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    return repo


def edit(old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[call("edit_file", path="semver/version.py", old_text=old, new_text=new)]
    )


def test_unittest_rounds_have_totals_and_failing_test_ids(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    assert subprocess.run([PYTHON, "-c", "import pytest"], capture_output=True).returncode != 0
    repo = make_repo(tmp_path)
    model_env.add(
        edit("(major, minor + 1, patch)", "(major, minor + 1, patch)  # looked"),
        Reply("done"),
        edit("(major, minor + 1, patch)  # looked", "(major, minor + 1, 0)"),
        Reply("done"),
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "task": "bump_minor must reset the patch number.",
                "validation": {"test": [UNITTEST], "timeout": 120},
                "limits": {"max_iterations": 2},
            }
        )
    )
    out = tmp_path / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    assert (result.exit_code, report["status"]) == (0, "success"), result.output
    assert report["junit_missing"] == []
    first, second = report["rounds"]
    assert first["tests"] == {"total": 3, "passed": 1, "failed": 1, "errors": 0, "skipped": 1}
    [failure] = [f for f in first["failures"]]
    assert failure["id"] == FAILING_ID
    assert failure["new"] is False  # it fails on the base commit too: the same id there
    assert failure["file"] == "tests/test_version.py" and failure["line"] == 11
    assert second["tests"] == {"total": 3, "passed": 2, "failed": 0, "errors": 0, "skipped": 1}
    assert "AssertionError" in (out / "logs" / "round-1-01-test.log").read_text()
    # the failing test's re-runs (flaky? with the change, on the base commit) run it alone
    reruns = [out / "reruns" / "logs" / "round-1-rerun-01.log", *out.glob("proof/logs/*rerun*")]
    assert len(reruns) == 2
    for log in reruns:
        assert "Ran 1 test in" in log.read_text(), log


SUBTEST_PY = """\
import unittest

from semver.version import bump_minor


class BumpTest(unittest.TestCase):
    def test_minor_resets_patch(self):
        for patch in (0, 5, 7):
            with self.subTest(patch=patch):
                self.assertEqual(bump_minor((3, 4, patch)), (3, 5, 0))
"""


def test_failing_subtests_fixed_keep_their_test(
    tmp_path: Path, model_env: ScriptedModelServer
) -> None:
    """A unittest test whose subtests fail is one failed test (unittest's "Ran 1 test",
    pytest's id `pkg.mod.Class::test_x`), its failed subtests the details of its failure; after
    the fix the same test passes, kept, not one removed (more-itertools' `subTest` suites were
    refused so, and counted each failed subtest as a test)."""
    repo = make_repo(tmp_path)
    (repo / "tests" / "test_version.py").write_text(SUBTEST_PY)
    subprocess.run(["git", "commit", "-qam", "subtests"], cwd=repo, check=True)
    model_env.add(edit("(major, minor + 1, patch)", "(major, minor + 1, 0)"), Reply("done"))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "task": "bump_minor must reset the patch number.",
                # the proof, without its re-run on the base (re-runs: the test above)
                "validation": {
                    "test": [UNITTEST],
                    "timeout": 120,
                    "proof": {"tests": "preferred", "reruns": 0},
                },
                "limits": {"max_iterations": 1},
            }
        )
    )
    out = tmp_path / "out"

    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo), "--output-dir", str(out)]
    )

    report = json.loads((out / "report.json").read_text())
    assert (result.exit_code, report["status"]) == (0, "success"), result.output
    [failure] = report["preflight"]["failures"]
    assert failure["id"] == "tests.test_version.BumpTest::test_minor_resets_patch"
    assert report["preflight"]["tests"]["total"] == report["preflight"]["tests"]["failed"] == 1
    assert "(patch=5)" in failure["message"] and "1 more failed" in failure["message"]
    assert report["rounds"][-1]["tests"]["passed"] == 1
    # the base commit's failing subtest proves its test
    assert report["proof"]["status"] == "proven"
    assert [t["id"] for t in report["proof"]["fail_to_pass"]] == [
        "tests.test_version.BumpTest::test_minor_resets_patch"
    ]
