"""`--shard K/N`: the same split on every machine, by commit; and what `eval merge` refuses."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from chart_docs import eval_doc
from click.testing import CliRunner

from codegen_ci.cli import cli
from codegen_ci.errors import InputError
from codegen_ci.eval.merge import exit_code, merge
from codegen_ci.eval.shards import (
    Shard,
    check_settings,
    digest,
    parse_shard,
    run_identity,
    shard_of,
)

COMMITS = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(200)]


def test_every_task_falls_in_exactly_one_shard_whatever_the_order() -> None:
    shards = [Shard(k, 3) for k in (1, 2, 3)]
    split = [[c for c in COMMITS if s.holds(c)] for s in shards]
    again = [[c for c in reversed(COMMITS) if s.holds(c)] for s in shards]
    assert sorted(c for s in split for c in s) == sorted(COMMITS)
    assert [set(s) for s in split] == [set(s) for s in again]
    assert all(40 < len(s) < 90 for s in split)  # about a third each
    # a fixed function of the commit id: the same on every machine and Python
    assert shard_of("d02283db5a28b4d85ce871eb0664e53797a0150a", 3) == 1 + (
        int(hashlib.sha256(b"d02283db5a28b4d85ce871eb0664e53797a0150a").hexdigest(), 16) % 3
    )


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "1/1001", ""])
def test_a_malformed_shard_is_bad_input(text: str) -> None:
    with pytest.raises(InputError, match="--shard"):
        parse_shard(text)


def test_a_malformed_shard_exits_2_before_anything_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["eval", "--repo", str(tmp_path), "--from-history", "3", "--shard", "4/3"]
    )
    assert result.exit_code == 2 and "--shard '4/3'" in result.output, result.output


def shard_doc(index: int, count: int, **run: Any) -> dict[str, Any]:
    doc = eval_doc([("gpt-4o-mini", 2, 1, 0.01)])
    identity = run_identity("f" * 40, 20, {"validation": {"test": ["pytest"]}}, count)
    identity.update(run)
    return {
        **doc,
        "version": 1,
        "eval_id": f"e{index}",
        "repo": "/r",
        "from_history": 20,
        "interrupted": False,
        "run": identity,
        "shard": {"index": index, "count": count},
        "task_commits": [t["commit"] for t in doc["tasks"]],
    }


def test_shards_of_other_settings_are_refused_naming_what_differs() -> None:
    other = shard_doc(2, 2)
    other["run"] = run_identity("f" * 40, 20, {"validation": {"test": ["tox"]}}, 2)
    with pytest.raises(InputError, match=r"different runs; the settings .*a\.json.*b\.json"):
        merge([("a.json", shard_doc(1, 2)), ("b.json", other)])


def test_one_name_with_two_models_is_refused() -> None:
    other = shard_doc(2, 2)
    other["configurations"][0]["model"] = "gpt-4.1"
    with pytest.raises(InputError, match="configuration 'gpt-4o-mini'"):
        merge([("a", shard_doc(1, 2)), ("b", other)])


def test_an_eval_json_without_a_fingerprint_is_refused() -> None:
    old = shard_doc(1, 1)
    del old["run"]
    with pytest.raises(InputError, match="fingerprint"):
        merge([("old", old)])


def test_a_missing_shard_is_named_and_exits_3() -> None:
    doc = merge([("a", shard_doc(1, 3)), ("c", shard_doc(3, 3))])
    assert doc["merged"]["missing"] == ["shard 2/3"]
    assert exit_code(doc) == 3


def test_the_checks_settings_leave_out_the_model_and_the_rounds_policies_not_the_commands() -> None:
    """The check's runs are dry runs: the model, the attempts, `validation.proof` and
    `allow_preexisting_failures` play no part in them, so a check made under other such
    settings is reused (eval/store.py)."""
    tests = {"test": ["pytest"], "timeout": 60}
    settings = {"validation": {**tests, "proof": {"tests": "off", "reruns": 0}}, "model": {}}
    tolerant = {"proof": {"tests": "required"}, "allow_preexisting_failures": True}
    same = {"validation": {**tests, **tolerant}, "model": {"name": "m"}}
    other = {"validation": {**tests, "test": ["tox"], "proof": {"tests": "off", "reruns": 0}}}

    key = digest(check_settings(settings))

    assert digest(check_settings(same)) == key
    assert digest(check_settings({**other, "model": {}})) != key
    assert check_settings(settings)["validation"] == tests
