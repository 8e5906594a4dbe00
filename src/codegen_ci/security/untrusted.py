"""Untrusted text (issue bodies, comments, commit messages, file contents, test output) is data.

`clean_untrusted` makes the model see what a maintainer reading the rendered issue sees, so
instructions hidden from the human (HTML comments, hidden elements, invisible characters)
never reach the model. It is deliberately lossy outside code and faithful inside it:

* Removed everywhere: invisible characters (Unicode categories Cc, Cf, Co, Cn and Cs except
  tab and newline: zero-width spaces and joiners, bidi controls, soft hyphens, TAG characters),
  the variation selectors of the supplement plane, runs of more than one variation selector
  (the "emoji smuggling" carrier) and Hangul fillers. CR LF and lone CR become LF.
* Outside code blocks and code spans (inside them HTML is shown literally, so it is visible):
  HTML comments (an unterminated one runs to the end of the text), markdown comment idioms
  (`[//]: # (...)`), elements a browser would not show (`hidden`, `aria-hidden="true"`,
  `display:none`, `visibility:hidden`, `<script>`, `<style>`, ...) with their content, and
  character references to invisible characters (`&#8203;`). Other known HTML tags keep their
  name but lose every attribute (`alt`, `title` and `data-*` are where text hides); `<img>`
  goes entirely. `<details>` is not hidden: its content is one click away for the human too.
  Unknown tags (`Vec<String>`) are left alone.
* No NFKC normalisation: it would rewrite code (`ﬁ`, full-width and superscript characters,
  string literals) and change what the repository's own text means.

`clean_untrusted` is idempotent: it repeats until nothing changes (removals can only join text).

Fencing and truncation live in `codegen_ci.security.fence`; normalising command output in
`codegen_ci.security.output_normalise`.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs"})
# Not format characters by category, but invisible or used to smuggle data.
_INVISIBLE_EXTRA = re.compile("[\U000e0100-\U000e01ef\u115f\u1160\u3164\uffa0]")
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")
_VS_RUN = re.compile("([\ufe00-\ufe0f])[\ufe00-\ufe0f]+")

_TOKEN = re.compile(
    r"""
      (?P<fence>^[ ]{0,3}(?P<fchars>`{3,}(?![^\n]*`)|~{3,})[^\n]*)
    | (?P<refcomment>^[ ]{0,3}\[[^\]\n]*\]:[ \t]*(?:\#|<>)[^\n]*(?:\n|$))
    | (?P<comment><!--)
    | (?P<code>(?<!`)(?P<ticks>`+)[^\n]+?(?<!`)(?P=ticks)(?!`))
    | (?P<tag><(?P<close>/)?(?P<name>[A-Za-z][A-Za-z0-9-]*)
               (?P<attrs>(?:[^<>"']|"[^"]*"|'[^']*')*+)>)
    | (?P<entity>&(?:\#[xX][0-9a-fA-F]{1,6}|\#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});)
    """,
    re.MULTILINE | re.VERBOSE,
)
_ATTR = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'<>]+))?""")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KNOWN_TAGS = _words(
    """a abbr address area article aside audio b bdi bdo blockquote body br button canvas
    caption center cite code col colgroup data dd del details dfn dialog div dl dt em embed
    fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 h7 h8 head header hr html i
    iframe img input ins kbd label legend li link main mark math meta meter nav noscript object
    ol optgroup option output p param picture pre progress q rp rt ruby s samp script section
    select small source span strike strong style sub summary sup svg table tbody td template
    textarea tfoot th thead time title tr track tt u ul var video wbr"""
)
_VOID_TAGS = _words("area base br col embed hr img input link meta param source track wbr")
_HIDDEN_TAGS = _words("script style template noscript iframe object head title")


@lru_cache(maxsize=4096)
def _is_invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return category in _INVISIBLE_CATEGORIES or _INVISIBLE_EXTRA.match(char) is not None


def strip_invisible(text: str) -> str:
    """Drop invisible characters and collapse runs of variation selectors."""
    text = _CANDIDATE.sub(lambda m: "" if _is_invisible(m[0]) else m[0], text)
    return _VS_RUN.sub(r"\1", text)


def _is_hidden(name: str, attrs: str) -> bool:
    if name in _HIDDEN_TAGS:
        return True
    found = {key.lower(): value.strip("\"'").lower() for key, value in _ATTR.findall(attrs)}
    style = re.sub(r"\s+", "", found.get("style", ""))
    return (
        "hidden" in found
        or found.get("aria-hidden", "false") != "false"
        or "display:none" in style
        or "visibility:hidden" in style
    )


class _Scanner:
    """One pass over markdown: code is copied, hidden things dropped, tags stripped."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.hidden: str | None = None  # name of the open hidden element, if any
        self.depth = 0

    def emit(self, piece: str) -> None:
        if self.hidden is None:
            self.out.append(piece)

    def run(self) -> str:
        pos = 0
        while (match := _TOKEN.search(self.text, pos)) is not None:
            self.emit(self.text[pos : match.start()])
            pos = self.token(match)
        self.emit(self.text[pos:])
        return "".join(self.out)

    def token(self, match: re.Match[str]) -> int:
        """Handle one token; return where scanning continues."""
        kind = match.lastgroup
        if kind == "fence":
            chars = match["fchars"]
            closing = re.compile(rf"^[ ]{{0,3}}{chars[0]}{{{len(chars)},}}[ \t]*$", re.MULTILINE)
            found = closing.search(self.text, match.end())
            end = found.end() if found else len(self.text)
            self.emit(self.text[match.start() : end])
            return end
        if kind == "comment":
            rest = self.text[match.end() : match.end() + 2]
            if rest.startswith(">") or rest == "->":  # `<!-->` and `<!--->` are empty comments
                return match.end() + rest.index(">") + 1
            end = self.text.find("-->", match.end())
            return len(self.text) if end < 0 else end + 3
        if kind == "entity":
            decoded = html.unescape(match[0])
            if decoded == match[0] or not all(map(_is_invisible, decoded)):
                self.emit(match[0])
        elif kind == "tag":
            self.tag(
                match["name"].lower(), match["attrs"], closing=bool(match["close"]), raw=match[0]
            )
        elif kind == "code":
            self.emit(match[0])
        return match.end()  # refcomment: dropped

    def tag(self, name: str, attrs: str, *, closing: bool, raw: str) -> None:
        paired = name not in _VOID_TAGS and not attrs.rstrip().endswith("/")
        if self.hidden is not None:
            if name == self.hidden and paired:
                self.depth += -1 if closing else 1
                if self.depth == 0:
                    self.hidden = None
        elif not closing and _is_hidden(name, attrs):
            if paired:
                self.hidden, self.depth = name, 1
        elif name not in _KNOWN_TAGS:
            self.emit(raw)
        elif name != "img":  # an image's only text is its alt/title
            self.emit(f"</{name}>" if closing else f"<{name}>")


def _clean_once(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _Scanner(strip_invisible(text)).run()


def clean_untrusted(text: str) -> str:
    """Text as a human sees it rendered: hidden HTML and invisible characters removed."""
    previous = None
    while text != previous:
        previous, text = text, _clean_once(text)
    return text
