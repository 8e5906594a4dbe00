"""Markdown as GitHub renders it, as far as the posted-text tests need: what lies outside
code spans and the tool's hidden markers is the part rendered as HTML, links and mentions."""

from __future__ import annotations

import re

# CommonMark: a code span is a run of n backticks up to the next run of exactly n.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_OWN_MARKER = re.compile(r"^<!-- codegen-ci.*-->$", re.M)


def outside_code(markdown: str) -> str:
    """`markdown` without the tool's marker lines and its code spans."""
    return _CODE_SPAN.sub("", _OWN_MARKER.sub("", markdown))
