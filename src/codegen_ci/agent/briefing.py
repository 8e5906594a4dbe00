"""What a run is told besides its spec: the maintainers' standing instructions (trusted, from
the default branch) and what earlier codegen-ci runs on the same pull request did (data)."""

from __future__ import annotations

from dataclasses import dataclass

from codegen_ci.agent.instructions import Instructions, system_section
from codegen_ci.security.untrusted import fence


@dataclass(frozen=True)
class Briefing:
    instructions: Instructions | None = None
    history: str = ""  # earlier runs on this pull request, one line each, oldest first

    def system_addition(self) -> str:
        return f"\n\n{system_section(self.instructions)}" if self.instructions else ""

    def task_addition(self) -> str:
        if not self.history:
            return ""
        return (
            "Earlier codegen-ci runs on this pull request (their commits are already on the "
            "branch; do not redo them):\n"
            + fence("earlier codegen-ci runs on this pull request", self.history)
        )
