"""Tasks from a repository's own history.

Among the last N first-parent commits of HEAD, every commit that changed both source files and
test files is a task: its base is the commit's parent with the commit's test changes applied
(a commit object made here, reachable from no ref), its text the commit message, and its
known-good solution the commit itself. Paths are compared with `--no-renames`, so a moved test
is a deletion plus an addition and both land on the base.

A path is a test when a directory on its way is a test directory (`tests/`, `__tests__/`, ...)
or its name is a test file's (`test_x.py`, `x_test.go`, `x.test.ts`, `XTest.java`, ...); it is
source when it is not a test and its extension is a programming language's. Docs, changelogs,
workflow and packaging files are neither: they never make a commit a task, and they stay as
they were on the parent (they are part of the historical change, not of the task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from codegen_ci.errors import InputError
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.workspace import git
from codegen_ci.workspace.file_kinds import is_source_file, is_test_file

BASE_AUTHOR = {
    "GIT_AUTHOR_NAME": "codegen-ci eval",
    "GIT_AUTHOR_EMAIL": "eval@codegen-ci.invalid",
    "GIT_COMMITTER_NAME": "codegen-ci eval",
    "GIT_COMMITTER_EMAIL": "eval@codegen-ci.invalid",
}


@dataclass(frozen=True)
class Change:
    status: str  # A, M, D, T (git's letters; no renames)
    path: str


@dataclass
class Task:
    commit: str
    parent: str
    subject: Untrusted  # the commit's words: whoever wrote the commit, data
    message: Untrusted
    committed_at: str  # ISO 8601, the committer date
    source_files: list[str]
    test_files: list[str]
    base: str = ""  # parent + the commit's test changes; made by `make_base`
    text: str = ""  # what the model is told: the message, and a PR's or issue's text if known
    notes: list[str] = field(default_factory=list)  # GitHub lookups that failed

    @property
    def short(self) -> str:
        return self.commit[:12]


def first_parent_commits(root: Path, count: int) -> list[str]:
    """The last `count` first-parent commits of HEAD, oldest first."""
    if not git.ok(["rev-parse", "--verify", "-q", "HEAD^{commit}"], root):
        raise InputError(f"{root} has no commits: nothing to take tasks from")
    out = git.git(["rev-list", "--first-parent", f"--max-count={count}", "HEAD"], root)
    return list(reversed(out.split()))


def changes(root: Path, parent: str, commit: str) -> list[Change]:
    out = git.git(
        [
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--no-commit-id",
            "--name-status",
            parent,
            commit,
        ],
        root,
    )
    fields = out.split("\0")
    return [Change(s[0], p) for s, p in zip(fields[::2], fields[1::2], strict=False) if s and p]


def find_tasks(root: Path, count: int) -> tuple[list[Task], int]:
    """Tasks among the last `count` first-parent commits, oldest first; also how many commits
    were looked at (fewer than `count` in a short history). A root commit is no task (it has no
    parent to start from)."""
    commits = first_parent_commits(root, count)
    tasks = []
    for commit in commits:
        parents = git.git(["rev-list", "--parents", "-n", "1", commit], root).split()[1:]
        if not parents:
            continue
        found = changes(root, parents[0], commit)
        sources = [c.path for c in found if is_source_file(c.path)]
        tests = [c.path for c in found if is_test_file(c.path)]
        if not sources or not tests:
            continue
        meta = git.git(["log", "-1", "--format=%cI%x00%s%x00%B", commit], root)
        committed_at, subject, message = meta.split("\0", 2)
        tasks.append(
            Task(
                commit,
                parents[0],
                Untrusted(subject.strip()),
                Untrusted(message.strip()),
                committed_at,
                sources,
                tests,
            )
        )
    return tasks, len(commits)


def make_base(root: Path, task: Task, scratch: Path) -> str:
    """The task's base commit: the parent's tree with the commit's test changes (added,
    changed and deleted test files) applied, as a commit on the parent. Only objects are
    written (no ref, no index, no working tree of the user's), and the same task always gives
    the same commit id (fixed author, dates from the commit)."""
    index = scratch / f"index-{task.commit}"
    env = {
        "GIT_INDEX_FILE": str(index),
        **BASE_AUTHOR,
        "GIT_AUTHOR_DATE": task.committed_at,
        "GIT_COMMITTER_DATE": task.committed_at,
    }
    try:
        git.git(["read-tree", task.parent], root, env=env)
        test_set = set(task.test_files)
        for change in changes(root, task.parent, task.commit):
            if change.path not in test_set:
                continue
            if change.status == "D":
                git.git(["update-index", "--force-remove", "--", change.path], root, env=env)
                continue
            entry = git.git(["ls-tree", "-z", task.commit, "--", change.path], root)
            mode, _kind, rest = entry.split(" ", 2)
            blob = rest.split("\t", 1)[0]
            git.git(
                ["update-index", "--add", "--cacheinfo", f"{mode},{blob},{change.path}"],
                root,
                env=env,
            )
        tree = git.git(["write-tree"], root, env=env).strip()
    finally:
        index.unlink(missing_ok=True)
    message = f"codegen-ci eval: base of {task.commit}\n\nIts parent with its test changes.\n"
    base = git.git(
        ["commit-tree", tree, "-p", task.parent], root, env=env, input_bytes=message.encode()
    ).strip()
    task.base = base
    return base


def test_modules(paths: list[str]) -> list[str]:
    """Dotted module names of Python test files (`tests/test_x.py` -> `tests.test_x`), which
    is how pytest's JUnit names the cases of a file (`tests.test_x::test_y`)."""
    return [p[: -len(".py")].replace("/", ".") for p in paths if p.endswith(".py")]
