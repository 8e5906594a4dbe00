"""What defines an eval run, and a deterministic share of its tasks (`eval --shard K/N`).

A task belongs to shard `1 + sha256(commit) mod N`: the split depends on the commit id alone,
so every machine, whatever the order it found the tasks in, takes the same share, and the N
shards together hold every task exactly once.

The run's *fingerprint* is what shards must agree on to be joined (`eval merge`): the history
range (HEAD and N), the settings the gate and the models run with, and the number of shards.
The models are not part of it: a CI matrix runs shards x models, and the merge joins each
model's shards into one row (eval/merge.py). Its parts are kept beside the digest, so a merge
that refuses can say which part differs.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from codegen_ci.errors import InputError

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 1000


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def holds(self, commit: str) -> bool:
        return shard_of(commit, self.count) == self.index

    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    match = SHARD.match(text)
    if not match:
        raise InputError(f"--shard {text!r}: expected K/N (for example 2/5)")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
        raise InputError(f"--shard {text!r}: K must be in 1..N and N in 1..{MAX_SHARDS}")
    return Shard(index, count)


def shard_of(commit: str, count: int) -> int:
    """The shard (1-based) a commit's task belongs to among `count`."""
    return 1 + int(hashlib.sha256(commit.encode()).hexdigest(), 16) % count


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def run_identity(
    head: str, from_history: int, settings: dict[str, Any], shards: int
) -> dict[str, Any]:
    """What a shard's `eval.json` records under `run`: the parts and their digest. `settings`
    is the resolved settings (the repository's `.codegen.yml`, `--spec`, `--base-url`) as
    JSON; only its digest is kept."""
    parts = {
        "head": head,
        "from_history": from_history,
        "settings": digest(settings)[:16],
        "shards": shards,
    }
    return {"fingerprint": digest(parts)[:16], **parts}


# What only a model's rounds read (pipeline.py's loop): the proof, the coverage run and the
# flaky re-runs after a round; whether failures the base has too may pass the gate.
ROUNDS_ONLY = ("proof", "allow_preexisting_failures")


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings that decide the check (no model involved): a check made under them holds
    for every model, every number of attempts, every proof policy and gate tolerance. The
    check's runs are dry runs (the pre-flight alone), where `ROUNDS_ONLY` plays no part."""
    kept = {k: v for k, v in settings.items() if k not in ("model", "candidates", "task")}
    validation = kept.get("validation")
    if isinstance(validation, dict):
        kept["validation"] = {k: v for k, v in validation.items() if k not in ROUNDS_ONLY}
    return kept
