"""The pieces under the attacks of tests/e2e/security: file redaction for the output directory, the
basic-auth shapes git leaves behind, and `GitGuard` (real git, real files)."""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path

import pytest

from codegen_ci.security.redact import MASK, Redactor
from codegen_ci.workspace.git_guard import GitGuard


def test_redact_file_masks_a_registered_secret_in_small_and_big_files(tmp_path: Path) -> None:
    secret = f"canary{uuid.uuid4().hex}"
    redactor = Redactor()
    redactor.add_secret(secret)
    small, big = tmp_path / "small.log", tmp_path / "big.log"
    small.write_text(f"token: {secret}\nok\n")
    big.write_bytes(b"x" * (17 * 1024 * 1024) + f"\nlate: {secret}\n".encode())
    untouched = tmp_path / "clean.log"
    untouched.write_bytes(b"nothing secret \xff here\n")  # not rewritten: bytes stay as they are

    redactor.redact_tree(tmp_path)

    assert small.read_text() == f"token: {MASK}\nok\n"
    assert big.read_bytes().endswith(f"\nlate: {MASK}\n".encode())
    assert secret.encode() not in big.read_bytes()
    assert untouched.read_bytes() == b"nothing secret \xff here\n"


@pytest.mark.parametrize(
    "text",
    [
        "AUTHORIZATION: basic {b64}",  # as git config prints it
        "{b64}",  # the bare header value
        "x-access-token:{token}",  # decoded
        "https://x-access-token:{token}@github.com/o/r",
    ],
)
def test_unregistered_checkout_credentials_are_masked(text: str) -> None:
    token = f"canary{uuid.uuid4().hex}"  # no token shape: only the basic-auth form gives it away
    b64 = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    redacted = Redactor().redact(text.format(b64=b64, token=token))
    assert token not in redacted and b64[20:40] not in redacted
    assert MASK in redacted


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_git_guard_restores_config_hooks_and_gitfile_and_keeps_symlinks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles" / "gitconfig"
    dotfiles.parent.mkdir(parents=True)
    dotfiles.write_text("[user]\n\tname = Me\n")
    home.mkdir()
    (home / ".gitconfig").symlink_to(dotfiles)  # a common setup: config kept in a dotfiles repo
    monkeypatch.setenv("HOME", str(home))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("commit", "-q", "--allow-empty", "-m", "init", cwd=repo)
    tree = tmp_path / "tree"
    _git("worktree", "add", "-q", "-b", "work", str(tree), cwd=repo)
    guard = GitGuard.for_worktree(tree)
    trusted = guard.state()
    gitfile = (tree / ".git").read_text()

    dotfiles.write_text('[filter "x"]\n\tclean = touch pwned\n')  # written through the link
    _git("config", "core.sshCommand", "touch pwned", cwd=tree)
    (repo / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch pwned\n")
    (tree / ".git").write_text("gitdir: elsewhere\n")

    changed = {p.name for p in guard.restore(trusted)}

    assert changed == {".gitconfig", "config", "post-checkout", ".git"}
    assert (home / ".gitconfig").is_symlink() and dotfiles.read_text() == "[user]\n\tname = Me\n"
    assert "sshcommand" not in (repo / ".git" / "config").read_text().lower()
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert (tree / ".git").read_text() == gitfile
    assert guard.restore(trusted) == []  # control: nothing left to undo
