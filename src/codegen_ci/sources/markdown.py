"""Reading Markdown the way GitHub renders it, as far as triggers and settings need.

Fenced code (``` or ~~~, CommonMark's rules for opening and closing), indented code, quotes
and HTML comments are not prose: a trigger phrase there does not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def find_trigger(body: str, phrase: str) -> str | None:
    """The instruction after `phrase` at the start of a line, or None when no line has it.

    Only prose counts: lines in fenced code (``` or ~~~), indented code (four spaces or a
    tab), quotes (`> /codegen`) and HTML comments never trigger; the phrase must end at
    whitespace (`/codegenx` is not it). The instruction is the rest of that line and
    everything after it (people write the phrase, then a paragraph); "" when nothing
    follows, meaning "do what the issue says".
    """
    text = _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), body.replace("\r\n", "\n"))
    lines = text.split("\n")
    in_fence = _fence_lines(lines)
    # Four spaces or a tab of indentation make an indented code block: not prose.
    start = re.compile(r" {0,3}" + re.escape(phrase) + r"(?:[ \t]+(.*))?")
    for i, line in enumerate(lines):
        match = None if in_fence[i] else start.fullmatch(line)
        if match:
            return "\n".join([match.group(1) or "", *lines[i + 1 :]]).strip()
    return None


@dataclass(frozen=True)
class FencedBlock:
    info: str
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line (the last line when unclosed)
    body: str


_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def fenced_blocks(text: str) -> list[FencedBlock]:
    lines = text.split("\n")
    blocks: list[FencedBlock] = []
    opening: tuple[int, str, str] | None = None  # line index, fence, info string
    for i, line in enumerate(lines):
        match = _FENCE.fullmatch(line)
        if opening is None:
            if match and not (match[1][0] == "`" and "`" in match[2]):
                opening = (i, match[1], match[2].strip())
        elif match and match[1][0] == opening[1][0] and len(match[1]) >= len(opening[1]):
            if match[2].strip():  # a closing fence has no info string
                continue
            body = "\n".join(lines[opening[0] + 1 : i])
            blocks.append(FencedBlock(opening[2], opening[0], i, body))
            opening = None
    if opening is not None:
        body = "\n".join(lines[opening[0] + 1 :])
        blocks.append(FencedBlock(opening[2], opening[0], len(lines) - 1, body))
    return blocks


def _fence_lines(lines: list[str]) -> list[bool]:
    """Whether each line belongs to a fenced code block (fence lines included)."""
    flags = [False] * len(lines)
    for block in fenced_blocks("\n".join(lines)):
        for i in range(block.start, block.end + 1):
            flags[i] = True
    return flags
