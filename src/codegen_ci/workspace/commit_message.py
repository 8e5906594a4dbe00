"""Conventional-commit messages (`fix(scope): subject`) derived from the spec's title.

The title and the task are untrusted (an issue's words): they pass `for_commit`, so the
message closes, references and mentions nothing when it lands (`Fixes #2` reads the same and
does nothing), and the task's lines are quoted (`> `), so none of them is a trailer
(`Signed-off-by:`, `Co-authored-by:`). The only trailers are ours: `Generated-by: codegen-ci`
and `Codegen-task: <digest>` (how a re-run finds its branch).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import PurePosixPath

from codegen_ci.report import Report
from codegen_ci.security.inert_text import for_commit, quoted_lines
from codegen_ci.spec.model import Spec
from codegen_ci.workspace.globs import is_test_path

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
TYPE_WORDS = {"fix": ("fix", "fixes", "fixed", "bugfix"), "docs": ("docs", "doc"),
              "test": ("test", "tests"), "refactor": ("refactor",)}  # fmt: skip
SOURCE_SUFFIXES = {".py", ".pyi", ".js", ".jsx", ".mjs", ".ts", ".tsx", ".go", ".rs", ".java",
                   ".kt", ".rb", ".php", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift",
                   ".scala", ".ex", ".exs", ".sh"}  # fmt: skip


def build(spec: Spec, report: Report, changes: list[str]) -> str:
    title = (spec.title or spec.task.strip().splitlines()[0]).strip()
    kind = commit_type(title)
    scope = commit_scope(changes)
    subject = _without_type_word(for_commit(re.sub(r"\s+", " ", title)).rstrip("."), kind)
    subject = subject[0].lower() + subject[1:] if subject[:2] != subject[:2].upper() else subject
    prefix = "wip" if report.status != "success" else kind
    header = f"{prefix}({scope}): {subject}" if scope else f"{prefix}: {subject}"
    body = ["Task:", *quoted_lines(spec.task.strip()[:1000]), ""]
    for rnd in report.rounds:
        state = "passed" if rnd.passed else "failed"
        body.append(f"Round {rnd.iteration}: {state}; tests: {rnd.tests_text()}")
    if report.status != "success":
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
    source = [p for p in changes if PurePosixPath(p).suffix in SOURCE_SUFFIXES
              and not is_test_path(p)]  # fmt: skip
    scopes: Counter[str] = Counter()
    for rel in source or changes:
        parts = [p for p in PurePosixPath(rel).parts[:-1] if p not in GENERIC_DIRS]
        name = parts[-1] if parts else PurePosixPath(rel).stem
        if re.fullmatch(r"[A-Za-z0-9_.-]{1,30}", name):
            scopes[name] += 1
    return scopes.most_common(1)[0][0] if scopes else None
