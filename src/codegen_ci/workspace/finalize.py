"""The end of a run: one commit of exactly the agent's changes, diff.patch, the worktree gone."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.report import Refusal, Report
from codegen_ci.security.redact import REDACTOR
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import commit_message, git
from codegen_ci.workspace.protected_enforcement import GIT_TAMPERED, REF_MOVED
from codegen_ci.workspace.worktree import Worktree


def finalize(spec: Spec, worktree: Worktree, repo: Path, output_dir: Path, report: Report) -> None:
    """Commit exactly the agent's changes, write diff.patch, then drop the worktree."""
    if report.reason == "interrupted":
        return  # keep the worktree for `codegen-ci resume`
    worktree.restore_escaping_links()
    for rel in worktree.protected_changes():
        worktree.restore(rel)
    changes = worktree.refuse_gitlinks(worktree.agent_changes())
    report.files_changed = changes
    (output_dir / "diff.patch").write_text(REDACTOR.redact(worktree.diff(changes)),
                                           encoding="utf-8")  # fmt: skip
    message = commit_message.build(spec, report, changes)
    # One commit on top of the base: a resumed run folds its earlier wip commit in.
    worktree.fold_onto_base()
    report.commit = worktree.commit(changes, message)
    report.refusals += [Refusal(path=p, reason=GIT_TAMPERED) for p in worktree.git_tampering] + [
        Refusal(path=ref, reason=REF_MOVED) for ref in worktree.ref_moves
    ]
    report.refusals += [Refusal(path=p, reason=why) for p, why in worktree.commit_refusals]
    refused = {path.rstrip("/") for path, _ in worktree.commit_refusals}
    report.files_changed = [p for p in changes if p.rstrip("/") not in refused]
    worktree.remove()
    if report.commit is None:
        git.git(["branch", "-D", worktree.branch], repo, check=False)
        report.branch = None
    report.worktree = None
