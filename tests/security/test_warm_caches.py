"""Which caches are copied warm, from where, and that a copy is never a link to the user's."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.security.warm_caches import (
    is_checkout_cache,
    keep_tmp_caches,
    seed_scratch,
    seed_tmp_caches,
    user_caches,
)


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


def test_jests_cache_in_tmpdir_is_kept_as_files_and_each_phase_gets_a_copy(tmp_path: Path) -> None:
    """Only jest's folder, only its regular files (a link a command planted, to a file or a
    folder outside, is not followed), and a later keep leaves the kept cache as it was."""
    scratch, kept = tmp_path / "rw", tmp_path / "kept"
    cache = scratch / "tmp" / "jest_0" / "jest-transform-cache-id-x" / "ab"
    cache.mkdir(parents=True)
    (cache / "m1_ab12").write_text("transformed")
    secret = tmp_path / "secret"
    (secret / "inner").mkdir(parents=True)
    (secret / "inner" / "key").write_text("s3cret")
    (cache / "link").symlink_to(secret / "inner" / "key")
    (cache.parent / "dir-link").symlink_to(secret)
    (scratch / "tmp" / "other").mkdir()
    (scratch / "tmp" / "jest_1").symlink_to(secret, target_is_directory=True)

    assert keep_tmp_caches(scratch, kept) == ["jest_0"]

    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) == [
        "jest_0/jest-transform-cache-id-x/ab/m1_ab12"
    ]
    (cache / "m1_ab12").write_text("a round's")
    assert keep_tmp_caches(scratch, kept) == []  # kept once, from the pre-flight
    phase = tmp_path / "rw2"
    (phase / "tmp" / "jest_0" / "from-setup").mkdir(parents=True)  # setup's, copied in
    seed_tmp_caches(kept, phase)
    assert not (phase / "tmp" / "jest_0" / "from-setup").exists()  # the pre-flight's instead
    copy = phase / "tmp" / "jest_0" / "jest-transform-cache-id-x" / "ab" / "m1_ab12"
    assert copy.read_text() == "transformed"
    copy.write_text("poisoned")
    assert (kept / "jest_0" / "jest-transform-cache-id-x" / "ab" / "m1_ab12").read_text() == (
        "transformed"
    )


def test_a_scratch_tmpdir_that_is_a_link_keeps_nothing(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "jest_0").mkdir(parents=True)
    (elsewhere / "jest_0" / "f").write_text("not the scratch's")
    (tmp_path / "rw").mkdir()
    (tmp_path / "rw" / "tmp").symlink_to(elsewhere, target_is_directory=True)
    assert keep_tmp_caches(tmp_path / "rw", tmp_path / "kept") == []
    assert not (tmp_path / "kept").exists()
