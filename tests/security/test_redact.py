from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from codegen_ci.security.redact import REDACTOR, SHAPES, Redactor, redact, redact_obj, shapes_in

# Fake tokens are assembled at run time so no token-shaped literal sits in the source.
GHP = "ghp_" + "A1b2C3d4" * 5
GHS = "ghs_" + "Zz09" * 10
PAT = "github_pat_" + "11ABCDEFG0" + "1" * 12 + "_" + "aB3" * 20
OPENAI = "sk-" + "T3BlbkFJ" * 6
OPENAI_PROJECT = "sk-proj-" + "Ab_9-xY2" * 8
AWS = "AKIA" + "IOSFODNN7EXAMPL"[:15] + "E"
SLACK = "xoxb-" + "1234567890" + "-" + "abcDEF123456"
JWT = (
    ".".join(
        base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
        for part in ({"alg": "HS256", "typ": "JWT"}, {"sub": "1234567890"})
    )
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAvbXwV2mfGQ7P9Qm0z+e8e1yEw6rZ4Yy7n3Ygs8P1Hq7m3h1n\n"
    "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n"
    "k1Zq3Vb9/8u+=\n"
    "-----END RSA PRIVATE KEY-----"
)


def canary() -> str:
    """A fresh secret for each test, as random as a real token."""
    return "canary-" + secrets.token_urlsafe(24)


def fresh(*values: str) -> Redactor:
    redactor = Redactor()
    for value in values:
        redactor.add_secret(value)
    return redactor


# --- registered secrets -------------------------------------------------------------------


def test_plain_secret_is_masked_everywhere_it_occurs() -> None:
    secret = canary()
    text = f"token={secret}\nagain: {secret}{secret}\n"
    assert fresh(secret).redact(text) == "token=***\nagain: ******\n"


def test_text_without_secrets_is_returned_unchanged() -> None:
    text = "def f(x):\n    return x  # 2f3e1c0b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f\n"
    assert fresh(canary()).redact(text) == text
    assert Redactor().redact(text) == text


def test_values_shorter_than_six_characters_are_ignored() -> None:
    redactor = fresh("true", "admin", "main")
    assert redactor.secrets == frozenset()
    assert redactor.redact("admin on main is true") == "admin on main is true"
    assert fresh("abcdef").redact("xabcdefx") == "x***x"


def test_longer_secret_wins_over_a_registered_prefix_of_it() -> None:
    short = canary()
    long = short + "-and-more-secret"
    assert fresh(short, long).redact(f"[{long}]") == "[***]"


def test_each_line_and_the_stripped_value_are_registered() -> None:
    first, second = canary(), canary()
    redactor = fresh(f"  {first}\n{second}\n")
    assert redactor.redact(f"a {first} b {second} c") == "a *** b *** c"


def test_url_encoded_and_json_escaped_forms_are_masked() -> None:
    secret = 'p@ss/w0rd+"quoted" & more=' + secrets.token_hex(4)
    redactor = fresh(secret)
    for form in (quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]):
        assert redactor.redact(f"<{form}>") == "<***>"


def test_base64_of_the_secret_alone_is_masked_completely() -> None:
    secret = canary()
    redactor = fresh(secret)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        blob = encode(secret.encode()).decode()
        assert redactor.redact(f"data {blob} end") == "data *** end"
        assert redactor.redact(f"data {blob.rstrip('=')} end") == "data *** end"


