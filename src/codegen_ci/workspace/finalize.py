"""The end of each model turn and of the run: protected paths enforced, refusals reported, and
one commit of exactly the agent's changes, with its message, diff.patch, the worktree gone.

After each model turn (`enforce_protected`): whatever reached a protected path (a shell
command can) is restored, and every refusal of the turn (the tools', the shell's, git
tampering, moved refs, escaping symlinks) goes into the report once.

At the end (`finalize`): a "success" always has a commit that holds the change; a run whose
gate passed on no change of the model's (nothing to commit, or only what a formatter did to
files the change never touched) ends `failed`, reason `no_change`, with no branch. Otherwise
the commit, with a conventional-commit message (`fix(scope):
subject`) derived from the spec's title (`commit_message`). The title and the task are
untrusted (an issue's words): they pass `for_commit`, so the message closes, references and
mentions nothing when it lands (`Fixes #2` reads the same and does nothing), and the task's
lines are quoted (`> `), so none of them is a trailer (`Signed-off-by:`, `Co-authored-by:`).
The only trailers are ours: `Generated-by: codegen-ci` and `Codegen-task: <digest>` (how a
re-run finds its branch).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codegen_ci.report import Reason, Refusal, Report, Status
from codegen_ci.security.inert_text import for_commit, quoted_lines
from codegen_ci.security.redact import REDACTOR
from codegen_ci.security.untrusted import Untrusted
from codegen_ci.spec.model import Spec
from codegen_ci.workspace import git
from codegen_ci.workspace.file_kinds import is_source_file
from codegen_ci.workspace.paths import LINK_REFUSED
from codegen_ci.workspace.worktree import Worktree, worktree_git

REF_MOVED = "git ref moved by a command; restored"
GIT_TAMPERED = "git hooks/config changed by a command; restored"
NO_CHANGE = (
    "validation passed, but nothing the model changed is left to commit: "
    "no branch, no commit (the code may already do what the task asks)"
)


def enforce_protected(worktree: Worktree, report: Report, *pending: list[Refusal]) -> None:
    """Restore protected paths and record the refusals; `pending` (the toolbox's and the
    shell's refusal lists) come first in the report and are emptied."""
    refusals = [r for refused in pending for r in refused]
    refusals += git_refusals(worktree)
    for rel in worktree.protected_changes():
        worktree.restore(rel)
        refusals.append(Refusal(path=rel, reason="protected path written by a command; restored"))
    refusals += [Refusal(path=p, reason=LINK_REFUSED) for p in worktree.restore_escaping_links()]
    for refused in pending:
        refused.clear()
    known = {(r.path, r.reason) for r in report.refusals}
    report.refusals.extend(r for r in refusals if (r.path, r.reason) not in known)


def git_refusals(worktree: Worktree) -> list[Refusal]:
    """The refusals for what our git guards put back since the last call (git files a command
    changed, refs it moved); the worktree's lists of them are emptied."""
    refusals = [Refusal(path=p, reason=GIT_TAMPERED) for p in worktree.git_tampering]
    refusals += [Refusal(path=ref, reason=REF_MOVED) for ref in worktree.ref_moves]
    worktree.git_tampering.clear()
    worktree.ref_moves.clear()
    return refusals


@dataclass(frozen=True)
class Committed:
    """What `finalize` made: the commit (None: nothing to commit, the branch is gone), the
    files it holds, and what was refused on the way. The pipeline records it in the report."""

    commit: str | None
    files: list[str]
    refusals: list[Refusal] = field(default_factory=list)
    no_change: bool = False  # the gate passed, yet nothing of the model's was committed


def finalize(spec: Spec, worktree: Worktree, output_dir: Path, report: Report) -> Committed | None:
    """Commit exactly the agent's changes, write diff.patch, then drop the worktree (and its
    branch, when nothing was committed). None for an interrupted run: its worktree is kept for
    `codegen-ci resume`. `report` is read (the commit message tells the run), not written.
    Should git fail on the way (the run's branch deleted under it: `ambiguous argument
    'HEAD'`), the worktree goes all the same (`drop`) and the error is raised: a worktree left
    registered on the branch would stop the next run of the task ("already checked out")."""
    if report.reason == Reason.INTERRUPTED:
        return None
    try:
        return _commit(spec, worktree, output_dir, report)
    except Exception:
        drop(worktree)
        raise


def drop(worktree: Worktree) -> None:
    """Remove the worktree whatever state git is in, and its branch when it holds nothing of
    the run's (at the base: the earlier run's commit it replaced, if any, put back)."""
    try:
        worktree.remove()
    except Exception:  # (git failing is why we are here)
        shutil.rmtree(worktree.path, ignore_errors=True)
        worktree_git(worktree.repo, ["prune"], check=False)
    ref = f"refs/heads/{worktree.branch}"
    tip = git.git(["rev-parse", "--verify", "-q", ref], worktree.repo, check=False).strip()
    if tip == worktree.base_commit and worktree.replaced:
        git.git(["update-ref", ref, worktree.replaced, tip], worktree.repo, check=False)
    elif tip == worktree.base_commit:
        git.git(["update-ref", "-d", ref, tip], worktree.repo, check=False)


def _commit(spec: Spec, worktree: Worktree, output_dir: Path, report: Report) -> Committed:
    worktree.restore_escaping_links()
    for rel in worktree.protected_changes():
        worktree.restore(rel)
    changes = worktree.refuse_gitlinks(worktree.agent_changes())
    if report.status == Status.SUCCESS and not worktree.holds_change(changes):
        changes = []  # formatting alone is no change of the model's: nothing to keep
    if report.reason == Reason.NO_CHANGE:
        changes = []
    (output_dir / "diff.patch").write_text(
        REDACTOR.redact(worktree.diff(changes)), encoding="utf-8"
    )
    message = commit_message(spec, report, changes)
    # One commit on top of the base: a resumed run folds its earlier wip commit in.
    worktree.fold_onto_base()
    commit = worktree.commit(changes, message)
    refusals = git_refusals(worktree)
    refusals += [Refusal(path=p, reason=why) for p, why in worktree.commit_refusals]
    refused = {path.rstrip("/") for path, _ in worktree.commit_refusals}
    if commit is None:
        worktree.discard()
    else:
        worktree.remove()
    files = [p for p in changes if p.rstrip("/") not in refused]
    # A gate that passed with nothing of the model's committed (no change, formatting alone,
    # everything refused) is no success: the pipeline ends the run `no_change`.
    no_change = report.status == Status.SUCCESS and commit is None
    return Committed(commit, files, refusals, no_change=no_change)


# --- the commit message -------------------------------------------------------------------

TYPES = (
    ("feat", ("add", "implement", "support", "introduce", "allow", "create", "new")),
    ("docs", ("doc", "docs", "readme", "document", "documentation")),
    ("test", ("test", "tests", "coverage")),
    ("refactor", ("refactor", "rename", "extract", "simplify", "clean")),
    ("perf", ("speed", "faster", "performance", "optimize", "optimise")),
    ("chore", ("bump", "upgrade", "update", "dependency", "dependencies")),
)
GENERATED_BY = "Generated-by: codegen-ci"  # the trailer of every commit a run makes
TASK_TRAILER = "Codegen-task"
GENERIC_DIRS = {"src", "lib", "app", "pkg", "internal", "cmd", "tests", "test", "."}
TYPE_WORDS = {
    "fix": ("fix", "fixes", "fixed", "bugfix"),
    "docs": ("docs", "doc"),
    "test": ("test", "tests"),
    "refactor": ("refactor",),
}


def commit_message(spec: Spec, report: Report, changes: list[str]) -> str:
    title = (spec.title or Untrusted(spec.task.strip().splitlines()[0])).map(str.strip)
    kind = commit_type(title.raw_for("matching"))
    scope = commit_scope(changes)
    subject = for_commit(title.map(lambda t: re.sub(r"\s+", " ", t))).rstrip(".")
    subject = _without_type_word(subject, kind)
    subject = subject[0].lower() + subject[1:] if subject[:2] != subject[:2].upper() else subject
    prefix = "wip" if report.status != Status.SUCCESS else kind
    header = f"{prefix}({scope}): {subject}" if scope else f"{prefix}: {subject}"
    body = ["Task:", *quoted_lines(spec.task.strip()[:1000]), ""]
    for rnd in report.rounds:
        state = "passed" if rnd.passed else "failed"
        body.append(f"Round {rnd.iteration}: {state}; tests: {rnd.tests_text()}")
    if report.status != Status.SUCCESS:
        body.append(f"Validation did not pass ({report.reason}); kept for inspection.")
    body.append("")
    body.append(GENERATED_BY)
    body.append(task_trailer(spec))
    return header[:100] + "\n\n" + "\n".join(body) + "\n"


def task_trailer(spec: Spec) -> str:
    """`Codegen-task: <digest of the task>`: how a re-run knows the branch is its own."""
    digest = hashlib.sha256(spec.task.strip().encode()).hexdigest()[:16]
    return f"{TASK_TRAILER}: {digest}"


def _without_type_word(subject: str, kind: str) -> str:
    """`Fix the off-by-one in paginate` says `fix` twice as `fix(utils): fix the off-by-one
    ...`: the type already says it, so the subject keeps what changed (`the off-by-one ...`).
    Only a verb that is the type itself goes (`add` stays after `feat:`)."""
    first, _, rest = subject.partition(" ")
    if rest and first.lower().rstrip(":") in TYPE_WORDS.get(kind, ()):
        return rest.strip()
    return subject


def commit_type(title: str) -> str:
    words = re.findall(r"[a-z]+", title.lower())
    for kind, keys in TYPES:
        if words and words[0] in keys:
            return kind
    return "fix"


def commit_scope(changes: list[str]) -> str | None:
    """The most common meaningful directory (or module) among the changed source files (not
    tests); among all changed files when no source file changed."""
    source = [p for p in changes if is_source_file(p)]
    scopes: Counter[str] = Counter()
    for rel in source or changes:
        parts = [p for p in PurePosixPath(rel).parts[:-1] if p not in GENERIC_DIRS]
        name = parts[-1] if parts else PurePosixPath(rel).stem
        if re.fullmatch(r"[A-Za-z0-9_.-]{1,30}", name):
            scopes[name] += 1
    return scopes.most_common(1)[0][0] if scopes else None
