"""The machine's secret places (security/secret_places.py) are among every run's hidden places,
with the user's own from `CODEGEN_SANDBOX_HIDE`; what they hide is shown in
tests/e2e/security/test_machine_secrets.py."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.security.sandbox import hidden_places
from codegen_ci.security.secret_places import SECRET_PLACES, secret_places


def test_the_users_places_are_added_and_relative_ones_ignored() -> None:
    places = secret_places({"CODEGEN_SANDBOX_HIDE": "/srv/keys: relative/dir::/mnt/vault "})
    assert places == [*map(Path, SECRET_PLACES), Path("/srv/keys"), Path("/mnt/vault")]


def test_every_run_hides_them_resolved(tmp_path: Path) -> None:
    """`/var/run/secrets` is hidden at its real path (`/run/secrets` where /var/run links to
    /run: bubblewrap mounts over real paths)."""
    hidden = hidden_places({"HOME": str(tmp_path / "home"), "CODEGEN_SANDBOX_HIDE": "/srv/keys"})
    for place in ("/run/secrets", "/etc/ssl/private", "/etc/shadow", "/root", "/srv/keys"):
        assert Path(place).resolve() in hidden
    assert Path("/var/run/secrets").resolve() in hidden
