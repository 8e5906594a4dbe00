"""Talking to `origin` with the token given per command, never stored in `.git/config`.

actions/checkout (unless `persist-credentials: false`) leaves the token in `.git/config` as
`http.<url>.extraheader`, where the agent's shell and the repository's own test commands could
read it. `strip_checkout_credentials` removes it before anything runs; every fetch and push
below carries the token on its own command line instead (as `git.push` does).
"""

from __future__ import annotations

import base64
from pathlib import Path

from codegen_ci.errors import GitError
from codegen_ci.security.redact import REDACTOR
from codegen_ci.workspace import git

_EXTRAHEADER = r"^http\..*\.extraheader$"
_INCLUDES = r"^include(if\..*)?\.path$"


def strip_checkout_credentials(root: Path) -> list[str]:
    """Remove credential headers (and config includes carrying them) from the local config;
    returns the names of the entries removed."""
    removed: list[str] = []
    for line in _config_lines(root, _EXTRAHEADER):
        _register_header(line.partition(" ")[2])
    for name in _config_names(root, _EXTRAHEADER):
        git.git(["config", "--local", "--unset-all", name], root, check=False)
        removed.append(name)
    # Newer checkouts keep the header in a separate file pulled in by `includeIf`.
    for line in _config_lines(root, _INCLUDES):
        name, _, value = line.partition(" ")
        target = Path(value) if Path(value).is_absolute() else git.common_dir(root) / value
        try:
            holds_header = "extraheader" in target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if holds_header:
            git.git(["config", "--local", "--unset-all", name], root, check=False)
            removed.append(name)
    return removed


def _register_header(value: str) -> None:
    """Mask the header and the token inside it, whatever token the job was given."""
    REDACTOR.add_secret(value)
    scheme, _, credential = value.partition(":")[2].strip().partition(" ")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credential, validate=True).decode("utf-8", "replace")
        except ValueError:
            return
        REDACTOR.add_secret(decoded.partition(":")[2])
    elif credential:
        REDACTOR.add_secret(credential)


def _config_lines(root: Path, pattern: str) -> list[str]:
    out = git.git(["config", "--local", "--get-regexp", pattern], root, check=False)
    return [line for line in out.splitlines() if line.strip()]


def _config_names(root: Path, pattern: str) -> list[str]:
    return list(dict.fromkeys(line.split(" ", 1)[0] for line in _config_lines(root, pattern)))


def auth_config(token: str | None) -> list[str]:
    """`-c http.extraheader=...` for one git command (what `git.push(token=...)` sends)."""
    if not token:
        return []
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return ["-c", f"http.extraheader=AUTHORIZATION: basic {basic}"]


def fetch_branch(root: Path, branch: str, token: str | None) -> str | None:
    """Fetch `origin/<branch>` into its remote-tracking ref; its commit, or None when the
    remote has no such branch."""
    ref = f"refs/remotes/origin/{branch}"
    if not remote_branches(root, branch, token):
        return None
    git.git(
        ["fetch", "--quiet", "--no-tags", "origin", f"+refs/heads/{branch}:{ref}"],
        root,
        config=auth_config(token),
    )
    return git.git(["rev-parse", "--verify", ref], root).strip()


def remote_branches(root: Path, pattern: str, token: str | None) -> dict[str, str]:
    """Branches of origin matching `pattern` (a glob over the name) -> their commits."""
    out = git.git(
        ["ls-remote", "--heads", "origin", f"refs/heads/{pattern}"], root, config=auth_config(token)
    )
    found: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/"):
            found[ref.removeprefix("refs/heads/")] = sha
    return found


def push_on_top(root: Path, local: str, remote_branch: str, token: str | None) -> None:
    """Push `local` to `remote_branch` without force: only adds commits to someone's branch."""
    refspec = f"refs/heads/{local}:refs/heads/{remote_branch}"
    try:
        git.git(["push", "--porcelain", "--", "origin", refspec], root, config=auth_config(token))
    except GitError as exc:
        if "non-fast-forward" in exc.message or "rejected" in exc.message:
            raise GitError(
                f"{remote_branch} moved while codegen-ci worked; nothing was pushed "
                "(re-run to work on the new head)"
            ) from None
        raise


def delete_branch(root: Path, branch: str, token: str | None) -> None:
    git.git(
        ["push", "--porcelain", "--", "origin", f":refs/heads/{branch}"],
        root,
        config=auth_config(token),
        check=False,
    )
