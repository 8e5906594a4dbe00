"""The short history of codegen-ci runs on one issue or pull request, kept in its status
comment: a few visible lines, and the same records as JSON in a hidden marker that the next
run reads. It tells a later run what earlier ones did and what failed then (the memory), and
it counts the CI-fix attempts so they stay bounded.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from codegen_ci.publish.forge import Forge
from codegen_ci.publish.markdown import code_span
from codegen_ci.report import Report, Status
from codegen_ci.security.untrusted import Untrusted

STATUSES = ("success", "failed", "error")
KEEP = 10  # records kept in the marker
SHOWN = 5  # records listed in the comment
MAX_IDS = 8
HISTORY = re.compile(r"<!-- codegen-ci:history (.*?) -->")
KINDS = {
    "issue": "issue",
    "issue_comment": "comment",
    "pr_comment": "comment",
    "review_comment": "review comment",
    "review": "review",
    "ci_failure": "CI failure",
    "dispatch": "dispatch",
}


@dataclass
class RunRecord:
    kind: str
    request: str  # the trigger in a few words
    status: str
    commit: str = ""
    files: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # still failing at the end
    ci_signature: str = ""  # the CI failures a ci_failure run was started for
    run_url: str = ""

    def line(self, *, posted: bool = False) -> str:
        """One line; `posted`: for the comment, where every untrusted piece (the request's
        words, file names, test ids) shows as a code span: no HTML, no Markdown."""
        shown = code_span if posted else _plain
        request = code_span(self.request) if posted else f"“{self.request}”"
        kind = KINDS.get(self.kind) or shown(self.kind)
        what = f"{kind} {request}" if self.request else kind
        text = f"{what}: {shown(self.status) if self.status not in STATUSES else self.status}"
        if self.commit:
            text += f", commit {shown(self.commit[:12])}"
        if self.files:
            text += " changed " + ", ".join(shown(f) for f in self.files[:MAX_IDS])
        if self.failures:
            text += "; failing then: " + ", ".join(shown(f) for f in self.failures[:MAX_IDS])
        return text


def record_for(
    report: Report, kind: str, request: str, ci_signature: str = "", run_url: str | None = None
) -> RunRecord:
    # the record posted in the status comment (`line` shows each id as a code span) and, as
    # a whole, fenced for the model (`memory_text`)
    failures = report.rounds[-1].failures if report.rounds else []
    failing = [f.id.raw_for("run history") for f in failures]
    return RunRecord(
        kind=kind,
        request=" ".join(request.split())[:80],
        status=report.status,
        commit=report.commit or "" if report.status == Status.SUCCESS else "",
        files=report.files_changed[:MAX_IDS],
        failures=failing[:MAX_IDS],
        ci_signature=ci_signature,
        run_url=run_url or "",
    )


def parse_history(body: str) -> list[RunRecord]:
    """The records in a status comment; [] when there are none or they do not parse. The
    tool puts its marker last (and no text it relays can carry one: `neutralise` breaks every
    `<!--`), so the last marker is the one that counts."""
    found = HISTORY.findall(body or "")
    if not found:
        return []
    try:
        data = json.loads(found[-1])
        return [_record(item) for item in data if isinstance(item, dict)][-KEEP:]
    except (ValueError, TypeError):
        return []


def render_history(records: list[RunRecord]) -> str:
    """The comment's visible footer: the last few runs."""
    if not records:
        return ""
    records = records[-KEEP:]
    start = len(records) - min(len(records), SHOWN) + 1
    lines = [f"{i}. {r.line(posted=True)}" for i, r in enumerate(records[-SHOWN:], start=start)]
    return (
        "\n\n<details><summary>codegen-ci runs here</summary>\n\n"
        + "\n".join(lines)
        + "\n\n</details>"
    )


def history_marker(records: list[RunRecord]) -> str:
    """The hidden JSON of the last KEEP records, a marker the publisher attaches after the
    text (`upsert_status_comment(hidden=...)`); "" when there are none."""
    if not records:
        return ""
    data = json.dumps([asdict(r) for r in records[-KEEP:]], separators=(",", ":"))
    # JSON inside an HTML comment, on one line: `-`, `>`, `<` escaped so no text can close
    # the comment or open another (json.dumps has escaped the line breaks).
    data = data.replace("-", "\\u002d").replace(">", "\\u003e").replace("<", "\\u003c")
    return f"<!-- codegen-ci:history {data} -->"


def memory_text(records: list[RunRecord]) -> Untrusted:
    """Earlier runs for the model: their requests and failing tests are others' text."""
    return Untrusted("\n".join(f"{i}. {r.line()}" for i, r in enumerate(records[-SHOWN:], start=1)))


def read_history(gh: Forge, issue_number: int, marker: str) -> list[RunRecord]:
    """The history in the status comment. Anyone may paste the marker into a comment, so only
    one written by the tool's own identity (the token's user; `github-actions[bot]` for the
    Actions token) counts, as for the status comment itself: the history reaches the model and
    bounds the CI-fix attempts."""
    body = gh.own_comment_with(issue_number, marker)
    return parse_history(body) if body is not None else []


def _plain(text: str) -> str:
    return text


def _record(item: dict[str, Any]) -> RunRecord:
    fields = RunRecord.__dataclass_fields__
    values = {k: v for k, v in item.items() if k in fields}
    for key in ("files", "failures"):
        values[key] = [str(x) for x in values.get(key) or []][:MAX_IDS]
    for key in ("kind", "request", "status", "commit", "ci_signature", "run_url"):
        values[key] = str(values.get(key) or "")
    return RunRecord(**values)
