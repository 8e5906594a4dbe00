"""No metadata write outside the sandbox, under either backend: a confined command cannot change
the mode, owner, times or extended attributes of a HOME credential, the repository's
`.git/hooks` or any other file outside its writable places (Landlock does not cover these
calls: security/metadata_guard.py answers them; bubblewrap mounts everything else read-only and
guards the device nodes it shows when they are ours). The same calls work inside the worktree
(a script made executable there runs), and with the sandbox off the attack works (positive
control)."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sample_repo import VERSION_FILE, SampleRepo
from sandbox_attacks import BACKENDS

from codegen_ci.security.sandbox import Sandbox, open_sandbox

ATTACK = """
import os, subprocess, sys

def attempt(label, action):
    try:
        action()
        print(label, "WORKED")
    except OSError as exc:
        print(label, "REFUSED", exc.errno)

for name, path in TARGETS.items():
    # the machine's own /dev/null: only calls that change nothing (its mode, its owner)
    mode = os.stat(path).st_mode & 0o7777 if name == "devnull" else 0o777
    attempt("chmod-" + name, lambda: os.chmod(path, mode))
    attempt("chown-" + name, lambda: os.chown(path, os.getuid(), -1))
    if name != "devnull":
        attempt("utime-" + name, lambda: os.utime(path, (0, 0)))
        attempt("xattr-" + name, lambda: os.setxattr(path, "user.pwned", b"1"))

# the control: the same calls on the command's own files
with open("tool.sh", "w") as script:
    script.write("#!/bin/sh\\necho RAN-INSIDE\\n")
attempt("chmod-inside", lambda: os.chmod("tool.sh", 0o755))
print(subprocess.run(["./tool.sh"], capture_output=True, text=True).stdout.strip())
attempt("chown-inside", lambda: os.chown("tool.sh", os.getuid(), -1))
attempt("utime-inside", lambda: os.utime("tool.sh", (0, 0)))
attempt("xattr-inside", lambda: os.setxattr("tool.sh", "user.mine", b"1"))
"""


def attack(targets: dict[str, Path]) -> str:
    code = f"TARGETS = { ({k: str(v) for k, v in targets.items()})!r}\n{ATTACK}"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def user_xattrs(where: Path) -> bool:
    probe = where / ".xattr-probe"
    probe.touch()
    try:
        os.setxattr(probe, "user.probe", b"1")
        return True
    except OSError:
        return False
    finally:
        probe.unlink()


def devices_are_ours() -> bool:
    return Path("/dev/null").stat().st_uid == os.geteuid()


def outside_targets(repo: SampleRepo, tmp: Path) -> dict[str, Path]:
    """A HOME credential, the repository's hooks directory, a file of the user's checkout, a
    program in a toolchain directory on PATH (shown read-only) and a file elsewhere."""
    credential = tmp / "home" / ".ssh" / "id_ed25519"
    credential.parent.mkdir(parents=True)
    credential.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    credential.chmod(0o600)
    hooks = repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    hooks.chmod(0o755)
    outside = tmp / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("mine\n")
    outside.chmod(0o644)
    checkout = repo.path / VERSION_FILE
    checkout.chmod(0o644)
    tool = tmp / "bin" / "formatter"
    tool.parent.mkdir(exist_ok=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    targets = {
        "home": credential,
        "hooks": hooks,
        "checkout": checkout,
        "toolchain": tool,
        "outside": outside,
    }
    if devices_are_ours():  # root: bubblewrap's /dev/null is the machine's, and ours
        targets["devnull"] = Path("/dev/null")
    return targets


# The attack on the outside targets is one of the model's commands of test_sandbox.py's run
# (test_a_models_commands_reach_no_..._outside, under each backend and off): these are its parts.
def metadata_attack(repo: SampleRepo, tmp: Path) -> tuple[str, dict[str, Path], dict[str, Any]]:
    """The command, its targets (outside_targets), and their stat before the run. Its HOME is
    `tmp/home`, and `tmp/bin` is first on its PATH."""
    targets = outside_targets(repo, tmp)
    before = {name: path.stat() for name, path in targets.items()}
    return attack(targets), targets, before


def assert_no_metadata_changed_outside(
    seen: str, targets: dict[str, Path], before: dict[str, Any], sandbox: str, tmp: Path
) -> None:
    """What the command printed (`seen`) and did: nothing changed outside under a backend,
    everything with the sandbox off (the control), the same calls inside the worktree work."""
    xattrs = user_xattrs(tmp)
    calls = ["chmod", "chown", "utime", *(["xattr"] if xattrs else [])]
    changes_nothing = ("chmod", "chown")  # all that is tried on /dev/null
    outside = [f"{c}-{n}" for n in targets for c in calls if n != "devnull" or c in changes_nothing]
    worked = [label for label in outside if f"{label} WORKED" in seen]
    after = {name: path.stat() for name, path in targets.items()}
    if sandbox == "off":  # control: every one of them works without the sandbox
        assert worked == outside, seen
        assert stat.S_IMODE(after["home"].st_mode) == 0o777
        assert stat.S_IMODE(after["hooks"].st_mode) == 0o777
        assert after["outside"].st_mtime == 0
    else:
        assert worked == [], seen
        for name in targets:
            assert after[name].st_mode == before[name].st_mode, name
            assert after[name].st_mtime_ns == before[name].st_mtime_ns, name
            if name != "devnull":
                assert "user.pwned" not in os.listxattr(targets[name]), name
    # inside the worktree the same calls work, under every backend
    inside = ["chmod-inside", "chown-inside", "utime-inside", *(["xattr-inside"] if xattrs else [])]
    assert all(f"{label} WORKED" in seen for label in inside), seen
    assert "RAN-INSIDE" in seen


# --- the guard's harder cases, one command each under each backend's prefix ------------------

EDGES = """
import os, fcntl, struct, threading

