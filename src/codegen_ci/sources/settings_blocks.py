"""Settings blocks in an issue or comment body -> task-level spec overrides.

A fenced block whose info string is `yaml codegen` (or `yml codegen`) holds settings; a plain
```` ```yaml ```` block counts only when every top-level key is a spec field, so a YAML snippet
quoted in a bug report stays part of the task.

Issue and comment text is written by people the repository does not choose, so:

* only what the rendered page shows counts: the body is cleaned (`clean_untrusted`) before
  blocks are looked for, so a block in an HTML comment or a hidden element is not there;
* only blocks written by the actor who triggered the run count (others get a notice);
* finding and removing blocks is lexical: no YAML is parsed before the caller has checked the
  actor's permission (`parse_settings` runs after it), and then with bounded size and aliases;
* a block may set only the task-level keys (`TASK_KEYS`); commands, the model and its endpoint,
  `env_passthrough`, `protected_paths`, git and PR settings are ignored with a notice, and
  `limits` may only lower the repository's own (`clamp_limits`);
* `validation.proof.tests` is the one validation key a block may set, and only to ask for more
  proof than the repository does (`clamp_proof`: off < preferred < required).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from codegen_ci.errors import SpecError, SpecProblem
from codegen_ci.security.untrusted import clean_untrusted
from codegen_ci.sources.markdown import fenced_blocks
from codegen_ci.spec.action_inputs import bot_key
from codegen_ci.spec.layers import deep_merge, parse_layer_text
from codegen_ci.spec.model import Limits, RepoConfig, Validation

TASK_KEYS = ("version", "title", "context", "outputs", "constraints", "limits")
PROOF_ORDER = ("off", "preferred", "required")  # clamp_proof: a block may only go up
MAX_BLOCK_CHARS = 20_000
_TOP_KEY = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]|$)")


@dataclass(frozen=True)
class SettingsBlock:
    """One block as written (not parsed yet): where it is and its YAML text."""

    name: str  # "issue #3 body", "comment 1234"
    text: str
    first_line: int  # the body line (1-based) of the block's first YAML line


def split_settings(
    body: str, name: str, *, author: str, actor: str
) -> tuple[str, tuple[SettingsBlock, ...], tuple[str, ...]]:
    """(the body's visible text without its settings blocks, the blocks the actor wrote,
    notices about blocks that do not count)."""
    lines = clean_untrusted(body).split("\n")
    blocks: list[SettingsBlock] = []
    notices: list[str] = []
    for block in reversed(fenced_blocks("\n".join(lines))):  # bottom up: indexes stay valid
        if not _is_settings_block(block.info, block.body):
            continue
        del lines[block.start : block.end + 1]
        if bot_key(author) != bot_key(actor):
            notices.append(
                f"ignored the settings block in {name}: written by {author}, not {actor}"
            )
        else:
            blocks.insert(0, SettingsBlock(name, block.body, block.start + 2))
    # Blank lines go, indentation stays: four spaces before `/codegen` make it code.
    text = re.sub(r"\A(?:[ \t]*\n)+", "", "\n".join(lines)).rstrip()
    return text, tuple(blocks), tuple(notices)


def parse_settings(blocks: Iterable[SettingsBlock]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The overrides the blocks set (later blocks win) and notices for what was ignored.
    Call only once the actor may start a run: this is where event YAML gets parsed."""
    overrides: dict[str, Any] = {}
    notices: list[str] = []
    for block in blocks:
        layer = _parse_block(block)
        kept = {k: v for k, v in layer.items() if k in TASK_KEYS}
        if proof := _proof_only(layer.get("validation")):
            kept["validation"] = proof
        if refused := [key for key in layer if key not in kept]:
            notices.append(
                f"ignored {', '.join(f'`{k}`' for k in refused)} in the settings block in "
                f"{block.name}: an issue or comment may set only {', '.join(TASK_KEYS[1:])} "
                "and validation.proof.tests; commands, the model, env_passthrough and "
                "protected_paths come from the spec or the default branch's .codegen.yml"
            )
        overrides = deep_merge(overrides, kept)
    return overrides, tuple(notices)


def _proof_only(validation: object) -> dict[str, Any] | None:
    """`{"proof": {"tests": ...}}` when that is all a block's `validation` holds."""
    if not isinstance(validation, dict) or set(validation) != {"proof"}:
        return None
    proof = validation["proof"]
    if not isinstance(proof, dict) or set(proof) != {"tests"}:
        return None
    return {"proof": {"tests": proof["tests"]}}


def clamp_proof(
    overrides: Mapping[str, Any], repository: Validation
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`overrides` with a `validation.proof.tests` below the repository's raised to it: an
    issue may ask for more proof, never for less."""
    wanted = ((overrides.get("validation") or {}).get("proof") or {}).get("tests")
    wanted = "off" if wanted is False else wanted  # YAML's bare `off`
    ours = repository.proof.tests
    if wanted not in PROOF_ORDER or PROOF_ORDER.index(wanted) >= PROOF_ORDER.index(ours):
        return dict(overrides), ()  # an unknown value: resolving the spec reports it
    notice = (
        f"validation.proof.tests: {wanted} from an issue or comment is below the repository's "
        f"{ours}; using {ours}"
    )
    return {**overrides, "validation": {"proof": {"tests": ours}}}, (notice,)


def clamp_limits(
    overrides: Mapping[str, Any], repository: Limits
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`overrides` with every limit above the repository's own lowered to it."""
    limits = dict(overrides.get("limits") or {})
    try:
        typed = Limits.model_validate(limits)  # "10" counts as 10 here, as in the spec
    except ValidationError:
        return dict(overrides), ()  # resolving the spec reports it, with its key
    notices = []
    for key in list(limits):
        value, ceiling = getattr(typed, key), getattr(repository, key)
        if ceiling is not None and value is not None and value > ceiling:
            limits[key] = ceiling
            notices.append(
                f"limits.{key}: {value} from an issue or comment is above the repository's "
                f"{ceiling}; using {ceiling}"
            )
    if not limits:
        return dict(overrides), tuple(notices)
    return {**overrides, "limits": limits}, tuple(notices)


def _is_settings_block(info: str, body: str) -> bool:
    """Lexical on purpose: no YAML parser sees event text before the permission check."""
    words = info.lower().split()
    if not words or words[0] not in ("yaml", "yml"):
        return False
    if "codegen" in words[1:]:
        return True
    keys = set()
    for line in body.split("\n"):
        if not line.strip() or line[0] in " \t#":
            continue
        match = _TOP_KEY.match(line)
        if match is None:
            return False  # a top-level list, a document marker, a flow mapping...
        keys.add(match[1])
    return bool(keys) and keys <= set(RepoConfig.model_fields)


def _parse_block(block: SettingsBlock) -> dict[str, Any]:
    if len(block.text) > MAX_BLOCK_CHARS:
        problem = f"settings block larger than {MAX_BLOCK_CHARS} characters"
        raise SpecError([SpecProblem(block.name, block.first_line - 1, "", problem)])
    try:
        return parse_layer_text(block.text, block.name, is_spec=False)
    except SpecError as exc:  # lines count from the block; the user sees the whole body
        shift = block.first_line - 1
        raise SpecError(
            [
                SpecProblem(p.file, p.line + shift if p.line else None, p.key, p.message)
                for p in exc.problems
            ]
        ) from None