@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc", "x-access-token:", "user:"])
@pytest.mark.parametrize("suffix", ["", "\n", "z", "zz", "-trailing data"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_secret_embedded_in_a_base64_blob_is_masked_at_every_alignment(
    prefix: str, suffix: str, encode: Callable[[bytes], bytes]
) -> None:
    secret = "s3cr3t/+?>" + secrets.token_urlsafe(18)  # '/', '+', '?' exercise both alphabets
    blob = encode((prefix + secret + suffix).encode()).decode()
    redacted = fresh(secret).redact(blob)
    assert "***" in redacted
    # What survives is the encoding of the prefix and suffix plus at most the partial
    # 4-character groups at each boundary: the secret's own characters are gone.
    survivors = redacted.replace("***", "")
    context = len(encode(prefix.encode())) + len(encode(suffix.encode()))
    assert len(survivors) <= context + 8


def test_basic_auth_header_built_from_the_secret_is_masked() -> None:
    token = GHS + secrets.token_hex(2)
    header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    redacted = fresh(token).redact(f"extraheader = AUTHORIZATION: basic {header}")
    assert redacted == "extraheader = AUTHORIZATION: basic ***"
    # Even without the header's name, the secret's part of the blob is gone.
    assert "***" in fresh(token).redact(header)


def test_add_from_env_registers_secret_looking_and_known_names_only() -> None:
    token, key, password, dsn_password = canary(), canary(), canary(), canary()
    redactor = Redactor()
    redactor.add_from_env(
        {
            "GITHUB_TOKEN": token,
            "INPUT_OPENAI-API-KEY": key,
            "DATABASE_PASSWORD": password,
            "PIP_INDEX_URL": f"https://user:{dsn_password}@pypi.example.com/simple",
            "HOME": "/home/runner",
            "GITHUB_REPOSITORY": "octo/hello-world",
            "CI": "true",
        }
    )
    assert redactor.secrets == {token, key, password, dsn_password}
    text = f"{token} {key} {password} {dsn_password} /home/runner octo/hello-world"
    assert redactor.redact(text) == "*** *** *** *** /home/runner octo/hello-world"


def test_secrets_property_is_a_snapshot() -> None:
    redactor = fresh("first-secret")
    snapshot = redactor.secrets
    redactor.add_secret("second-secret")
    assert snapshot == {"first-secret"}
    assert redactor.secrets == {"first-secret", "second-secret"}


def test_concurrent_registration_and_redaction() -> None:
    redactor = Redactor()
    values = [canary() for _ in range(40)]

    def register(chunk: list[str]) -> None:
        for value in chunk:
            redactor.add_secret(value)
            redactor.redact(value * 3)

    threads = [threading.Thread(target=register, args=(values[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert redactor.redact(" ".join(values)) == " ".join(["***"] * len(values))


# --- token shapes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token {GHP} used", "token *** used"),
        (f"GH_TOKEN={GHS}", "GH_TOKEN=***"),
        (f"{PAT}", "***"),
        (f"key: {OPENAI}.", "key: ***."),
        (f"'{OPENAI_PROJECT}'", "'***'"),
        (f"aws {AWS} id", "aws *** id"),
        (f"slack {SLACK}", "slack ***"),
        (f"jwt={JWT};", "jwt=***;"),
        ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer ***"),
        ('{"Authorization": "token 0123456789abcdef"}', '{"Authorization": "token ***"}'),
        ("-H 'authorization: Basic dXNlcjpwYXNz'", "-H 'authorization: Basic ***'"),
        (
            "git push https://x-access-token:s3cr3tvalue@github.com/o/r.git",
            "git push https://x-access-token:***@github.com/o/r.git",
        ),
        ("postgres://app:hunter2@db:5432/app", "postgres://app:***@db:5432/app"),
        ("GET /cb?code=1&access_token=abc123def&x=1", "GET /cb?code=1&access_token=***&x=1"),
        (f"{PEM}\nafter", "***\nafter"),
        (json.dumps({"key": PEM}), '{"key": "***"}'),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAS", "***"),
    ],
)
def test_token_shaped_strings_are_masked(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "sk-learn-compatible-estimator-module",
        "TOKENIZERS_PARALLELISM=false",
        "https://github.com:443/octo/hello",
        "git@github.com:octo/hello.git",
        "https://user@example.com/path",
        "commit 2f3e1c0b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f",
        "ghp_tooShort",
        "the authorization failed: check the docs",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
        "Token(kind='NAME', token=ident)",
        "see https://example.com/?page=2&sort=asc",
    ],
)
def test_ordinary_text_is_not_masked(text: str) -> None:
    assert Redactor().redact(text) == text


def test_token_shapes_inside_longer_runs_are_not_mangled() -> None:
    text = "my_ghp_" + "a" * 40  # part of an identifier, not a token on its own
    assert Redactor().redact(text) == text


def test_redaction_is_idempotent() -> None:
    secret = canary()
    redactor = fresh(secret)
    text = f"{secret} {GHP} Authorization: Bearer xyz https://u:p4ss@h/ {PEM}"
    once = redactor.redact(text)
    assert redactor.redact(once) == once


def test_megabytes_of_text_are_redacted_in_one_linear_pass() -> None:
    secret = canary()
    redactor = fresh(secret, *(canary() for _ in range(20)))
    line = "E   AssertionError: assert 3 == 4  # see https://example.com/a?b=c eyJ sk- ghp_ x\n"
    filler = line * (5_000_000 // len(line))
    text = filler + secret + base64.b64encode(f"user:{secret}".encode()).decode() + filler
    redacted = redactor.redact(text)
    assert secret not in redacted
    assert redacted.count("***") == 2
    assert redacted.startswith(filler)
    assert redacted.endswith(filler)


# --- objects, masks, the shared instance -------------------------------------------------


def test_redact_obj_walks_dicts_lists_and_tuples() -> None:
    secret = canary()
    redactor = fresh(secret)
    message = {
        "role": "tool",
        "content": f"value {secret}",
        "nested": [{"args": (secret, 3, None)}, True, 1.5],
        secret: "key too",
    }
    assert redactor.redact_obj(message) == {
        "role": "tool",
        "content": "value ***",
        "nested": [{"args": ("***", 3, None)}, True, 1.5],
        "***": "key too",
    }
    assert message["content"] == f"value {secret}"  # the input is not modified


def test_mask_commands_one_per_line_escaped_and_sorted() -> None:
    redactor = fresh("zeta-secret-1", "alpha%25-secret", "line-one-x\nline-two-y")
    assert redactor.mask_commands() == [
        "::add-mask::alpha%2525-secret",
        "::add-mask::line-one-x",
        "::add-mask::line-two-y",
        "::add-mask::zeta-secret-1",
    ]


def test_mask_commands_cover_a_private_key() -> None:
    commands = fresh(PEM).mask_commands()
    assert all("\n" not in command for command in commands)
    assert "::add-mask::k1Zq3Vb9/8u+=" in commands


def test_module_level_redactor_is_shared() -> None:
    assert redact(f"x {GHP}") == "x ***"
    assert redact_obj([f"{AWS}"]) == ["***"]
    assert isinstance(REDACTOR, Redactor)


def test_the_shapes_run_are_those_whose_literals_the_text_holds() -> None:
    """`shapes_in` answers "none" for text without any shape's literal at one search, and
    otherwise names each shape whose literal is there, whatever its case."""
    assert shapes_in("plain prose, no token literal in it at all") == ()
    for i, (hints, _) in enumerate(SHAPES):
        for hint in hints:
            assert shapes_in(f"before {hint.upper()} after") == (i,), hint
    assert shapes_in("Authorization: token https://u:p@h/") == (6, 7)
