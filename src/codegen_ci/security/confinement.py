"""What one confined command may touch, said once for every backend (security/bwrap.py,
security/landlock.py turn it into an argv prefix). Every field is an explicit list, so the
places a caller adds (a tool-owned read-only folder, a fresh JUnit folder, per-worktree
dependency folders) reach both backends the same way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Confinement:
    """`workdir`: where the command starts. `writable`: the only places it may write (the
    workdir and the command's scratch, among others). `read_only`: shown read-only even inside
    a hidden place (toolchains in HOME, the checkout, the git directory, dependency folders,
    the tool's read-only folder). `hidden`: kept from it whole (HOME, the runner's
    directories, sockets); what lies in them is shown only if named in `read_only` or
    `writable`. `replaced`: (source, target) pairs, `source` shown read-only in place of
    `target` (bubblewrap only; Landlock hides `target` instead). `frozen`: files inside a
    writable place that stay read-only (the worktree's `.git` file: bubblewrap only; Landlock
    leaves them to the tool's git guard, which restores them after each command). `sockets`:
    named sockets outside the sandbox (the user's session's, a container engine's, the
    system's under /run): bubblewrap covers each that a command could still see with
    /dev/null; on both the metadata guard refuses a connect() to one and a datagram sent to
    one (`sendto`, `sendmsg`, `sendmmsg`). `network`: whether
    it may use the network."""

    workdir: Path
    writable: tuple[Path, ...]
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    replaced: tuple[tuple[Path, Path], ...] = ()
    frozen: tuple[Path, ...] = ()
    sockets: tuple[Path, ...] = ()
    network: bool = False


def within(path: Path, place: Path) -> bool:
    """`path` is `place` or lies beneath it (`place == path or place in path.parents`, by the
    paths' text: `Path.parents` compares Path objects part by part, and the sandbox asks this
    for every pair of its places before every command)."""
    a, b = str(path), str(place)
    return a == b or a.startswith(b if b.endswith("/") else f"{b}/")


def beneath(path: Path, place: Path) -> bool:
    """`path` lies strictly beneath `place` (`place in path.parents`)."""
    return path != place and within(path, place)
