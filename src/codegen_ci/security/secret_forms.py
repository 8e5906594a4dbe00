"""The forms a registered secret takes on its way out, so the redactor can mask each of them.

JSON- and URL-escaped, and base64. Base64 follows the GitHub Actions runner
(`ValueEncoders.Base64StringEscapeShift*` and its ADR 0297): a secret inside a larger blob,
e.g. `base64("x-access-token:" + token)`, starts at one of three byte alignments, so for each
shift 0, 1, 2 we register the encoding of the whole 3-byte groups only; those characters do not
depend on what surrounds the secret. The plain padded encoding is registered too, so
`base64(secret)` on its own is masked completely. Both alphabets (standard and URL-safe).

Derived forms shorter than `MIN_FORM_LENGTH` are skipped: a 4-character base64 fragment occurs
by chance in any larger blob.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

MIN_FORM_LENGTH = 8


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
    """`value` itself and its escaped and encoded forms worth masking."""
    forms = {value, json.dumps(value)[1:-1], quote(value, safe=""), quote_plus(value)}
    forms |= base64_forms(value)
    return {form for form in forms if len(form) >= MIN_FORM_LENGTH or form == value}
