"""Readers for one environment value: plain variables and the action's `INPUT_<NAME>` inputs.

An empty value counts as unset. An action input is looked up by its hyphen form (as the runner
sets it) first, then its underscore form (as a shell can set it). Bad values raise `InputError`
naming the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from codegen_ci.errors import InputError

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


class PlainVariables:
    """Plain environment variables; empty means unset."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def text(self, key: str) -> str | None:
        return self._env.get(key, "").strip() or None

    def label(self, key: str) -> str:
        return key

    def path(self, key: str) -> Path | None:
        value = self.text(key)
        return Path(value) if value else None

    def positive_int(self, key: str) -> int | None:
        value = self.text(key)
        if value is None:
            return None
        if not re.fullmatch(r"\+?\d+", value) or int(value) < 1:
            raise InputError(f"{self.label(key)}: expected a positive whole number, got {value!r}")
        return int(value)


class ActionInputs(PlainVariables):
    """Action inputs by their names in action.yml (`openai-api-key`)."""

    def text(self, key: str) -> str | None:
        upper = key.upper()
        hyphen = super().text(f"INPUT_{upper}")
        return hyphen or super().text(f"INPUT_{upper.replace('-', '_')}")

    def label(self, key: str) -> str:
        return f"input {key}"

    def lines(self, key: str) -> tuple[str, ...]:
        """One command per non-empty line."""
        value = self.text(key) or ""
        return tuple(line.strip() for line in value.splitlines() if line.strip())

    def items(self, key: str) -> tuple[str, ...]:
        """A list separated by commas or newlines."""
        value = self.text(key) or ""
        return tuple(item.strip() for item in re.split(r"[,\n]", value) if item.strip())

    def count(self, key: str, *, default: int) -> int:
        """A whole number, 0 or more."""
        value = self.text(key)
        if value is not None and not re.fullmatch(r"\+?\d+", value):
            raise InputError(f"input {key}: expected a whole number (0 or more), got {value!r}")
        return default if value is None else int(value)

    def boolean(self, key: str, *, default: bool) -> bool:
        value = self.text(key)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise InputError(f"input {key}: expected true or false (or yes/no, 1/0), got {value!r}")
