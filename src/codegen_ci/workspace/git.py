"""Our own git calls: argument lists (never shell strings), hooks disabled, no prompts; the
binary, config and environment they run with are workspace/git_env.py's."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from codegen_ci.errors import GitError, InputError
from codegen_ci.security import guarded_read
from codegen_ci.workspace.git_env import (
    SAFE_CONFIG,
    config_pairs,
    git_binary,
    git_env,
    pairs_env,
    trust_directory,
)


def git(
    args: Sequence[str],
    cwd: Path,
    *,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    config: Sequence[str] = (),
    input_bytes: bytes | None = None,
    timeout: float = 600,
) -> str:
    """Run git with `args` in `cwd` and return stdout; a failure raises `GitError`.
    `config` (`-c key=value` pairs) reaches git through its environment, not its argv.
    No filter driver runs: each one the config defines is blanked for this call."""
    cmd = [git_binary(), *SAFE_CONFIG, *args]
    pairs = config_pairs(config)
    if not args or args[0] not in NO_CONTENT:
        pairs = [*filters_off(cwd, env), *pairs]
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=git_env({**(env or {}), **pairs_env(pairs)}),
            input=input_bytes,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out after {timeout:g}s") from None
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if check and proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", errors="replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {stderr[-2000:]}")
    return proc.stdout.decode("utf-8", errors="replace")


def filters_off(cwd: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Config that switches off every filter driver git would find in `cwd`'s config (the
    repository's, its worktree's, what they include): clean, smudge and process emptied (git
    then runs none) and none required. A filter runs whatever command it names, on content
    the model wrote, wherever `.gitattributes` (the model's, in the worktree) points it."""
    cmd = [git_binary(), *SAFE_CONFIG, "config", "-z", "--name-only", "--get-regexp",
           r"^filter\."]  # fmt: skip
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=git_env(env), capture_output=True, timeout=60,
                              check=False)  # fmt: skip
    except (subprocess.TimeoutExpired, FileNotFoundError, NotADirectoryError):
        return []
    names = {key.decode("utf-8", "surrogateescape").rpartition(".")[0]
             for key in proc.stdout.split(b"\0") if key.count(b".") >= 2}  # fmt: skip
    return [(f"{name}.{key}", value) for name in sorted(names)
            for key, value in FILTER_OFF]  # fmt: skip


FILTER_OFF = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
# Commands that never read or write a worktree file's content (where filters run), so need no
# `filters_off` (one `git config` call less). Anything else gets it: status and `rm --cached`
# hash files, `worktree add`, checkout and reset write them.
NO_CONTENT = frozenset({
    "rev-parse", "update-ref", "for-each-ref", "show-ref", "symbolic-ref", "config", "fetch",
    "push", "ls-remote", "branch", "check-ref-format", "cat-file", "ls-tree", "ls-files",
    "remote", "log", "rev-list", "merge-base", "commit-tree", "write-tree", "--version",
})  # fmt: skip


def ok(args: Sequence[str], cwd: Path) -> bool:
    try:
        git(args, cwd)
    except GitError:
        return False
    return True


def repo_root(path: Path) -> Path:
    """The top of the repository `path` is in; that directory (the one the user named, or
    the first above it holding `.git`) is one our git accepts even if another uid owns it."""
    for folder in (path.absolute(), *path.absolute().parents):
        if (folder / ".git").exists():
            trust_directory(folder)
            break
    try:
        out = git(["rev-parse", "--show-toplevel"], path)
    except GitError:
        raise InputError(f"{path} is not inside a git repository") from None
    return Path(out.strip())


def common_dir(repo: Path) -> Path:
    out = git(["rev-parse", "--git-common-dir"], repo).strip()
    path = Path(out)
    return path if path.is_absolute() else (repo / path).resolve()


def rev_parse(repo: Path, rev: str) -> str:
    try:
        return git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"], repo).strip()
    except GitError:
        raise InputError(f"git base '{rev}' is not a commit in {repo}") from None


def check_branch_name(repo: Path, name: str) -> str:
    """A branch name we can pass to git safely: valid ref, never an option."""
    if not name or name.startswith("-") or not ok(["check-ref-format", "--branch", name], repo):
        raise InputError(f"invalid branch name: {name!r}")
    return name


