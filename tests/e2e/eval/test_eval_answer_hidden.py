"""An eval task cannot see its answer: the model's commands look for the commit the task was
made from (every ref and reflog, the object by its id, lost objects, the log's patches, the
user's repository by its path) and find none of it, on both backends. Control: the same
probe in the user's repository finds the answer every way."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from parse_history import GROUPING, NO_PROOF_SETTINGS, CheckedParse, clone_parse, git, seed_check
from sandbox_attacks import BACKENDS

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call


@pytest.fixture
def parse_repo(tmp_path: Path) -> Path:
    """The clone with settings that run no proof, coverage or flaky re-run (not this test's
    subject: the probe's one command is)."""
    return clone_parse(tmp_path, NO_PROOF_SETTINGS)


def answer_line(repo: Path) -> str:
    """A line of parse.py that only the answer (and what came after it) holds."""
    before = set(git(repo, "show", f"{GROUPING}^:parse.py").splitlines())
    added = [ln.strip() for ln in git(repo, "show", f"{GROUPING}:parse.py").splitlines()]
    return max((ln for ln in added if ln not in before and len(ln) > 20), key=len)


def probe(user_repo: Path, marker: str) -> str:
    q, m = shlex.quote(str(user_repo)), shlex.quote(marker)
    return f"""
set +e
echo "== probe"
git cat-file -e {GROUPING} 2>/dev/null && echo FOUND-ANSWER-OBJECT
git rev-list --all --reflog 2>/dev/null | grep -q {GROUPING} && echo FOUND-IN-HISTORY
git log --all --reflog -p 2>/dev/null | grep -qF -- {m} && echo FOUND-IN-LOG
common=$(git rev-parse --git-common-dir)
git fsck --lost-found >/dev/null 2>&1
grep -rqF -- {m} "$common/lost-found" 2>/dev/null && echo FOUND-LOST
grep -qF -- {m} {q}/parse.py 2>/dev/null && echo FOUND-IN-USER-REPO
git -C {q} cat-file -e {GROUPING} 2>/dev/null && echo FOUND-VIA-USER-GIT
echo "== end"
"""


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_the_model_of_an_eval_task_finds_no_trace_of_the_answer(
    parse_repo: Path,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    sandbox: str,
    parse_check: CheckedParse,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    command = probe(parse_repo, answer_line(parse_repo))
    model_env.add(Reply(tool_calls=[call("run_command", command=command)]), Reply("Looked."))
    out = parse_repo.parent / "out"
    seed_check(out, parse_check, GROUPING)  # the check (no model) is not this test's subject

    settings = parse_repo.parent / "settings.yml"
    args = ["--repo", str(parse_repo), "--spec", str(settings), "--from-history", "2"]
    result = CliRunner().invoke(cli, ["eval", *args, "--model", "prober", "--output-dir", str(out)])

    assert result.exit_code == 1, result.output  # kept, and not resolved
    seen = [
        str(m["content"]) for r in model_env.requests for m in r["messages"] if m["role"] == "tool"
    ]
    assert len(seen) == 1 and "== probe" in seen[0] and "== end" in seen[0], seen
    assert "FOUND" not in seen[0], seen[0]


def test_control_the_same_probe_finds_the_answer_in_the_user_repository(
    parse_repo: Path,
) -> None:
    seen = subprocess.run(
        ["sh", "-c", probe(parse_repo, answer_line(parse_repo))],
        cwd=parse_repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    for found in ("ANSWER-OBJECT", "IN-HISTORY", "IN-LOG", "IN-USER-REPO", "VIA-USER-GIT"):
        assert f"FOUND-{found}" in seen, seen
