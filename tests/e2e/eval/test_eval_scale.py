"""`eval` at scale: shards joined by `eval merge` equal one eval over every task, a merge of
shards of different runs is refused, and an interrupted eval resumes with what finished (the
check's results reused by every model). The real history of tests/fixtures/history/parse.bundle
(see test_eval.py), real git and pytest, the scripted model over HTTP."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from parse_history import (
    GROUPING,
    HYPHENS,
    NO_PROOF_SETTINGS,
    SUBSECONDS,
    CheckedParse,
    clone_parse,
    git,
    read,
    run_eval,
    seed_check,
    snapshot,
    task_of,
)

from codegen_ci.cli import cli
from codegen_ci.eval.shards import shard_of
from codegen_ci.testing.scripted_model import (
    Hang,
    HttpError,
    Reply,
    ScriptedModelServer,
    call,
    error_body,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def parse_repo(tmp_path: Path) -> Path:
    """The clone with settings that run no proof, coverage or flaky re-run: neither test reads
    them (test_eval.py's side-by-side test asserts `resolved_with_proof`)."""
    return clone_parse(tmp_path, NO_PROOF_SETTINGS)


def fixer(historical_parse_py: str) -> Any:
    """Answers the #184 task with that commit's own parse.py; any other task: a text answer."""

    def step(request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        if "allow hyphen in field name" not in task:
            return Reply("I looked and changed nothing.")
        if messages[-1]["role"] == "tool":
            return Reply("Field names may contain hyphens now.")
        return Reply(tool_calls=[call("write_file", path="parse.py", content=historical_parse_py)])

    return step


def per_task(doc: dict[str, Any]) -> dict[str, Any]:
    """What an eval says about each task and each configuration's run of it (no paths, times
    or ids: those differ between any two evals)."""
    return {
        "tasks": [
            (t["commit"], t["kept"], t["reason"], t["targets"], t["base"]) for t in doc["tasks"]
        ],
        "kept": doc["kept"],
        "configurations": [
            (
                c["name"],
                c["tasks"],
                c["resolved"],
                c["resolved_commits"],
                c["rounds"]["total"],
                [
                    (r["commit"], r["resolved"], r["why"], r["status"], r["files_changed"])
                    for r in c["results"]
                ],
            )
            for c in doc["configurations"]
        ],
    }


def test_three_merged_shards_equal_the_unsharded_eval_and_mismatched_shards_are_refused(
    parse_repo: Path, model_env: ScriptedModelServer, tmp_path: Path, parse_check: CheckedParse
) -> None:
    model_env.add(*[fixer(git(parse_repo, "show", f"{HYPHENS}:parse.py"))] * 40)
    # the split is by commit: the three kept tasks do not all fall in one shard
    assert len({shard_of(c, 3) for c in (SUBSECONDS, HYPHENS, GROUPING)}) > 1
    # every eval here takes its tasks' check from the shared one (as from an earlier eval in
    # its output directory): the shards' model runs, the split and the merge are the subject
    seed_check(tmp_path / "w", parse_check, SUBSECONDS, HYPHENS, GROUPING)

    whole = run_eval(
        parse_repo, "--from-history", "11", "--model", "fixer", "--output-dir", str(tmp_path / "w")
    )
    assert whole.exit_code == 1, whole.output  # one of three resolved
    shards = [tmp_path / f"s{k}" for k in (1, 2, 3)]
    for k, out in enumerate(shards, 1):
        ours = [c for c in (SUBSECONDS, HYPHENS, GROUPING) if shard_of(c, 3) == k]
        seed_check(out, parse_check, *ours)
        result = run_eval(
            parse_repo,
            "--from-history",
            "11",
            "--model",
            "fixer",
            "--shard",
            f"{k}/3",
            "--output-dir",
            str(out),
        )
        assert result.exit_code in (0, 1), result.output
        assert read(out)["shard"] == {"index": k, "count": 3}
        assert {t["commit"] for t in read(out)["tasks"]} == {
            t["commit"] for t in read(tmp_path / "w")["tasks"] if shard_of(t["commit"], 3) == k
        }

    merged = tmp_path / "merged"
    result = CliRunner().invoke(
        cli, ["eval", "merge", *map(str, reversed(shards)), "--output-dir", str(merged)]
    )

    assert result.exit_code == 1, result.output  # as the unsharded eval's
    assert per_task(read(merged)) == per_task(read(tmp_path / "w"))
    md = (merged / "eval.md").read_text()
    assert "| fixer | 1/3 |" in md and "Merged from 3 shard output(s)" in md
    assert "```mermaid\nxychart-beta horizontal" in md

    # shards of another run (another history range) are refused, naming what differs
    other = tmp_path / "other"
    seed_check(other, parse_check, GROUPING)  # the range's one task, in shard 2/3
    result = run_eval(
        parse_repo, "--from-history", "2", "--check", "--shard", "2/3", "--output-dir", str(other)
    )
    assert result.exit_code == 0, result.output
    refused = CliRunner().invoke(
        cli, ["eval", "merge", str(shards[0]), str(other), "--output-dir", str(tmp_path / "x")]
    )
    assert refused.exit_code == 2, refused.output
    assert "shards of different runs" in refused.output and "--from-history" in refused.output
    assert not (tmp_path / "x").exists()
    # the same shard twice overlaps: refused; a shard missing: merged, said, exit 3
    twice = CliRunner().invoke(
        cli, ["eval", "merge", str(shards[0]), str(shards[0]), "--output-dir", str(tmp_path / "y")]
    )
    assert twice.exit_code == 2 and "given twice" in twice.output, twice.output
    partial = CliRunner().invoke(
        cli, ["eval", "merge", str(shards[0]), str(shards[1]), "--output-dir", str(tmp_path / "z")]
    )
    assert partial.exit_code == 3, partial.output
    assert "missing shard 3/3" in partial.output
    assert "**Incomplete**: missing shard 3/3" in (tmp_path / "z" / "eval.md").read_text()


def test_an_interrupted_eval_resumes_where_it_stopped_and_the_check_is_reused(
    parse_repo: Path, model_env: ScriptedModelServer, tmp_path: Path, parse_check: CheckedParse
) -> None:
    before = snapshot(parse_repo)
    out = tmp_path / "out"
    # the check of the shared `--check` (its tasks' folders, as an earlier `--check` here
    # leaves them): this `--check` keeps it, and every model run below reuses it
    seed_check(out, parse_check, SUBSECONDS, HYPHENS, GROUPING)
    check = run_eval(parse_repo, "--from-history", "11", "--check", "--output-dir", str(out))
    assert check.exit_code == 0, check.output
    assert read(out)["kept"] == 3
    reports = sorted((out / "tasks").glob("*/*/report.json"))
    stamps = [p.stat().st_mtime_ns for p in reports]
    assert len(reports) == 6  # two dry runs per task

    # the first task's run finishes; the second's model call is under way when Ctrl-C comes
    model_env.add(Reply("I looked and changed nothing."), Hang(2.0, Reply("Thinking done.")))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codegen_ci",
            "eval",
            "--repo",
            str(parse_repo),
            "--spec",
            str(parse_repo.parent / "settings.yml"),
            "--from-history",
            "11",
            "--model",
            "m",
            "--output-dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(model_env.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)

    assert proc.returncode == 3, output
    # the model run reused the check: no dry run again
    assert output.count("kept, from an earlier run") == 3, output
    # the third task never started; what finished is reported, the user's repository untouched
    first, second = (task_of(r) for r in model_env.requests)
    doc = read(out)
    assert doc["interrupted"] and doc["kept"] == 3
    results = doc["configurations"][0]["results"]
    assert [r["resolved"] for r in results] == [False, False, False]
    assert [r["commit"] for r in results if r["status"] != "error"] == [SUBSECONDS]
    assert "Interrupted" in (out / "eval.md").read_text()
    assert snapshot(parse_repo) == before

    model_env.add(*[Reply("I looked and changed nothing.")] * 10)
    resumed = run_eval(parse_repo, "--from-history", "11", "--model", "m", "--output-dir", str(out))

    assert resumed.exit_code == 1, resumed.output  # nothing resolved, nothing interrupted
    later = [task_of(r) for r in model_env.requests[2:]]
    # the finished task is kept, not run again; the interrupted one and the last one run
    assert len(later) == 2 and first not in later and second in later, later
    assert f"[1/3] m {SUBSECONDS[:12]} not resolved" in resumed.output
    assert "(from an earlier run)" in resumed.output
    assert resumed.output.count("kept, from an earlier run") == 3
    doc = read(out)
    assert not doc["interrupted"]
    assert [r["commit"] for r in doc["configurations"][0]["results"]] == [
        SUBSECONDS,
        HYPHENS,
        GROUPING,
    ]
    assert doc["configurations"][0]["rounds"]["total"] == 3
    # another model reuses the same check too. Its service refuses every call (HTTP 401, not
    # retried): each of its runs ends after the pre-flight, with no round and no base re-run
    # (two pytest runs fewer a task); the check's reuse, not this model's runs, is the subject
    # (an eval where nothing is resolved exits 1: the resumed one above)
    model_env.add_for("n", *[HttpError(401, error_body("no key"))] * 10)
    other = run_eval(parse_repo, "--from-history", "11", "--model", "n", "--output-dir", str(out))
    assert other.exit_code == 3, other.output
    assert other.output.count("kept, from an earlier run") == 3
    (runs,) = (c["results"] for c in read(out)["configurations"] if c["name"] == "n")
    assert [r["status"] for r in runs] == ["error"] * 3
    assert [p.stat().st_mtime_ns for p in reports] == stamps  # no check ran again
    assert snapshot(parse_repo) == before  # no branch or worktree left over
