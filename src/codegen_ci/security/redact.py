"""One redactor for every text codegen-ci emits: tool results sent to the model, the transcript,
the report, the PR body, comments, the step summary and logs.

It masks two things with `***`:

* **Registered secrets** (`add_secret`, `add_from_env`) and the forms they take on their way
  out (`secret_forms`: JSON- and URL-escaped, and base64 at every alignment).
* **Token-shaped strings** nobody registered (`SHAPES`: GitHub, OpenAI, AWS and Slack tokens,
  private keys, JWTs, auth headers, URL passwords, `?access_token=` style query parameters,
  and git's `x-access-token:` basic auth, decoded or as bare base64: what `actions/checkout`
  leaves in `.git/config`).

Values shorter than `MIN_SECRET_LENGTH` are ignored: masking `true`, `main` or `admin`
everywhere would make logs and diffs unreadable while protecting nothing (no real credential is
that short).

Speed (tool results and logs can be megabytes): registered forms are one alternation, longest
first so a secret wins over its own prefix, compiled when a secret is added; `redact` first asks
`form in text` (a C substring search) and runs the alternation of only the forms present, which
for most texts is none. Token shapes are filtered the same way by literals they must contain
(`shapes_in`), and each begins with a literal and looks behind it, so a run of token
characters starts one attempt only. Every pass is linear in the size of the text.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from codegen_ci.security.safe_env import is_secret_name

MIN_SECRET_LENGTH = 6
WHOLE_FILE_BYTES = 16 * 1024 * 1024
MASK = "***"
MIN_FORM_LENGTH = 8  # a derived form shorter than this occurs by chance in any larger blob

# Names whose values are secrets even if the name rule ever changes.
KNOWN_SECRET_NAMES = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "OPENAI_API_KEY",
    "INPUT_GITHUB-TOKEN",
    "INPUT_GITHUB_TOKEN",
    "INPUT_OPENAI-API-KEY",
    "INPUT_OPENAI_API_KEY",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)


def base64_forms(value: str) -> set[str]:
    """The padded encoding and the three alignment-stable ones, in both alphabets."""
    raw = value.encode()
    forms = {base64.b64encode(raw).decode()}
    for shift in range(3):
        chunk = raw[shift:]
        chunk = chunk[: len(chunk) // 3 * 3]  # whole groups only: stable whatever follows
        if chunk:
            forms.add(base64.b64encode(chunk).decode())
    forms |= {form.replace("+", "-").replace("/", "_") for form in forms}
    return forms


def secret_forms(value: str) -> set[str]:
    """`value` itself and its escaped and encoded forms worth masking: the forms a registered
    secret takes on its way out.

    JSON- and URL-escaped, and base64. Base64 follows the GitHub Actions runner
    (`ValueEncoders.Base64StringEscapeShift*` and its ADR 0297): a secret inside a larger blob,
    e.g. `base64("x-access-token:" + token)`, starts at one of three byte alignments, so for each
    shift 0, 1, 2 we register the encoding of the whole 3-byte groups only; those characters do not
    depend on what surrounds the secret. The plain padded encoding is registered too, so
    `base64(secret)` on its own is masked completely. Both alphabets (standard and URL-safe).

    Derived forms shorter than `MIN_FORM_LENGTH` are skipped: a 4-character base64 fragment occurs
    by chance in any larger blob.
    """
    forms = {value, json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value)}
    forms |= base64_forms(value)
    return {form for form in forms if len(form) >= MIN_FORM_LENGTH or form == value}


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


# Every shape's literals in one alternation: most texts (each string of a message, a tool
# result, a log line) hold none, and one search answers that for all shapes at once.
_ANY_HINT = re.compile("|".join(re.escape(h) for hints, _ in SHAPES for h in hints))


def shapes_in(text: str) -> tuple[int, ...]:
    lowered = text.lower()
    if _ANY_HINT.search(lowered) is None:
        return ()
    return tuple(i for i, (hints, _) in enumerate(SHAPES) if any(h in lowered for h in hints))


def kept_prefix(match: re.Match[str]) -> str:
    """The part of a shape match that stays visible (a header name, `scheme://user:`...)."""
    kept = match.groupdict()  # only the shapes that ran have groups
    return kept.get("header") or kept.get("url") or kept.get("query") or kept.get("xat") or ""


@lru_cache(maxsize=128)
def _alternation(forms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, forms)))


def _mask_shape(match: re.Match[str]) -> str:
    return kept_prefix(match) + MASK


class Redactor:
    """Masks registered secrets and token-shaped strings. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._forms: set[str] = set()
        self._ordered: tuple[str, ...] = ()  # every form, longest first

    @property
    def secrets(self) -> frozenset[str]:
        """The registered values (without their derived forms)."""
        return frozenset(self._secrets)

    def add_secret(self, value: str) -> None:
        """Register `value` (and each of its lines, and its stripped form) and its encodings."""
        candidates = {value, value.strip(), *(line.strip() for line in value.splitlines())}
        new = {c for c in candidates if len(c) >= MIN_SECRET_LENGTH} - self._secrets
        if not new:
            return
        with self._lock:
            self._secrets |= new
            for secret in new:
                self._forms |= secret_forms(secret)
            self._ordered = tuple(sorted(self._forms, key=lambda form: (-len(form), form)))
            _alternation(self._ordered)  # compiled here, not in the first (hot) redact

    def add_from_env(self, env: Mapping[str, str]) -> None:
        """Register the values of secret-looking and known secret variables, and any
        `user:password@` password found in a URL-valued variable (PIP_INDEX_URL and the like)."""
        for name, value in env.items():
            if name in KNOWN_SECRET_NAMES or is_secret_name(name):
                self.add_secret(value)
            for match in shape_pattern(ALL_SHAPES).finditer(value):
                if match["url"]:  # the whole pattern has every group
                    self.add_secret(match[0][len(match["url"]) :])

    def redact(self, text: str) -> str:
        ordered = self._ordered  # one read: a concurrent add_secret swaps in a new tuple
        present = tuple(form for form in ordered if form in text)
        if present:
            text = _alternation(present).sub(MASK, text)
        shapes = shapes_in(text)
        return shape_pattern(shapes).sub(_mask_shape, text) if shapes else text

    def redact_file(self, path: Path) -> None:
        """Rewrite a text file (a command's log) redacted; big ones line by line, in constant
        memory (a secret never spans lines; a private key block is still masked per line by the
        registered values, though not by its shape). JSON and JSON Lines files are redacted
        value by value (`redact_json_text`), so they still parse afterwards."""
        if not path.is_file():
            return
        if path.suffix in (".json", ".jsonl") and path.stat().st_size <= WHOLE_FILE_BYTES:
            text = path.read_bytes().decode("utf-8", errors="replace")
            redacted = self.redact_json_text(text, lines=path.suffix == ".jsonl")
            if redacted != text:
                path.write_text(redacted, encoding="utf-8")
            return
        if path.stat().st_size <= WHOLE_FILE_BYTES:
            text = path.read_bytes().decode("utf-8", errors="replace")
            redacted = self.redact(text)
            if redacted != text:
                path.write_text(redacted, encoding="utf-8")
            return
        tmp = path.with_name(path.name + ".redacting")
        with path.open("rb") as src, tmp.open("w", encoding="utf-8") as dst:
            for line in src:
                dst.write(self.redact(line.decode("utf-8", errors="replace")))
        tmp.replace(path)

    def redact_tree(self, root: Path) -> None:
        """Redact every file under `root` in place (an output directory before upload)."""
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.redact_file(path)

    def redact_obj(self, obj: Any) -> Any:
        """Redact every string inside dicts, lists and tuples (keys too); others unchanged."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return {self.redact_obj(key): self.redact_obj(value) for key, value in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(self.redact_obj(item) for item in obj)
        return obj

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        """`json.dumps` of `obj` with every string redacted first: masking the serialised text
        could cut an escape sequence (`\\"` after a token) and leave invalid JSON."""
        return json.dumps(self.redact_obj(obj), **kwargs)

    def redact_json_text(self, text: str, *, lines: bool = False) -> str:
        """Redact a JSON document (or JSON Lines) value by value; text that does not parse
        is redacted as plain text."""
        if not lines:
            try:
                return self.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
            except ValueError:
                return self.redact(text)
        out = []
        for line in text.splitlines(keepends=True):
            try:
                data = json.loads(line) if line.strip() else None
            except ValueError:
                out.append(self.redact(line))
                continue
            out.append(line if data is None else self.dumps(data, ensure_ascii=False) + "\n")
        return "".join(out)

    def mask_commands(self) -> list[str]:
        """`::add-mask::` workflow commands for every registered value, one per line of it.

        The runner derives the encoded forms itself. `%`, CR and LF are escaped as the runner
        expects in command data (it unescapes before registering the mask).
        """
        lines = {
            line
            for secret in self._secrets
            for line in secret.splitlines()
            if len(line.strip()) >= MIN_SECRET_LENGTH
        }
        return [f"::add-mask::{_escape_command_data(line)}" for line in sorted(lines)]


def _escape_command_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


REDACTOR = Redactor()
"""The process-wide redactor: register secrets once at start-up, redact everything on output.
Every module that emits text uses it directly; no redactor is passed around."""


def redact(text: str) -> str:
    return REDACTOR.redact(text)


def redact_obj(obj: Any) -> Any:
    return REDACTOR.redact_obj(obj)
