"""The toolchain table's effect on a confined command's HOME and environment: links only to
what is shown, variables only where the user set none."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.security.toolchains import furnish_home, toolchain_env


def test_links_and_variables_follow_what_is_shown(tmp_path: Path) -> None:
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    for rel in (".rustup", ".cargo/bin", ".virtualenvs/proj", "go/pkg/mod", ".ssh"):
        (home / rel).mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token")
    scratch.mkdir()
    shown = [(home / rel).resolve() for rel in (".rustup", ".cargo/bin", ".virtualenvs")]

    furnish_home(scratch, home, shown)
    env = toolchain_env({}, home, scratch, shown)

    assert (scratch / ".rustup").readlink() == (home / ".rustup").resolve()
    assert (scratch / ".virtualenvs" / "proj").is_dir()
    assert sorted(p.name for p in (scratch / ".cargo").iterdir()) == ["bin"]
    assert not (scratch / ".ssh").exists() and not (scratch / "go").exists()  # not shown
    assert env == {
        "RUSTUP_HOME": str((home / ".rustup").resolve()),
        "CARGO_HOME": str(scratch / ".cargo"),
    }


def test_the_users_own_settings_win(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".rustup").mkdir(parents=True)
    shown = [(home / ".rustup").resolve()]
    env = toolchain_env({"RUSTUP_HOME": "/opt/rustup"}, home, tmp_path, shown)
    assert "RUSTUP_HOME" not in env


def test_gomodcache_follows_gopath(tmp_path: Path) -> None:
    gopath = tmp_path / "gp"
    (gopath / "pkg" / "mod").mkdir(parents=True)
    shown = [(gopath / "pkg" / "mod").resolve()]
    env = toolchain_env({"GOPATH": str(gopath)}, tmp_path / "home", tmp_path, shown)
    assert env == {"GOMODCACHE": str((gopath / "pkg" / "mod").resolve())}
