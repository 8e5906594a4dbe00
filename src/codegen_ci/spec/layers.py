"""Layering: each source of settings as a validated dict, merged into one `Spec`.

Every layer (built-in defaults, environment, `.codegen.yml`, action inputs, the spec, command-line
flags) is a plain dict; `resolve_spec` deep-merges them in precedence order and validates once.
Each file is also validated on its own so errors can name its file, line and key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codegen_ci.errors import SpecError
from codegen_ci.spec.load import parse_yaml_mapping, read_spec_text, validation_problems
from codegen_ci.spec.model import RepoConfig, Spec

REPO_CONFIG_NAME = ".codegen.yml"


# --- loading with file/line/key errors (the YAML side is in spec/load.py) -----------


def validate_layer(data: Mapping[str, Any], name: str, text: str | None, *, is_spec: bool) -> None:
    """Validate one file's keys on its own, so its problems carry its own lines."""
    model: type[RepoConfig] = Spec if is_spec else RepoConfig
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, name, text, model)) from None


# --- merging ------------------------------------------------------------------------------


def deep_merge(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merge mappings left to right; later layers win; lists are replaced, not joined."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = deep_merge(merged[key], value)
            else:
                merged[key] = value
    return merged


def load_repo_config(repo: Path) -> tuple[dict[str, Any], str | None]:
    """The repository's `.codegen.yml` as a validated dict (empty when there is none)."""
    path = repo / REPO_CONFIG_NAME
    if not path.is_file():
        return {}, None
    return load_layer_file(path, is_spec=False), str(path)


def load_layer_file(path: Path, *, is_spec: bool) -> dict[str, Any]:
    text = read_spec_text(path)
    data = parse_yaml_mapping(text, str(path))
    validate_layer(data, str(path), text, is_spec=is_spec)
    return data


def parse_layer_text(text: str, name: str, *, is_spec: bool) -> dict[str, Any]:
    data = parse_yaml_mapping(text, name)
    validate_layer(data, name, text, is_spec=is_spec)
    return data


def resolve_spec(*layers: Mapping[str, Any], name: str = "spec") -> Spec:
    """Merge layers (lowest precedence first) and validate the result as one Spec."""
    merged = deep_merge(*layers)
    try:
        return Spec.model_validate(merged)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, name, None, Spec)) from None


def json_schema() -> dict[str, Any]:
    schema = Spec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "codegen-ci spec"
    return schema
