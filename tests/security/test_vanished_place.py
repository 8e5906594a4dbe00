"""bubblewrap's failure on a mount point that has gone, and the argv without that mount
(security/bwrap.py: `vanished_place`, `without_place`, `argv_again`; run again by
workspace/proc.run_shell)."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.security.bwrap import argv_again, vanished_place, without_place


def test_only_bwraps_own_words_about_a_place_that_is_gone_name_it(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    assert vanished_place(f"bwrap: Can't mkdir {gone}: Read-only file system\n") == gone
    remounted = (
        f"bwrap: Can't remount readonly on /newroot{gone}: "
        f'Unable to find "/newroot{gone}" in mount table\n'
    )
    assert vanished_place(remounted) == gone  # seen at -n 8: /run/secrets made and removed
    tmpfs = f"bwrap: Can't mount tmpfs on /newroot{gone}: No such file or directory\n"
    assert vanished_place(tmpfs) == gone  # seen at -n 4: /var/lib/cloud made and removed
    sock = tmp_path / "agent.sock"
    assert vanished_place(f"bwrap: Can't create file at {sock}: Read-only file system") == sock
    # the place is there, and a command's output follows: the command printed these words
    said = f"bwrap: Can't mkdir {tmp_path}: Read-only file system\nFAILED test_x\n"
    assert vanished_place(said) is None
    assert vanished_place(f"tests failed\nbwrap: Can't mkdir {gone}: Read-only file system") is None
    assert vanished_place("bwrap: No permissions to creating new namespace") is None


def test_the_mounts_at_or_beneath_the_place_are_left_out() -> None:
    argv = [
        "bwrap", "--ro-bind", "/", "/", "--tmpfs", "/run/secrets", "--ro-bind", "/dev/null",
        "/run/secrets/x", "--ro-bind", "/dev/null", "/run/secretsfile", "--remount-ro",
        "/run/secrets", "--bind", "/w", "/w", "--chdir", "/w", "--",
    ]  # fmt: skip
    assert without_place(argv, Path("/run/secrets")) == [
        "bwrap", "--ro-bind", "/", "/", "--ro-bind", "/dev/null", "/run/secretsfile",
        "--bind", "/w", "/w", "--chdir", "/w", "--",
    ]  # fmt: skip


def test_a_place_gone_when_bwrap_looked_and_back_now_keeps_its_mount(tmp_path: Path) -> None:
    """Seen at `-n 8`: one test made and removed /var/lib/cloud (a secret place hidden with a
    tmpfs) between another run's argv and its bwrap, and had made it again by the time that
    run looked: bwrap's words alone, the place there; the same argv runs again."""
    back = tmp_path / "cloud"
    back.mkdir()
    argv = ["bwrap", "--ro-bind", "/", "/", "--tmpfs", str(back), "--"]
    said = f"bwrap: Can't mkdir {back}: Read-only file system\n"
    assert vanished_place(said) == back
    assert argv_again(argv, said) == argv
    back.rmdir()
    assert argv_again(argv, said) == ["bwrap", "--ro-bind", "/", "/", "--"]
    assert argv_again(argv, "tests failed\n") is None
