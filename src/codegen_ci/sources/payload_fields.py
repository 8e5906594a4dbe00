"""Typed reads of webhook payload fields: a field of the wrong type is bad input (exit 2) with
a message naming it (`issue.number must be an integer, got "abc"`), never a traceback."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from codegen_ci.errors import InputError


def user_of(user: Any) -> tuple[str, str]:
    if not isinstance(user, Mapping):
        return "", ""
    return str(user.get("login") or ""), str(user.get("type") or "User")


def field(payload: Mapping[str, Any], *keys: str) -> Any:
    value: Any = payload
    for key in keys:
        if not isinstance(value, Mapping) or value.get(key) is None:
            raise InputError(f"event payload has no {'.'.join(keys)}")
        value = value[key]
    return value


def int_field(payload: Mapping[str, Any], *keys: str) -> int:
    value = field(payload, *keys)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"event payload: {'.'.join(keys)} must be an integer, "
                         f"got {shown(value)}")  # fmt: skip
    return value


def text_field(payload: Mapping[str, Any], *keys: str, optional: bool = False) -> str:
    """A string field; "" for a missing optional one, bad input for any other type."""
    parent: Any = field(payload, *keys[:-1]) if len(keys) > 1 else payload
    value = parent.get(keys[-1]) if isinstance(parent, Mapping) else None
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        got = "nothing" if value is None else shown(value)
        raise InputError(f"event payload: {'.'.join(keys)} must be a string, got {got}")
    return value


def shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
