"""Conventional-commit messages (`fix(scope): subject`) derived from the spec's title.

The title and the task are untrusted (an issue's words): they pass `for_commit`, so the
message closes, references and mentions nothing when it lands (`Fixes #2` reads the same and
does nothing), and the task's lines are quoted (`> `), so none of them is a trailer
(`Signed-off-by:`, `Co-authored-by:`). The only trailer is ours: `Generated-by: codegen-ci`.
"""

from __future__ import annotations

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
GENERIC_DIRS = {"src", "lib", "app", "pkg", "internal", "cmd", "tests", "test", "."}
SOURCE_SUFFIXES = {".py", ".pyi", ".js", ".jsx", ".mjs", ".ts", ".tsx", ".go", ".rs", ".java",
                   ".kt", ".rb", ".php", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift",
                   ".scala", ".ex", ".exs", ".sh"}  # fmt: skip


def build(spec: Spec, report: Report, changes: list[str]) -> str:
    title = (spec.title or spec.task.strip().splitlines()[0]).strip()
    kind = commit_type(title)
    scope = commit_scope(changes)
    subject = for_commit(re.sub(r"\s+", " ", title)).rstrip(".")
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
    body.append("Generated-by: codegen-ci")
    return header[:100] + "\n\n" + "\n".join(body) + "\n"


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
