"""A small real Python project with a real bug and a real pytest suite, in a git repository
with a bare `origin` (both in a temporary directory)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import yaml

from codegen_ci.testing.scripted_model import Reply, call

VERSION_PY = '''\
"""Semantic versions."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> "Version":
        major, minor, patch = (int(part) for part in text.split("."))
        return cls(major, minor, patch)

    def bump_major(self) -> "Version":
        return Version(self.major + 1, 0, 0)

    def bump_minor(self) -> "Version":
        return Version(self.major, self.minor + 1, self.patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"
'''

TEST_VERSION_PY = """\
from semver.version import Version


def test_parse():
    assert Version.parse("3.4.5") == Version(3, 4, 5)


def test_bump_major():
    assert str(Version.parse("3.4.5").bump_major()) == "4.0.0"


def test_bump_minor_resets_patch():
    assert str(Version.parse("3.4.5").bump_minor()) == "3.5.0"
"""

FIXED_LINE_OLD = "return Version(self.major, self.minor + 1, self.patch)"
FIXED_LINE_NEW = "return Version(self.major, self.minor + 1, 0)"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
VERSION_FILE = "src/semver/version.py"
# No proof run and no coverage run after a passing round (tests/e2e/gate/test_proof_*.py and
# test_coverage_runners.py are about those): for a test that is not, they are two more pytest
# runs per passing run. No re-run of a failing round's failing tests either (the flaky check:
# tests/e2e/gate/test_validation_gate.py's flaky tests and the proof tests name `proof` and
# keep it): one more test process per failing round.
NO_PROOF = {"tests": "off", "reruns": 0}
# The scripted model's correct edit, and a whole turn that reads, fixes and finishes.
FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)
# For a run whose subject is not what the gate finds (branches, budgets, tools, the context):
# a check of the fixed line, whose exit code alone decides; no test suite starts (two pytest
# starts a passing run fewer: the pre-flight's and the round's).
QUICK_GATE = {"test": [f"grep -q '{FIXED_LINE_NEW[-12:]}' {VERSION_FILE}"], "allow_no_tests": True}


def fixing_script() -> list[Reply]:
    return [
        Reply(tool_calls=[call("read_file", path=VERSION_FILE)]),
        Reply(tool_calls=[FIX]),
        Reply("Fixed bump_minor to reset the patch number."),
    ]


def sh(args: list[str], cwd: Path) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


@dataclass
class SampleRepo:
    path: Path
    origin: Path
    tmp: Path
    # `write_spec`'s default validation runs the proof (the product's default policy)
    proof: bool = False

    def git(self, *args: str) -> str:
        return sh(["git", *args], self.path)

    def commit(self, files: dict[str, str], message: str = "more") -> str:
        """Write `files` and commit them on the current branch; returns the commit id."""
        for rel, text in files.items():
            path = self.path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def write_spec(self, name: str = "spec.yaml", **overrides: object) -> Path:
        """The sample's spec with `overrides`. Its validation runs no proof (nor the coverage
        run after it), whatever `validation` a test gives, unless that names `proof` or the
        repository's `proof` is set (the product's default policy then): they are two more
        pytest runs after each passing round, which only the proof and coverage tests are
        about."""
        spec: dict[str, object] = {
            "version": 1,
            "title": "Reset patch in bump_minor",
            "task": "Version.bump_minor() must reset the patch number to 0 (3.4.5 -> 3.5.0).",
            "context": ["src/semver/version.py"],
            "validation": {"test": [PYTEST], "timeout": 120},
            "limits": {"max_iterations": 3},
        }
        spec.update(overrides)
        validation = spec["validation"]
        if not self.proof and isinstance(validation, dict) and "proof" not in validation:
            spec["validation"] = {**validation, "proof": NO_PROOF}
        path = self.tmp / name
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path


def make_sample_repo(tmp: Path) -> SampleRepo:
    repo = tmp / "repo"
    (repo / "src" / "semver").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "semver" / "__init__.py").write_text("")
    (repo / "src" / "semver" / "version.py").write_text(VERSION_PY)
    (repo / "tests" / "test_version.py").write_text(TEST_VERSION_PY)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    (repo / "README.md").write_text(textwrap.dedent("# semver\n"))
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "initial"], repo)
    origin = tmp / "origin.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(origin)], tmp)
    sh(["git", "remote", "add", "origin", str(origin)], repo)
    sh(["git", "push", "-q", "origin", "main"], repo)
    return SampleRepo(repo, origin, tmp)


def copy_sample_repo(template: SampleRepo, tmp: Path) -> SampleRepo:
    """`template` (a `make_sample_repo`, made once) copied into `tmp` with `cp -a`: the same
    commits, an origin of its own, the index refreshed as after a commit here."""
    subprocess.run(["cp", "-a", str(template.path), str(template.origin), str(tmp)], check=True)
    repo, origin = tmp / template.path.name, tmp / template.origin.name
    config = repo / ".git" / "config"
    config.write_text(config.read_text().replace(str(template.origin), str(origin)))
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=repo, capture_output=True)
    return SampleRepo(repo, origin, tmp)
