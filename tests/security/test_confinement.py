"""`within` and `beneath` (security/confinement.py) answer what `Path.parents` would, by the
paths' text: the sandbox asks them for every pair of its places before every command."""

from __future__ import annotations

import itertools
from pathlib import Path

from codegen_ci.security.confinement import beneath, within

PLACES = [
    Path(p)
    for p in (
        "/",
        "/root",
        "/root/.cargo",
        "/root/.cargo/bin",
        "/root/.cargo-bin",  # a sibling sharing the text before it: never inside /root/.cargo
        "/rootfs",
        "/tmp/pt/home0",
        "/tmp/pt/home0/.cache/codegen-ci",
        "/tmp/pt/home",
        "/tmp/pt/home/x",
        "relative/dir",
        "relative/dir/inner",
        "relative/dirt",
    )
]


def test_within_and_beneath_say_what_path_parents_says() -> None:
    for path, place in itertools.product(PLACES, PLACES):
        assert within(path, place) is (place == path or place in path.parents), (path, place)
        assert beneath(path, place) is (place in path.parents), (path, place)


def test_a_place_beside_with_the_same_beginning_is_not_inside() -> None:
    assert not within(Path("/root/.cargo-bin"), Path("/root/.cargo"))
    assert within(Path("/root/.cargo/bin"), Path("/root/.cargo"))
    assert within(Path("/anything"), Path("/")) and not beneath(Path("/"), Path("/"))
