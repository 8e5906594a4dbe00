"""Our own git calls: argument lists (never shell strings), hooks disabled, no prompts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.errors import GitError, InputError

# Our calls never run the repository's hooks or ask for credentials; fsmonitor and other
# config-driven helpers are switched off because the repository's config is not ours to trust.
SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "credential.helper=",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
)  # fmt: skip
BOT_NAME = "codegen-ci"
BOT_EMAIL = "codegen-ci@users.noreply.github.com"


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", LC_ALL="C")
    env.setdefault("GIT_AUTHOR_NAME", BOT_NAME)
    env.setdefault("GIT_AUTHOR_EMAIL", BOT_EMAIL)
    env.setdefault("GIT_COMMITTER_NAME", BOT_NAME)
    env.setdefault("GIT_COMMITTER_EMAIL", BOT_EMAIL)
    if extra:
        env.update(extra)
    return env


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
    """Run git with `args` in `cwd` and return stdout; a failure raises `GitError`."""
    cmd = ["git", *SAFE_CONFIG, *config, *args]
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=git_env(env),
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


def ok(args: Sequence[str], cwd: Path) -> bool:
    try:
        git(args, cwd)
    except GitError:
        return False
    return True


def repo_root(path: Path) -> Path:
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
    """Push `branch` to `remote`. A token is given to this one call only (an HTTP header on
    the command line), never written to `.git/config` where the agent could read it."""
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
