"""The functions that make untrusted text inert where the tool puts it: a post (neutralise,
with_markers), a commit message (for_commit, quoted_lines) and a terminal (for_terminal)."""

from __future__ import annotations

import pytest

from codegen_ci.publish.markdown import code_span, neutralise, with_markers
from codegen_ci.security.inert_text import for_commit, for_terminal, quoted_lines

ZWJ = "\u200d"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]0;title\x07", "[U+001B]]0;title[U+0007]"),  # OSC 0, BEL-terminated
        ("\x1b]52;c;eA==\x1b\\", "[U+001B]]52;c;eA==[U+001B]\\"),  # OSC 52, ST-terminated
        ("\x9b31m", "[U+009B]31m"),  # the one-byte C1 CSI
        ("a\rb\x08\x7f", "a\nb[U+0008][U+007F]"),  # a lone CR is a line break, not a rewind
        ("file\u202etxt.exe \u2066x\u2069", "file[U+202E]txt.exe [U+2066]x[U+2069]"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
    ],
)
def test_for_terminal_shows_every_control_as_text(raw: str, shown: str) -> None:
    assert for_terminal(raw) == shown


def test_one_line_terminal_text_cannot_start_a_line_of_its_own() -> None:
    assert for_terminal("x\n::error::forged\r\n[ 1.0s] ok", one_line=True) == (
        "x⏎::error::forged⏎[ 1.0s] ok"
    )


def test_comment_openers_are_broken_in_prose_and_in_code_spans() -> None:
    forged = "<!-- codegen-ci:history [] -->"
    body = neutralise(f"{forged} and {code_span(forged)}")
    assert "<!--" not in body and body.count(f"<!{ZWJ}--") == 2


def test_only_the_tools_marker_shapes_are_attached() -> None:
    assert with_markers("text", head=["<!-- codegen-ci:status issue=3 -->"]) == (
        "<!-- codegen-ci:status issue=3 -->\ntext"
    )
    for bad in [
        "<!-- codegen-ci:status issue=3 --> <img src=x>",
        "<!-- other -->",
        "<!-- codegen-ci:history a\n-->",
    ]:
        with pytest.raises(ValueError, match="not a codegen-ci marker"):
            with_markers("text", tail=[bad])


def test_commit_text_closes_links_and_pings_nothing() -> None:
    text = for_commit("Fixes #2, closes o/r#3, GH-4, https://x.example/i/5 cc @alice a@b.c")
    assert text == (
        f"Fixes #{ZWJ}2, closes o/r#{ZWJ}3, GH-{ZWJ}4, https[:]//x.example/i/5 cc @{ZWJ}alice a@b.c"
    )
    assert quoted_lines("do it\nSigned-off-by: M <m@x>") == ["> do it", "> Signed-off-by: M <m@x>"]
