"""The machine's own places that hold secrets, hidden from every confined command on both
backends, whoever runs codegen-ci (docs/sandbox.md, "Secrets of the machine").

HOME, the runner's directories and RUNNER_TEMP are hidden because of whose they are
(security/sandbox.py, `hidden_places`); these because of what they hold, and where a CI
machine keeps it: a container's secrets mounted by Docker, Compose, Swarm or Kubernetes, the
private keys and provisioning data of the host, and root's HOME when HOME is elsewhere (a
container job runs as root with `HOME=/github/home`; the image's `/root` may still hold a
`.docker/config.json` or a `.netrc`). Bubblewrap covers each with an empty read-only tmpfs
(a file: with /dev/null); Landlock leaves it out of the read allowlist (`/run` and `/etc` are
granted entry by entry around it). A place that does not exist when the run starts is not
hidden (nothing can appear there for a command: none of them is writable to it).

Users add places of their own with `CODEGEN_SANDBOX_HIDE` (absolute paths separated by `:`):
hiding only takes away, so the variable needs no trust."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

HIDE_ENV = "CODEGEN_SANDBOX_HIDE"

# Keep in step with the table in docs/sandbox.md ("Secrets of the machine").
SECRET_PLACES = (
    "/run/secrets",  # Docker and Compose secrets; Kubernetes' service-account token
    "/var/run/secrets",  # the same where /var/run is a folder, not a link to /run
    "/etc/ssl/private",  # TLS private keys
    "/etc/shadow",  # password hashes
    "/etc/gshadow",
    "/var/lib/cloud",  # cloud-init: user-data and instance data (tokens, passwords)
    "/var/lib/waagent",  # Azure's agent (GitHub's hosted runners): provisioning data, keys
    "/var/lib/docker",  # containers' configs (their environment), volumes, Swarm's secrets
    "/root",  # root's HOME when HOME is elsewhere: .docker/config.json, .netrc, ...
)


def secret_places(environ: Mapping[str, str]) -> list[Path]:
    """`SECRET_PLACES` and the user's own (`CODEGEN_SANDBOX_HIDE`, absolute paths only)."""
    places = [Path(p) for p in SECRET_PLACES]
    for entry in environ.get(HIDE_ENV, "").split(":"):
        if entry.strip() and Path(entry.strip()).is_absolute():
            places.append(Path(entry.strip()))
    return places