def attempt(label, action):
    try:
        action()
        print(label, "WORKED")
    except OSError as exc:
        print(label, "REFUSED", exc.errno)

os.symlink(OUTSIDE, "link")
attempt("chmod-through-link", lambda: os.chmod("link", 0o777))
attempt("lchown-of-link", lambda: os.lchown("link", os.getuid(), -1))
attempt("chmod-dotdot", lambda: os.chmod(os.path.relpath(OUTSIDE), 0o777))
fd = os.open(OUTSIDE, os.O_RDONLY)
attempt("fchmod", lambda: os.fchmod(fd, 0o777))
attempt("futimens", lambda: os.utime(fd, (0, 0)))
attempt("fchmodat-dirfd", lambda: os.chmod(
    os.path.basename(OUTSIDE), 0o777, dir_fd=os.open(os.path.dirname(OUTSIDE), os.O_RDONLY)))
attempt("chattr-nodump", lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0x40)))
chmod = lambda: os.chmod(OUTSIDE, 0o777)
thread = threading.Thread(target=attempt, args=("chmod-from-a-thread", chmod))
thread.start()
thread.join()
if os.fork() == 0:
    attempt("chmod-from-a-child", lambda: os.chmod(OUTSIDE, 0o777))
    os._exit(0)
os.wait()
open("mine", "w").close()
mine = os.open("mine", os.O_RDONLY)
attempt("fchmod-inside", lambda: os.fchmod(mine, 0o700))
attempt("futimens-inside", lambda: os.utime(mine, (0, 0)))
attempt("chmod-missing", lambda: os.chmod("missing", 0o700))
attempt("truncate", lambda: os.truncate(OUTSIDE, 0))  # Landlock before ABI 3 let it through
with open("long", "w") as f:
    f.write("0123456789")
attempt("truncate-inside", lambda: os.truncate("long", 4))
"""


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    opened = open_sandbox({**os.environ, "CODEGEN_SANDBOX": request.param}, git_dir=None)
    yield opened
    opened.close()


def test_links_descriptors_threads_and_children_are_guarded_alike(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    outside = elsewhere / "notes.txt"
    outside.write_text("mine\n")
    outside.chmod(0o644)
    before = outside.stat()
    confinement = sandbox.confinement(work, network=False, read_only=[elsewhere])
    code = f"OUTSIDE = {str(outside)!r}\n{EDGES}"
    proc = subprocess.run(
        [*sandbox.wrap(confinement), sys.executable, "-c", code],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    refused = [
        "chmod-through-link",
        "chmod-dotdot",
        "fchmod",
        "futimens",
        "fchmodat-dirfd",
        "chattr-nodump",
        "chmod-from-a-thread",
        "chmod-from-a-child",
        "truncate",
    ]
    assert [label for label in refused if f"{label} REFUSED" not in out] == [], out
    after = outside.stat()
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    # the link itself is the command's; its own files too; a missing one is missing
    assert outside.read_text() == "mine\n" and (work / "long").read_text() == "0123"
    for label in ("lchown-of-link", "fchmod-inside", "futimens-inside", "truncate-inside"):
        assert f"{label} WORKED" in out, out
    assert "chmod-missing REFUSED 2" in out, out
    assert stat.S_IMODE((work / "mine").stat().st_mode) == 0o700
