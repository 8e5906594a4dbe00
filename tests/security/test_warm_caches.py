"""Which caches are copied warm, from where, and that a copy is never a link to the user's."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.security.warm_caches import is_checkout_cache, seed_scratch, user_caches


def test_gos_build_cache_is_found_in_gos_own_order(tmp_path: Path) -> None:
    for name in ("explicit", "xdg/go-build", "home/.cache/go-build"):
        (tmp_path / name).mkdir(parents=True)
    home = str(tmp_path / "home")
    explicit = {"HOME": home, "GOCACHE": str(tmp_path / "explicit")}
    assert user_caches(explicit) == (("GOCACHE", tmp_path / "explicit"),)
    xdg = {"HOME": home, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert user_caches(xdg) == (("GOCACHE", tmp_path / "xdg" / "go-build"),)
    assert user_caches({"HOME": home}) == (("GOCACHE", tmp_path / "home/.cache/go-build"),)
    assert user_caches({"HOME": home, "GOCACHE": "off"}) == ()
    assert user_caches({"HOME": str(tmp_path / "nobody")}) == ()


def test_the_scratch_gets_a_copy_not_a_link(tmp_path: Path) -> None:
    user = tmp_path / "go-build"
    (user / "ab").mkdir(parents=True)
    entry = user / "ab" / "ab12-d"
    entry.write_text("compiled")
    scratch = tmp_path / "scratch"

    env = seed_scratch(scratch, (("GOCACHE", user),))

    copy = Path(env["GOCACHE"]) / "ab" / "ab12-d"
    assert copy.read_text() == "compiled"
    assert copy.stat().st_ino != entry.stat().st_ino
    copy.write_text("poisoned")
    assert entry.read_text() == "compiled"


def test_a_target_folder_is_a_cache_only_beside_a_cargo_manifest(tmp_path: Path) -> None:
    (tmp_path / "rust" / "target").mkdir(parents=True)
    (tmp_path / "rust" / "Cargo.toml").write_text("[package]\n")
    (tmp_path / "other" / "target").mkdir(parents=True)
    assert is_checkout_cache(tmp_path / "rust" / "target")
    assert not is_checkout_cache(tmp_path / "other" / "target")
    assert is_checkout_cache(tmp_path / "other" / ".mypy_cache")
