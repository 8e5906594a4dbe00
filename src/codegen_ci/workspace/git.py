"""Our own git calls: argument lists (never shell strings), hooks disabled, no prompts; which
binary, with which config, and in which environment.

The git binary is resolved once, by absolute path, from the system's own directories first
(a `git` planted in a PATH directory later never runs). System and global config are ignored
(`GIT_CONFIG_NOSYSTEM`, and a global config of our own that only names, in `safe.directory`,
the exact directories git must accept: the user's repository and our own worktrees), so are
system and global attributes and replace refs, and nested repositories are never entered.
Pathspecs are literal (`GIT_LITERAL_PATHSPECS`): a file named `:(glob)**` or `*` is that file.
Per-call config (the push token's header above all) travels in the git process's environment
(`GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`), never on its command line.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from codegen_ci.errors import GitError, InputError
from codegen_ci.security.safe_env import is_hard_denied, is_secret_name

# Our calls never run the repository's hooks or ask for credentials; fsmonitor and other
# config-driven helpers are switched off because the repository's config is not ours to trust.
# The `ext::` transport runs an arbitrary command; no remote of ours ever needs it. Filter
# drivers never run either: `git` blanks every `filter.<name>` the config defines, since the
# worktree's `.gitattributes` (the model's) chooses which file goes through which driver.
SAFE_CONFIG = (
    "--literal-pathspecs",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "credential.helper=",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "protocol.ext.allow=never",
    "-c", "submodule.recurse=false",
    "-c", "diff.ignoreSubmodules=all",
    "-c", "status.submoduleSummary=false",
    "-c", "push.recurseSubmodules=no",
    "-c", "fetch.recurseSubmodules=false",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.untrackedCache=false",
)  # fmt: skip # reason: one `-c key=value` pair a line
GIT_ENV = "CODEGEN_GIT"  # an explicit git binary; default: the system's, resolved at start-up
SYSTEM_GIT = ("/usr/bin/git", "/bin/git")
BOT_NAME = "codegen-ci"
BOT_EMAIL = "codegen-ci@users.noreply.github.com"


@functools.cache
def git_binary() -> str:
    """The git we run, by absolute path; resolved once (the CLI does it at start-up)."""
    found = (
        os.environ.get(GIT_ENV)
        or next((p for p in SYSTEM_GIT if os.access(p, os.X_OK)), None)
        or shutil.which("git")
    )
    if not found:
        raise GitError("git is not installed")
    return str(Path(found).absolute())


_TRUSTED: set[str] = set()
_TRUST_LOCK = threading.Lock()


@functools.cache
def _global_config() -> str:
    """Our own global config: only `safe.directory`, naming each directory `trust_directory`
    was given; the user's and the system's config never reach our git."""
    folder = Path(tempfile.mkdtemp(prefix="codegen-git-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "config"
    path.write_text("", encoding="utf-8")
    return str(path)


def trust_directory(path: Path) -> None:
    """Let our git work in `path` (exactly that directory) even when another uid owns it: the
    repository the user named (a checkout mounted into a container belongs to another uid) and
    the worktrees we make (user mode hands them to the sandbox user). Never a blanket `*`: a
    repository someone else planted elsewhere stays refused by git."""
    entry = str(path.absolute())
    if "\n" in entry:
        return  # not expressible in a config file; git keeps its own ownership check
    with _TRUST_LOCK:
        if entry in _TRUSTED:
            return
        _TRUSTED.add(entry)
        lines = "".join(f"\tdirectory = {_quoted(d)}\n" for d in sorted(_TRUSTED))
        target = Path(_global_config())
        fresh = target.with_name("config.new")
        fresh.write_text(f"[safe]\n{lines}", encoding="utf-8")
        fresh.replace(target)  # concurrent git calls read the old or the new file, whole


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # Git needs none of our secrets (a push gets its token in its own environment only), and
    # the confined commands cannot see other processes' environments.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_")
        and not is_hard_denied(k)
        and (k == "SSH_AUTH_SOCK" or not is_secret_name(k))
    }
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        LC_ALL="C",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=_global_config(),
        GIT_ATTR_NOSYSTEM="1",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_LITERAL_PATHSPECS="1",
    )
    env.setdefault("GIT_AUTHOR_NAME", BOT_NAME)
    env.setdefault("GIT_AUTHOR_EMAIL", BOT_EMAIL)
    env.setdefault("GIT_COMMITTER_NAME", BOT_NAME)
    env.setdefault("GIT_COMMITTER_EMAIL", BOT_EMAIL)
    if extra:
        env.update(extra)
    return env


def config_pairs(config: Sequence[str]) -> list[tuple[str, str]]:
    """`["-c", "k=v", ...]` as (key, value) pairs."""
    return [
        (key, value)
        for key, _, value in (
            item.partition("=")
            for flag, item in zip(config[::2], config[1::2], strict=True)
            if flag == "-c"
        )
    ]


def pairs_env(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """(key, value) pairs as GIT_CONFIG_COUNT/KEY/VALUE variables: a key may hold any
    character (a filter's name from the config), no parsing on git's side."""
    if not pairs:
        return {}
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
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
    return [
        (f"{name}.{key}", value) for name in _filter_names(cwd, env) for key, value in FILTER_OFF
    ]


# What `_filter_names` last found in a repository's or worktree's root, and the state of the
# files it came from. A run asks before most of its git calls (a third of them, before); the
# answer is taken again from git whenever a file git reads config from there has changed
# (written in place or replaced: size, times, inode), and never kept where the config includes
# other files, which could change unseen. Our global config names no filter; the system's and
# the environment's git config never reach our git (`git_env`).
_FILTER_NAMES: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[object, tuple[str, ...]]] = {}
_GIT_DIRS: dict[str, tuple[object, Path, Path]] = {}


def _filter_names(cwd: Path, env: Mapping[str, str] | None) -> tuple[str, ...]:
    key = (str(cwd), tuple(sorted((env or {}).items())))
    files = _config_files(cwd, env)
    state = file_state(files) if files else None
    if state is not None and (seen := _FILTER_NAMES.get(key)) and seen[0] == state:
        return seen[1]
    cmd = [
        git_binary(), *SAFE_CONFIG,
        "config", "-z", "--name-only", "--get-regexp", r"^(filter|include|includeif)\.",
    ]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=git_env(env), capture_output=True, timeout=60, check=False
        )
    except (subprocess.TimeoutExpired, FileNotFoundError, NotADirectoryError):
        return ()
    keys = [k.decode("utf-8", "surrogateescape") for k in proc.stdout.split(b"\0") if k]
    names = tuple(
        sorted(
            {k.rpartition(".")[0] for k in keys if k.startswith("filter.") and k.count(".") >= 2}
        )
    )
    if state is not None and not any(k.startswith(("include.", "includeif.")) for k in keys):
        _FILTER_NAMES[key] = (state, names)  # the state read before git was asked
    return names


def _config_files(cwd: Path, env: Mapping[str, str] | None) -> tuple[Path, ...]:
    """The files git reads `cwd`'s own config from, when `cwd` is a repository's or a
    worktree's root (its `.git` there: the entry itself, the common config, the worktree's
    config); () elsewhere, and when git could not say."""
    dot_git = cwd / ".git"
    entry = file_state((dot_git,))
    if entry == (None,):
        return ()
    known = _GIT_DIRS.get(str(cwd))
    if known is None or known[0] != entry:
        try:
            out = git(
                ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
                cwd,
                env=env,
            ).split("\n")
        except GitError:
            return ()
        if len(out) < 2 or not out[0] or not out[1]:
            return ()
        known = (entry, Path(out[0]), Path(out[1]))
        _GIT_DIRS[str(cwd)] = known
    _, git_dir, common = known
    return (dot_git, common / "config", git_dir / "config.worktree")


def file_state(files: Sequence[Path]) -> tuple[object, ...]:
    """Each file's inode, size and times (None for a file that is not there; a folder's inode
    only)."""
    out: list[object] = []
    for path in files:
        try:
            st = os.lstat(path)
        except OSError:
            out.append(None)
            continue
        if stat.S_ISDIR(st.st_mode):  # a repository's `.git`: its times change with its index
            out.append((st.st_dev, st.st_ino))
            continue
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


FILTER_OFF = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
# Commands that never read or write a worktree file's content (where filters run), so need no
# `filters_off` (one `git config` call less). Anything else gets it: status and `rm --cached`
# hash files, `worktree add`, checkout and reset write them.
NO_CONTENT = frozenset(
    {
        "rev-parse",
        "update-ref",
        "for-each-ref",
        "show-ref",
        "symbolic-ref",
        "config",
        "fetch",
        "push",
        "ls-remote",
        "branch",
        "check-ref-format",
        "cat-file",
        "ls-tree",
        "ls-files",
        "remote",
        "log",
        "rev-list",
        "merge-base",
        "commit-tree",
        "write-tree",
        "--version",
    }
)


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
    if files := _config_files(repo, None):
        return files[1].parent  # asked once per repository or worktree root
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
