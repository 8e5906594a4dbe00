"""Untrusted text made safe for Markdown: a table cell with no HTML, formatting or links, and
inline code that its own backticks cannot break out of (for summaries, comments, PR bodies)."""

from __future__ import annotations

import re

from codegen_ci.publish.neutral import defang_links
from codegen_ci.security.inert_text import break_references

__all__ = ["code_span", "escape_cell"]

_MARKDOWN_SPECIALS = "\\`*_[]|~"


def escape_cell(text: str, *, links: bool = False) -> str:
    """Plain text for a Markdown table cell: no HTML, no formatting, no cell breaks, and no
    links or issue references unless `links` (for the tool's own URLs)."""
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in text)
    return text if links else break_references(defang_links(text))


def code_span(text: str) -> str:
    """Text as inline code that its own backticks, pipes or newlines cannot break out of."""
    text = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"{fence}{text}{fence}"
