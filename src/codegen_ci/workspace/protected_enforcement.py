"""After each model turn: whatever reached a protected path (a shell command can) is restored,
and every refusal of the turn (the tools', the shell's, git tampering, moved refs, escaping
symlinks) goes into the report once."""

from __future__ import annotations

from codegen_ci.report import Refusal, Report
from codegen_ci.workspace import symlinks
from codegen_ci.workspace.worktree import Worktree

REF_MOVED = "git ref moved by a command; restored"
GIT_TAMPERED = "git hooks/config changed by a command; restored"


def enforce_protected(worktree: Worktree, report: Report, *pending: list[Refusal]) -> None:
    """Restore protected paths and record the refusals; `pending` (the toolbox's and the
    shell's refusal lists) come first in the report and are emptied."""
    refusals = [r for refused in pending for r in refused]
    refusals += [Refusal(path=p, reason=GIT_TAMPERED) for p in worktree.git_tampering]
    refusals += [Refusal(path=ref, reason=REF_MOVED) for ref in worktree.ref_moves]
    worktree.git_tampering.clear()
    worktree.ref_moves.clear()
    for rel in worktree.protected_changes():
        worktree.restore(rel)
        refusals.append(Refusal(path=rel, reason="protected path written by a command; restored"))
    refusals += [Refusal(path=p, reason=symlinks.REASON) for p in worktree.restore_escaping_links()]
    for refused in pending:
        refused.clear()
    known = {(r.path, r.reason) for r in report.refusals}
    report.refusals.extend(r for r in refusals if (r.path, r.reason) not in known)
