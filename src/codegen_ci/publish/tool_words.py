"""The tool's own words in a post: a reason, a hint, a verdict (`proof.reason`,
`changed_lines.reason`, a runner's JUnit hint), which the gate writes as a `str` with its
commands in backticks (``run `npm install --save-dev jest-junit` ``) and the local log it
wrote (`(see coverage/logs/coverage.log)`).

`tool_words` keeps their meaning in the rendered Markdown: each backticked piece becomes a
real code span (`code_span`, which nothing inside can break out of), the text around it is
escaped like any prose (`escape_md`), and a log path of the output directory, which a reader
of the pull request cannot open, is named as a file of the run's output (the action uploads the
output directory as the workflow run's artifact; a run from a terminal keeps it where
`--output-dir` says, and the terminal shows the plain path). Text that is not
the tool's (`Untrusted`) never comes here: it is escaped whole by `escape_md`.
"""

from __future__ import annotations

import re

from codegen_ci.publish.markdown import code_span, escape_md

__all__ = ["tool_words"]

_CODE = re.compile(r"`([^`\n]+)`")
# `(see coverage/logs/coverage.log)`, `(see proof/logs)`, `see baseline/logs`: a path under a
# folder of the output directory that holds the logs of one phase
_LOCAL_LOG = re.compile(r"\bsee ((?:[a-z_-]+/)?logs(?:/[\w.-]+)?)")


def tool_words(text: str, limit: int = 300) -> str:
    """The tool's `text` for one line of a post: its backticked commands as code, the rest
    escaped, the output directory's log paths named as files of the run's artifact."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    # no parentheses of its own: the path is usually in the tool's (`(see coverage/logs/...)`)
    text = _LOCAL_LOG.sub(r"see `\1` in the run's output or, in Actions, its artifact", text)
    pieces = _CODE.split(text)  # prose, code, prose, code, ..., prose
    shown = []
    for n, piece in enumerate(pieces):
        if n % 2:
            shown.append(code_span(piece))
        elif piece:
            # escape_md strips: keep the spaces that part a piece from its code spans
            lead = " " if piece[0] == " " else ""
            tail = " " if piece[-1] == " " and piece.strip() else ""
            shown.append(lead + escape_md(piece, len(piece)) + tail)
    return "".join(shown)
