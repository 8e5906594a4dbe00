"""Settings blocks in an issue or comment body -> spec overrides.

Settings in an issue or comment: a fenced block whose info string is `yaml codegen` (or
`yml codegen`) always holds spec fields (everything except `task`); a plain ```` ```yaml ````
block counts only when every top-level key is a spec field, so a YAML snippet quoted in a bug
report stays part of the task. Such blocks only count when written by the actor who triggered
the run, since they choose the commands that run.
"""

from __future__ import annotations

from typing import Any

import yaml

from codegen_ci.errors import SpecError, SpecProblem
from codegen_ci.settings import bot_key
from codegen_ci.sources.markdown import fenced_blocks
from codegen_ci.spec import RepoConfig, deep_merge, parse_layer_text
from codegen_ci.untrusted import clean_untrusted


def split_settings(
    body: str, name: str, *, author: str, actor: str
) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """Split an issue/comment body into its text and the settings its blocks hold; `name`
    says where the body is, for notices and errors."""
    text = body.replace("\r\n", "\n")
    lines = text.split("\n")
    overrides: dict[str, Any] = {}
    notices: list[str] = []
    for block in reversed(fenced_blocks(text)):  # bottom up, so deleting lines keeps indexes
        if not _is_settings_block(block.info, block.body):
            continue
        del lines[block.start : block.end + 1]
        if bot_key(author) != bot_key(actor):
            notices.append(
                f"ignored the settings block in {name}: written by {author}, not {actor}"
            )
            continue
        layer = _parse_block(clean_untrusted(block.body), name, first_line=block.start + 2)
        overrides = deep_merge(layer, overrides)
    return clean_untrusted("\n".join(lines)).strip(), overrides, tuple(notices)


def _is_settings_block(info: str, body: str) -> bool:
    words = info.lower().split()
    if not words or words[0] not in ("yaml", "yml"):
        return False
    if "codegen" in words[1:]:
        return True
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and bool(data) and set(data) <= set(RepoConfig.model_fields)


def _parse_block(text: str, name: str, *, first_line: int) -> dict[str, Any]:
    try:
        return parse_layer_text(text, name, is_spec=False)
    except SpecError as exc:  # lines count from the block; the user sees the whole body
        shift = first_line - 1
        raise SpecError(
            [SpecProblem(p.file, p.line + shift if p.line else None, p.key, p.message)
             for p in exc.problems]
        ) from None  # fmt: skip
