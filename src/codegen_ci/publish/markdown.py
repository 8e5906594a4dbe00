"""Text codegen-ci posts (comments, pull request titles and bodies, the job summary) carries
untrusted pieces: test output, test ids, file names, the model's words, issue text. Two layers
keep them inert:

* where a piece is placed, it is escaped for its spot (`escape_md` for prose, `escape_cell`
  for a table cell, `code_span` and `code_block` for code): no HTML, no Markdown, and
  `defang_links` so no link is made of it;
* the whole body then passes `neutralise` before it is sent: every invisible or control
  character (bidi overrides such as U+202E, isolates U+2066-2069, zero-width characters, other
  format and control characters) is shown as `[U+XXXX]` instead of silently reordering or
  hiding text, and every @mention is broken with a zero-width joiner after the `@`, so no
  user or team is notified by text the tool relays (`@team` reads the same, pings nobody);
  and every `<!--` is broken the same way (`<!` + zero-width joiner + `--`), in code spans
  too: it reads the same and opens no HTML comment, so no text the tool relays can hide
  anything or carry one of the tool's own hidden markers (`<!-- codegen-ci:... -->`).

The tool's markers are attached after `neutralise`, by `with_markers`, which accepts only
their fixed shape: they are the only `<!--` in anything the tool posts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codegen_ci.security.inert_text import (
    ZWJ,
    break_mentions,
    break_references,
    defang_links,
    show_controls,
)
from codegen_ci.security.untrusted import Untrusted, _reveal

__all__ = [
    "OWN_MARKER",
    "ZWJ",
    "code_block",
    "code_span",
    "defang_links",
    "escape_cell",
    "escape_md",
    "neutralise",
    "with_markers",
]

_COMMENT_OPEN = "<!--"
# The tool's own hidden markers: `<!-- codegen-ci -->`, `<!-- codegen-ci:status issue=3 -->`,
# `<!-- codegen-ci:history [JSON] -->` (the JSON has `-`, `<` and `>` escaped).
OWN_MARKER = re.compile(r"<!-- codegen-ci(?::[a-z]+(?: [^\n>-][^\n>]*?)?)? -->")
_MARKDOWN_SPECIALS = "\\`*_[]|~"


# -- the whole body ----------------------------------------------------------------------


def neutralise(body: str | Untrusted) -> str:
    """A whole body, ready to post: controls made visible, mentions and `<!--` broken."""
    body = show_controls(_reveal(body), keep="\n\t").replace(_COMMENT_OPEN, "<!" + ZWJ + "--")
    return break_mentions(body)


def with_markers(body: str, head: Sequence[str] = (), tail: Sequence[str] = ()) -> str:
    """A neutralised `body` with the tool's own hidden markers before (`head`) and after it
    (`tail`). A marker must have the fixed shape of one (ValueError otherwise): whatever
    the text between, these are the only HTML comments in the post."""
    for marker in (*head, *tail):
        if not OWN_MARKER.fullmatch(marker):
            raise ValueError(f"not a codegen-ci marker: {marker[:80]!r}")
    return "\n".join([*head, body, *tail])


# -- one piece, escaped for its spot -------------------------------------------------------


def escape_md(text: str | Untrusted, limit: int = 300) -> str:
    """Prose on one line with every markup character escaped, and no link or issue
    reference made of it."""
    text = _reveal(text).replace("\r", " ").replace("\n", " ").strip()
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return break_references(defang_links(re.sub(r"([\\`*_{}\[\]|#!~])", r"\\\1", text)))


def escape_cell(text: str | Untrusted, *, links: bool = False) -> str:
    """Plain text for a Markdown table cell: no HTML, no formatting, no cell breaks, and no
    links or issue references unless `links` (for the tool's own URLs)."""
    text = " ".join(_reveal(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in text)
    return text if links else break_references(defang_links(text))


def code_span(text: str | Untrusted) -> str:
    """Text as inline code that its own backticks, pipes or newlines cannot break out of."""
    text = " ".join(_reveal(text).split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"{fence}{text}{fence}"


def code_block(text: str | Untrusted) -> str:
    """`text` fenced so that no backticks inside it can close the block."""
    text = _reveal(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
