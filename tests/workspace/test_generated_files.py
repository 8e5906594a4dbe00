"""A build's version file (hatch-vcs, setuptools-scm), git-ignored in the checkout, is given to
each worktree; names from the repository never reach outside it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codegen_ci.workspace.dependency_links import is_linked
from codegen_ci.workspace.generated_files import declared
from codegen_ci.workspace.worktree import attach_worktree

HATCH = """\
[build-system]
requires = ["hatchling", "hatch-vcs"]
build-backend = "hatchling.build"

[tool.hatch.build.hooks.vcs]
version-file = "src/pkg/_version.py"
"""


def sh(args: list[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def checkout(tmp_path: Path, pyproject: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(pyproject)
    (repo / "src" / "pkg" / "__init__.py").write_text("from ._version import __version__\n")
    (repo / ".gitignore").write_text("src/pkg/_version.py\n")
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], repo)
    (repo / "src" / "pkg" / "_version.py").write_text("__version__ = '1.2.3'\n")  # the build's
    return repo


def test_the_builds_version_file_is_in_the_worktree_and_never_the_change(tmp_path: Path) -> None:
    repo = checkout(tmp_path, HATCH)
    private = tmp_path / "trees"
    private.mkdir(mode=0o700)

    tree, links = attach_worktree(repo, private / "t", commit="HEAD")

    assert (tree / "src/pkg/_version.py").read_text() == "__version__ = '1.2.3'\n"
    assert is_linked("src/pkg/_version.py", links)  # one of ours: left out of the change


def test_setuptools_scm_names_it_too_and_no_name_reaches_outside(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("SECRET")
    scm = (
        '[tool.setuptools_scm]\nversion_file = "src/pkg/_version.py"\nwrite_to = "../secret.txt"\n'
    )
    assert declared(checkout(tmp_path, scm)) == ["src/pkg/_version.py"]
    hostile = '[tool.hatch.build.hooks.vcs]\nversion-file = "/etc/passwd"\n'
    (tmp_path / "other").mkdir()
    assert declared(checkout(tmp_path / "other", hostile)) == []


def test_a_link_named_as_the_version_file_is_not_followed(tmp_path: Path) -> None:
    repo = checkout(tmp_path, HATCH)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    (repo / "src/pkg/_version.py").unlink()
    (repo / "src/pkg/_version.py").symlink_to(secret)
    private = tmp_path / "trees"
    private.mkdir(mode=0o700)

    tree, _ = attach_worktree(repo, private / "t", commit="HEAD")

    assert not (tree / "src/pkg/_version.py").exists()


def test_a_build_targets_hook_and_pdm_backends_write_to_name_it_too(tmp_path: Path) -> None:
    target = '[tool.hatch.build.targets.wheel.hooks.vcs]\nversion-file = "src/pkg/_version.py"\n'
    assert declared(checkout(tmp_path / "hatch", target)) == ["src/pkg/_version.py"]
    pdm = '[tool.pdm.version]\nsource = "scm"\nwrite_to = "pkg/_version.py"\n'
    # written inside the package folder (`src`, there is one): where the checkout has it
    assert declared(checkout(tmp_path / "pdm", pdm)) == ["src/pkg/_version.py"]
    flat = pdm + '\n[tool.pdm.build]\npackage-dir = "."\n'
    assert declared(checkout(tmp_path / "flat", flat)) == ["pkg/_version.py"]
