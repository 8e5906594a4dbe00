"""`eval merge`: shards' `eval.json` documents joined into one, as if one eval had run them all.

Shards join only when they are shards of the same run: the same fingerprint (history range,
settings, number of shards; eval/shards.py), else the merge is refused, naming what differs.
Each configuration (a model and its attempts) is joined over its shards: a CI matrix of shards
x models gives every model's shards, and each model's rows become one row again. A
configuration given the same shard twice is refused (which one counts?); a shard that is
missing anywhere is said, in the document (`merged.missing`) and its Markdown.
"""

from __future__ import annotations

from typing import Any

from codegen_ci.errors import ExitCode, InputError
from codegen_ci.eval.results import SCHEMA_VERSION, summarize

PARTS = {
    "head": "the history's HEAD",
    "from_history": "--from-history",
    "settings": "the settings (.codegen.yml, --spec, --base-url)",
    "shards": "the number of shards (--shard K/N)",
}


def merge(pieces: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One document from shards' documents (`(where it came from, document)`, in any order).
    Raises `InputError` when they are not shards of one run, or one shard is given twice."""
    if not pieces:
        raise InputError("eval merge: no shard given")
    for where, doc in pieces:
        if doc.get("version") != SCHEMA_VERSION or not isinstance(doc.get("run"), dict):
            raise InputError(
                f"{where}: not an eval.json this version of codegen-ci wrote with its run's "
                "fingerprint (run `codegen-ci eval` again)"
            )
    first_where, first = pieces[0]
    run = first["run"]
    for where, doc in pieces[1:]:
        if doc["run"]["fingerprint"] != run["fingerprint"]:
            differ = [
                f"{text}: {run.get(k)!r} in {first_where}, {doc['run'].get(k)!r} in {where}"
                for k, text in PARTS.items()
                if run.get(k) != doc["run"].get(k)
            ]
            raise InputError(
                f"eval merge: {where} and {first_where} are shards of different runs; "
                + ("; ".join(differ) or "their fingerprints differ")
            )
    count = int(run["shards"])
    order = {c: i for i, c in enumerate(first.get("task_commits", []))}

    def index_of(doc: dict[str, Any]) -> int:
        return int(doc["shard"]["index"]) if doc.get("shard") else 1

    # every configuration's shards, each once
    seen: dict[str, dict[int, str]] = {}
    identity: dict[str, dict[str, Any]] = {}
    rows: dict[str, list[dict[str, Any]]] = {}
    for where, doc in pieces:
        k = index_of(doc)
        for c in doc["configurations"]:
            name = c["name"]
            ident = {"model": c["model"], "candidates": c["candidates"]}
            if identity.setdefault(name, ident) != ident:
                raise InputError(
                    f"eval merge: configuration {name!r} is {identity[name]} in one shard and "
                    f"{ident} in {where}: shards of different runs"
                )
            if k in seen.setdefault(name, {}):
                raise InputError(
                    f"eval merge: shard {k}/{count} of {name!r} is given twice "
                    f"({seen[name][k]} and {where}): the shards overlap; give each once"
                )
            seen[name][k] = where
            rows.setdefault(name, []).extend(c["results"])
    shards_given = {index_of(doc) for _, doc in pieces}
    missing = [f"shard {k}/{count}" for k in range(1, count + 1) if k not in shards_given]
    for name, got in seen.items():
        missing += [
            f"shard {k}/{count} of {name}"
            for k in range(1, count + 1)
            if k not in got and k in shards_given
        ]

    tasks: dict[str, dict[str, Any]] = {}
    for _, doc in pieces:
        for t in doc["tasks"]:
            tasks.setdefault(t["commit"], t)

    def position(commit: str) -> int:
        return order.get(commit, len(order))

    configurations = []
    for name, ident in identity.items():
        joined = sorted(rows[name], key=lambda r: position(r["commit"]))
        summary = summarize(name, ident["model"], ident["candidates"], joined)
        configurations.append({**summary, "results": joined})
    merged_tasks = sorted(tasks.values(), key=lambda t: position(t["commit"]))
    return {
        "version": SCHEMA_VERSION,
        "eval_id": first["eval_id"],
        "repo": first["repo"],
        "head": first["head"],
        "from_history": first["from_history"],
        "commits_examined": first["commits_examined"],
        "mode": "models" if configurations else "check",
        "concurrency": first.get("concurrency"),
        "interrupted": any(doc.get("interrupted") for _, doc in pieces),
        "shallow": any(doc.get("shallow") for _, doc in pieces),
        "run": run,
        "shard": None,
        "task_commits": first.get("task_commits", []),
        "merged": {
            "shards": [
                {
                    "from": where,
                    "eval_id": doc.get("eval_id"),
                    "shard": index_of(doc),
                    "configurations": [c["name"] for c in doc["configurations"]],
                }
                for where, doc in pieces
            ],
            "missing": missing,
        },
        "tasks": merged_tasks,
        "kept": sum(1 for t in merged_tasks if t["kept"]),
        "configurations": configurations,
    }


def exit_code(doc: dict[str, Any]) -> int:
    """As `eval`'s: 3 an interruption, an infrastructure error or a missing shard, 1 a kept task
    not resolved, 0 every one resolved."""
    results = [r for c in doc["configurations"] for r in c["results"]]
    if (
        doc.get("interrupted")
        or (doc.get("merged") or {}).get("missing")
        or any(r.get("exit_code") == ExitCode.INFRA for r in results)
    ):
        return ExitCode.INFRA
    return ExitCode.SUCCESS if all(r["resolved"] for r in results) else ExitCode.FAILED
