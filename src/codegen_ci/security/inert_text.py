"""Untrusted text made inert where the tool puts it besides a post (`publish.markdown` does
posts): a commit message and a terminal or log.

Text from outside (issue and comment words, test ids and output, file names, the model's
tool-call arguments) carries controls meant for whatever shows it:

* for a terminal: escape sequences (ESC, CSI, OSC: window titles, clipboard writes with
  OSC 52, hyperlinks), other C0 and C1 controls (a carriage return that overwrites the line,
  a backspace), bidi overrides and isolates that reorder what is read. `for_terminal` shows
  each as `[U+XXXX]`; nothing but newline and tab passes, and with `one_line` a newline is
  shown as `⏎` (a line of ours cannot be followed by a forged one, nor by a workflow
  command such as `::add-mask::` that the Actions runner reads at the start of a line).
* for a commit message: the same controls, and what GitHub acts on when the commit lands:
  closing keywords with an issue reference (`Fixes #2`, `Closes other/repo#3`, an issue URL),
  @mentions, and trailer-like lines (`Signed-off-by:`, `Co-authored-by:`). `for_commit`
  breaks every reference and mention with a zero-width joiner after `#`, `GH-` or `@` (it
  reads the same, links and pings nothing), defangs links (`https[:]//`); `quoted_lines`
  starts every line of untrusted text with `> `, so none of it can be a trailer.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from codegen_ci.security.untrusted import Untrusted, _reveal

__all__ = [
    "ZWJ",
    "TerminalStream",
    "break_mentions",
    "break_references",
    "defang_links",
    "for_commit",
    "for_terminal",
    "guarded_streams",
    "quoted_lines",
    "raw_stream",
    "show_controls",
]

ZWJ = "\u200d"
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
_CANDIDATE = re.compile(r"[^\n\x20-\x7e]")
# A mention is `@` + a login or org/team, not inside a word (e-mail addresses, URLs).
_MENTION = re.compile(r"(?<![\w@/.:+-])@(?=[A-Za-z0-9])")
_LINK = re.compile(r"\b(https?|ftp|file)://|\bwww\.(?=\w)", re.IGNORECASE)
# An issue or pull request reference: `#2`, `other/repo#3`, `GH-4`.
_REFERENCE = re.compile(r"#(?=[0-9])|\b(GH-)(?=[0-9])", re.IGNORECASE)


def show_controls(text: str, *, keep: str = "\n\t") -> str:
    """Every control, format, private-use or separator character but those in `keep` shown
    as `[U+XXXX]` (CR LF and lone CR first become LF)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n") if "\n" in keep else text
    return _CANDIDATE.sub(lambda m: _visible(m[0], keep), text)


def break_mentions(text: str) -> str:
    """`@team` -> `@` + ZWJ + `team`: reads the same, notifies nobody."""
    return _MENTION.sub("@" + ZWJ, text)


def defang_links(text: str) -> str:
    """`https://x` -> `https[:]//x`, `www.x` -> `www[.]x`: GitHub makes no link of either."""
    return _LINK.sub(lambda m: f"{m[1]}[:]//" if m[1] else "www[.]", text)


def break_references(text: str) -> str:
    """`#2`, `other/repo#3`, `GH-4` -> `#` / `GH-` + ZWJ + number: reads the same, links
    nothing (GitHub would close the issue after a keyword, or list the post in its timeline)."""
    return _REFERENCE.sub(lambda m: (m[1] or "#") + ZWJ, text)


def for_terminal(text: str | Untrusted, *, one_line: bool = False) -> str:
    """Text safe to print: no control reaches the terminal (see the module's docstring)."""
    text = show_controls(_reveal(text), keep="\n\t")
    return text.replace("\n", "⏎") if one_line else text


def for_commit(text: str | Untrusted) -> str:
    """Untrusted text for a commit message: controls shown, links defanged, references and
    mentions broken."""
    text = defang_links(show_controls(_reveal(text), keep="\n"))
    return break_mentions(break_references(text))


def quoted_lines(text: str | Untrusted) -> list[str]:
    """Untrusted lines for a commit message body, each behind `> `: none is a trailer."""
    return [f"> {line}".rstrip() for line in for_commit(text).split("\n")]


def _visible(char: str, keep: str) -> str:
    if char in keep or unicodedata.category(char) not in _CONTROL_CATEGORIES:
        return char
    return f"[U+{ord(char):04X}]"


class TerminalStream:
    """A text stream that passes everything written through `for_terminal`: installed over
    `sys.stdout` and `sys.stderr` while a command runs (`guarded_streams`), so no print,
    echo, log line or error message of the process can carry a control to the terminal.
    Only rich's console and the Actions workflow commands (`ActionsIO`) write to the stream
    beneath (`raw`): their syntax is ours, and the text they carry has passed `for_terminal`.

    Under GitHub Actions (`GITHUB_ACTIONS=true`) the runner reads a line that starts with `::`
    as a workflow command; there a line written through this stream that starts so (after
    blanks) has its first `:` shown as `[U+003A]`, so no text from outside (a test id, a
    task in dry-run output) can annotate, mask or set anything."""

    def __init__(self, raw: TextIO, *, workflow_commands: bool | None = None) -> None:
        self.raw = raw
        if workflow_commands is None:
            workflow_commands = os.environ.get("GITHUB_ACTIONS") == "true"
        self.workflow_commands = workflow_commands
        self._line_start = True

    def write(self, text: str) -> int:
        shown = for_terminal(text)
        if self.workflow_commands:
            shown = self._defuse_commands(shown)
        self.raw.write(shown)
        return len(text)

    def _defuse_commands(self, text: str) -> str:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if i == 0 and not self._line_start:
                continue
            body = line.lstrip(" \t")
            if body.startswith("::"):
                lines[i] = line[: len(line) - len(body)] + "[U+003A]" + body[1:]
        self._line_start = text.endswith("\n") or (self._line_start and not text)
        return "\n".join(lines)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:
        return str(getattr(self.raw, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return bool(getattr(self.raw, "closed", False))


def raw_stream(stream: TextIO) -> TextIO:
    """The stream beneath a `TerminalStream` (for rich's console), else `stream` itself."""
    return stream.raw if isinstance(stream, TerminalStream) else stream


@contextmanager
def guarded_streams() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` wrapped in `TerminalStream` for the block."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, TerminalStream):
        sys.stdout = TerminalStream(sys.stdout)
    if not isinstance(sys.stderr, TerminalStream):
        sys.stderr = TerminalStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