def branch_exists(repo: Path, name: str) -> bool:
    return ok(["show-ref", "--verify", "--quiet", f"refs/heads/{name}"], repo)


def push(
    repo: Path,
    branch: str,
    *,
    token: str | None = None,
    force_with_lease: bool = True,
    remote: str = "origin",
) -> None:
    """Push `branch` to `remote`. A token is given to this one call only (an HTTP header in
    the git process's environment), never written to `.git/config` nor put on a command line."""
    import base64

    config: list[str] = []
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        config = ["-c", f"http.extraheader=AUTHORIZATION: basic {basic}"]
    args = ["push", "--porcelain"]
    if force_with_lease:
        args.append("--force-with-lease")
    args += ["--", remote, f"refs/heads/{branch}:refs/heads/{branch}"]
    git(args, repo, config=config)


class Entry(NamedTuple):
    link: str | None  # symlink target, if the path is a symlink
    content: bytes | None  # a regular file's content (a link's: its target's); None: missing
    exact: bool = True  # False: `content` describes what is there (a FIFO, a huge file)


GitState = dict[Path, Entry]


MAX_GUARDED_BYTES = 4 << 20  # a config, hook or `.git` file; larger is recorded by size


def _entry(path: Path) -> Entry:
    """What `path` is now, read without blocking or reading without bound (a command may
    have swapped in a link, a FIFO or a huge sparse file): a link's target (and the bytes of
    the regular file it names), a regular file's bytes, or a description of anything else."""
    try:
        info = path.lstat()
    except OSError:
        return Entry(None, None)
    if stat.S_ISLNK(info.st_mode):  # a dotfiles link (`~/.gitconfig`): its target counts too
        return Entry(str(path.readlink()), _target_bytes(path))
    if not stat.S_ISREG(info.st_mode):
        return Entry(None, f"not a regular file ({stat.filemode(info.st_mode)})".encode(), False)
    try:
        return Entry(None, guarded_read.read_bytes(path.parent, path.name,
                                                   max_bytes=MAX_GUARDED_BYTES))  # fmt: skip
    except guarded_read.Refused as exc:
        what = f"unread: {exc.reason}; {info.st_size} bytes, {info.st_mtime_ns}"
        return Entry(None, what.encode(), False)


def _target_bytes(link: Path) -> bytes | None:
    """The bytes of the regular file a link points to, opened without blocking (a FIFO there)
    and read only up to the cap; None for anything else."""
    try:
        fd = os.open(link, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GUARDED_BYTES:
            return None
        return os.read(fd, MAX_GUARDED_BYTES + 1)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class GitGuard:
    """The files through which a command could make git run code or work elsewhere: the
    repository's config and hooks, the linked worktree's `.git` file and `config.worktree`, and
    the user's global config. The paths are fixed when the guard is made (a tampered `.git` file
    must not move them); `state` also lists every entry that is in the hooks directory now."""

    files: tuple[Path, ...]
    hooks: Path

    @classmethod
    def for_worktree(cls, worktree: Path) -> GitGuard:
        common = common_dir(worktree)
        private = Path(git(["rev-parse", "--absolute-git-dir"], worktree).strip())
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        files = (
            worktree / ".git", common / "config", common / "info" / "attributes",
            private / "config.worktree", Path.home() / ".gitconfig", xdg / "git" / "config",
        )  # fmt: skip
        return cls(files, common / "hooks")

    def state(self) -> GitState:
        hooks = sorted(self.hooks.iterdir()) if self.hooks.is_dir() else []
        return {path: _entry(path) for path in (*self.files, *hooks)}

    def restore(self, trusted: GitState) -> list[Path]:
        """Put every guarded entry back as in `trusted` (new ones removed); returns what changed."""
        now = self.state()
        missing = Entry(None, None)
        changed = []
        for path in sorted({*trusted, *now}):
            want, have = trusted.get(path, missing), now.get(path, missing)
            if want == have:
                continue
            changed.append(path)
            if not want.exact:
                continue  # reported, but there is nothing exact to put back
            # a link, folder, FIFO or device where a file was: removed first, never written through
            if want.link != have.link or want.content is None or not have.exact:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                if want.link is not None:
                    path.symlink_to(want.link)
            if want.content is not None:
                path.write_bytes(want.content)  # through a restored symlink: the user's file
        return changed
