"""Files the build wrote into the checkout's package, given to each worktree.

A package built with hatch-vcs or setuptools-scm imports a version file its build writes at
install time (a `_version.py` in the package, git-ignored): the checkout has it, a new `git
worktree` does not, and every test module then fails to import the package (`No module named
'pkg._version'`), a failure of the environment the model must never be charged with. The file
is named in pyproject.toml (`[tool.hatch.build.hooks.vcs] version-file`, or the same hook of a
build target, `[tool.setuptools_scm] version_file` or `write_to`, pdm-backend's `[tool.pdm.version]
write_to` inside its package folder); each one named there that the checkout has and git does not
track is copied into the worktree, as the dependency folders are (workspace/dependency_links.py,
which lists the copies so they are never part of the change).

Only files a build backend's configuration names are copied: anything else a build writes
(a hatch custom hook's output, compiled extensions, `.mo` catalogues, a `setup.py` that
writes a file) is not declared anywhere that says which file it is. When the tests need one,
the pre-flight stops the run as a configuration error naming the missing module and where the
package imports it (gate/project_imports.py).

The names come from the repository: only a relative path inside the checkout, to a small
regular file (no link), copied to the same place in the worktree whose folder is already there
and inside it.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from codegen_ci.workspace import git

MAX_BYTES = 64 * 1024  # a version file is a few lines


def declared(checkout: Path) -> list[str]:
    """The version files pyproject.toml says the build writes, as relative paths."""
    try:
        config = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    hatch = _table(config, "tool", "hatch", "build")
    targets = _table(hatch, "targets").values()
    hooks = [hatch, *(t for t in targets if isinstance(t, dict))]
    named = [_table(h, "hooks", "vcs").get("version-file") for h in hooks]
    scm = _table(config, "tool", "setuptools_scm")
    named += [scm.get("version_file"), scm.get("write_to"), _pdm_version_file(config, checkout)]
    return sorted({n for n in named if isinstance(n, str) and _plain(n)})


def _pdm_version_file(config: dict[str, Any], checkout: Path) -> str | None:
    """pdm-backend's `[tool.pdm.version] write_to`: in an editable install it is written
    inside the package folder (`[tool.pdm.build] package-dir`, by default `src` when there
    is one), which is where the checkout has it."""
    version = _table(config, "tool", "pdm", "version")
    write_to = version.get("write_to")
    if version.get("source") not in ("scm", "call") or not isinstance(write_to, str):
        return None
    default = "src" if (checkout / "src").is_dir() else ""
    package_dir = _table(config, "tool", "pdm", "build").get("package-dir", default)
    if not isinstance(package_dir, str):
        return None
    return (PurePosixPath(package_dir) / write_to).as_posix() if package_dir else write_to


def _table(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`config[k1][k2]...`, or an empty table where one is missing or not a table."""
    table: Any = config
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table if isinstance(table, dict) else {}


def _plain(rel: str) -> bool:
    path = PurePosixPath(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts


def copy_generated(checkout: Path, tree: Path) -> list[str]:
    """Copy each declared version file the checkout has and git does not track into `tree`;
    the relative paths copied (or already there from an earlier run of the worktree)."""
    copied = []
    for rel in declared(checkout):
        source, target = checkout / rel, tree / rel
        if not _inside(source, checkout) or not _inside(target.parent, tree):
            continue
        if source.is_symlink() or not source.is_file() or source.stat().st_size > MAX_BYTES:
            continue
        if git.git(["ls-files", "-z", "--", rel], checkout, check=False).strip("\0"):
            continue  # tracked: the worktree has its own
        if target.exists() or target.is_symlink():
            if target.is_file() and not target.is_symlink() and not _tracked(tree, rel):
                copied.append(rel)  # ours, from before an interruption
            continue
        if not target.parent.is_dir():
            continue
        shutil.copyfile(source, target)
        copied.append(rel)
    return copied


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _tracked(tree: Path, rel: str) -> bool:
    return bool(git.git(["ls-files", "-z", "--", rel], tree, check=False).strip("\0"))
