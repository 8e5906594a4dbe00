"""What our git remembers between calls (workspace/git.py): the filter drivers a repository's
config defines (`filters_off`, asked before most git calls of a run) and where its config lives
(`common_dir`), kept while the files git reads that config from are unchanged and asked of git
again as soon as one changes; and the paths `git status --porcelain=v2` lists
(workspace/worktree.py: `status_paths`). Real git on temporary repositories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codegen_ci.workspace import git
from codegen_ci.workspace.worktree import status_paths


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _off(repo: Path) -> set[str]:
    return {key.rpartition(".")[0] for key, _ in git.filters_off(repo)}


def _config(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "config", *args], check=True)


def test_a_filter_added_after_an_answer_is_switched_off_at_the_next_call(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert _off(repo) == set()
    assert _off(repo) == set()  # kept: nothing changed
    _config(repo, "filter.evil.clean", "touch /tmp/ran")  # git writes a new file (a rename)
    assert _off(repo) == {"filter.evil"}
    # written in place, as a command could: the size changes
    config = repo / ".git" / "config"
    with config.open("a", encoding="utf-8") as out:
        out.write('[filter "other"]\n\tsmudge = cat\n')
    assert _off(repo) == {"filter.evil", "filter.other"}


def test_a_worktrees_own_config_is_seen_when_it_appears(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "one"],
        check=True,
        env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "PATH": "/usr/bin:/bin"}
        | {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"},
    )
    tree = tmp_path / "tree"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tree)], check=True)
    _config(repo, "extensions.worktreeConfig", "true")
    assert _off(tree) == set()
    assert git.common_dir(tree) == (repo / ".git").resolve()
    _config(tree, "--worktree", "filter.wt.process", "sh evil.sh")  # config.worktree, made now
    assert _off(tree) == {"filter.wt"}


def test_a_config_that_includes_another_file_is_asked_each_time(tmp_path: Path) -> None:
    """An included file can change while the repository's own config does not: no answer is
    kept for such a repository."""
    repo = _repo(tmp_path)
    included = tmp_path / "more.config"
    included.write_text("", encoding="utf-8")
    _config(repo, "include.path", str(included))
    assert _off(repo) == set()
    included.write_text('[filter "inc"]\n\tclean = sh evil.sh\n', encoding="utf-8")
    assert _off(repo) == {"filter.inc"}


def test_outside_a_root_git_is_asked_each_time(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sub = repo / "sub"
    sub.mkdir()
    assert _off(sub) == set()
    _config(repo, "filter.late.clean", "cat")
    assert _off(sub) == {"filter.late"}


@pytest.mark.parametrize(
    ("listing", "paths", "head"),
    [
        ("# branch.oid (initial)\0# branch.head main\0? new file.txt\0", ["new file.txt"], ""),
        (
            "# branch.oid abc123\0"
            "1 .M N... 100644 100644 100644 e69d e69d src/a b.py\0"
            "u UU N... 100644 100644 100644 100644 e1 e2 e3 both.txt\0"
            "2 R. N... 100644 100644 100644 e69d e69d R100 new name\0old name\0"
            "! ignored/\0",
            ["src/a b.py", "both.txt", "new name", "old name", "ignored/"],
            "abc123",
        ),
    ],
)
def test_status_v2_paths_and_head(listing: str, paths: list[str], head: str) -> None:
    assert status_paths(listing) == (paths, head)


def test_an_unchanged_repository_is_asked_once(tmp_path: Path) -> None:
    """Through `CODEGEN_GIT` (an explicit git binary): a wrapper that counts its calls."""
    repo = _repo(tmp_path)
    calls = tmp_path / "calls"
    wrapper = tmp_path / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec /usr/bin/git "$@"\n')
    wrapper.chmod(0o755)
    script = (
        "import sys; from pathlib import Path; from codegen_ci.workspace import git\n"
        "repo = Path(sys.argv[1])\n"
        "for _ in range(5): git.git(['status', '--porcelain'], repo)\n"
    )
    env = {"CODEGEN_GIT": str(wrapper), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", script, str(repo)], check=True, env=env)
    lines = calls.read_text().splitlines()
    assert sum(" status " in f" {line} " for line in lines) == 5
    assert sum("--get-regexp" in line for line in lines) == 1, lines
