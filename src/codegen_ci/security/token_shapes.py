"""Token shapes: patterns for credentials nobody registered with the redactor.

GitHub, OpenAI, AWS and Slack tokens, private key blocks, JWTs, `Authorization:` header
values, `user:password@` in URLs, `?access_token=` style query parameters, and git's
`x-access-token:` basic auth, decoded or as bare base64 (what `actions/checkout` leaves in
`.git/config`). `codegen_ci.security.redact` masks them; this module only says what they look like.

Speed: shapes are filtered by literals they must contain (`shapes_in`), and each begins with a
literal and looks behind it, so a run of token characters starts one attempt only.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Each token shape with the literals (lower-case) one of which any match contains. `redact`
# runs only the shapes whose literals occur in the text: a cheap `in` test per literal spares a
# regex pass that would stop at every "e", "s" and "a" of ordinary prose. Every shape begins
# with a literal and looks behind it, so a run of token characters starts one attempt only.
_B = "(?<![A-Za-z0-9_-]{})"  # `{}`: the shape's first character
SHAPES: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        "g" + _B.format("g") + r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})",
    ),
    (("sk-",), "s" + _B.format("s") + r"k-(?=[A-Za-z0-9_-]{0,200}[0-9])[A-Za-z0-9_-]{20,}"),
    (("akia", "asia"), r"A(?<![A-Z0-9]A)[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"),
    (("xox",), "x" + _B.format("x") + r"ox[baprs]-[A-Za-z0-9-]{10,}"),
    (("eyj",), "e" + _B.format("e") + r"yJ[A-Za-z0-9_-]++\.eyJ[A-Za-z0-9_-]++\.[A-Za-z0-9_-]*+"),
    # A private key block; an unterminated one (truncated output) is masked as far as its
    # base64 body goes. `\\` lets it also span JSON-escaped newlines.
    (
        ("private key-----",),
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\w+/=\s:,.\\-]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|(?![\w+/=\s:,.\\-]))",
    ),
    (
        ("authorization",),
        r"(?P<header>[Aa](?i:uthorization)[\"']?\s*[:=]\s*[\"']?\s*(?i:bearer|token|basic)\s+)"
        r"[^\s\"',;]+",
    ),
    (("://",), r"(?P<url>://[^\s/:@\"'<>]++:)[^\s/@\"'<>]++(?=@)"),
    # What actions/checkout leaves in `.git/config` (`http.<url>.extraheader`) and `git push`
    # sends: basic auth of `x-access-token:<token>`, decoded or as bare base64, whatever token.
    (("x-access-token:",), r"(?P<xat>x-access-token:)[^\s@\"'<>]+"),
    (("ec1hy2nlc3mtdg9rzw46",), r"eC1hY2Nlc3MtdG9rZW46[A-Za-z0-9+/=_-]*"),
    (
        ("token=", "secret=", "key=", "password=", "passwd="),
        r"(?P<query>[?&](?i:access_token|refresh_token|id_token|token|client_secret"
        r"|api_key|apikey|password|passwd)=)[^\s&#\"'<>]+",
    ),
)
ALL_SHAPES = tuple(range(len(SHAPES)))


@lru_cache(maxsize=128)
def shape_pattern(indices: tuple[int, ...]) -> re.Pattern[str]:
    return re.compile("|".join(SHAPES[i][1] for i in indices))


def shapes_in(text: str) -> tuple[int, ...]:
    lowered = text.lower()
    return tuple(i for i, (hints, _) in enumerate(SHAPES) if any(h in lowered for h in hints))


def kept_prefix(match: re.Match[str]) -> str:
    """The part of a shape match that stays visible (a header name, `scheme://user:`...)."""
    kept = match.groupdict()  # only the shapes that ran have groups
    return kept.get("header") or kept.get("url") or kept.get("query") or kept.get("xat") or ""
