"""A failing command without per-test results (no JUnit) is "also fails on the base commit"
(`new: false`) only when the same command failed the same way there: the same exit code and
the same error lines. Failing there for another reason is not the same failure: `new` is then
unknown (null), never false. Through the CLI, with the scripted model; the base runs are the
pre-flight's (a command alone) or the baseline's base-commit worktree (beside pytest)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from gate_repos import run_cli
from sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    PYTEST,
    VERSION_FILE,
    SampleRepo,
)

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# A repository check that fails on the base commit for a reason the task is not about; it
# names its own absolute path, which differs between the base tree and the agent's worktree.
# It first parses the module the task is about: a change that breaks it fails differently.
CHECK = """\
import ast
import sys
from pathlib import Path

here = Path(__file__).resolve()
ast.parse((here.parent.parent / "src/semver/version.py").read_text())
sys.exit(f"error: {here}: the legacy table is missing")
"""
CHECK_COMMAND = f"{sys.executable} checks/check.py"
BREAK = [
    Reply(tool_calls=[call("write_file", path=VERSION_FILE, content="def broken(:\n")]),
    Reply("Done."),
]


# Two more checks beside it, so that one run of the change (BREAK) holds the three cases, each
# asserted on its own: one failing on the base for the same reason but reading a file the
# change leaves alone (it fails the same way after the change), one passing on the base.
SAME_CHECK = CHECK.replace('"src/semver/version.py"', '"src/semver/__init__.py"')
PASSING_CHECK = CHECK.replace('sys.exit(f"error: {here}: the legacy table is missing")', "")
SAME_COMMAND = f"{sys.executable} checks/same.py"
PASSING_COMMAND = f"{sys.executable} checks/passing.py"
CHECKS = {
    "checks/same.py": SAME_CHECK,
    "checks/check.py": CHECK,
    "checks/passing.py": PASSING_CHECK,
}


def check_failure(report: dict[str, Any], command: str) -> dict[str, Any]:
    [failure] = [
        f
        for f in report["rounds"][0]["failures"]
        if f["kind"] == "command" and f["id"] == f"test: {command}"
    ]
    return failure


# the base runs: the pre-flight's (commands alone), the base-commit worktree's (beside pytest)
COMMANDS = {
    "alone": [SAME_COMMAND, CHECK_COMMAND, PASSING_COMMAND],
    "beside pytest": [PYTEST, SAME_COMMAND, CHECK_COMMAND],
}
RunResult = tuple[int, str, Path, dict[str, Any]]


@pytest.fixture(scope="module")
def shared_runs() -> dict[str, RunResult]:
    """One run per `COMMANDS` entry, read by each test of a case in it, made once per module
    (per xdist worker) by the first test that needs it, in that test's isolated environment."""
    return {}


@pytest.fixture
def broken_module_run(
    request: pytest.FixtureRequest,
    shared_runs: dict[str, RunResult],
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
) -> tuple[str, RunResult]:
    """The repository's checks committed; the change breaks the module (a SyntaxError), one
    round; test commands `COMMANDS[where]`. `where` and run_cli's result (read only)."""
    where: str = request.param
    if where not in shared_runs:
        sample_repo.commit(CHECKS, "repository checks")
        model_env.add(*BREAK)
        spec = sample_repo.write_spec(
            validation={"test": COMMANDS[where], "timeout": 120}, limits={"max_iterations": 1}
        )
        shared_runs[where] = run_cli(sample_repo, spec)
    return where, shared_runs[where]


@pytest.mark.parametrize("broken_module_run", COMMANDS, indirect=True)
def test_a_command_failing_the_same_way_on_the_base_commit_is_not_new(
    broken_module_run: tuple[str, RunResult],
) -> None:
    where, (code, output, out, report) = broken_module_run

    assert code == 1, output
    failure = check_failure(report, SAME_COMMAND)
    assert failure["message"].startswith("error: ") and "legacy table" in failure["message"]
    assert failure["new"] is False  # the same command failed the same way on the base commit
    if where == "beside pytest":  # answered by a run in the base-commit worktree
        assert any((out / "baseline" / "logs").glob("*.log"))


@pytest.mark.parametrize("broken_module_run", COMMANDS, indirect=True)
def test_a_command_failing_on_the_base_commit_for_another_reason_is_not_called_pre_existing(
    broken_module_run: tuple[str, RunResult],
) -> None:
    """Base: `error: ... the legacy table is missing` (exit 1). The round: the change broke
    the module, the check stops at a SyntaxError (exit 1). Same command, same exit code,
    another failure: not "also fails on the base commit"."""
    _, (code, output, _, report) = broken_module_run

    assert code == 1, output
    failure = check_failure(report, CHECK_COMMAND)
    assert failure["message"].startswith("SyntaxError")
    assert failure["new"] is not False
    assert failure["new"] is None  # it fails on the base too, for another reason: unknown


@pytest.mark.parametrize("broken_module_run", ["alone"], indirect=True)
def test_a_command_that_passes_on_the_base_commit_and_fails_after_the_change_is_new(
    broken_module_run: tuple[str, RunResult],
) -> None:
    _, (code, output, _, report) = broken_module_run

    assert code == 1, output
    assert check_failure(report, PASSING_COMMAND)["new"] is True


def test_base_tree_paths_do_not_make_the_same_failure_look_different(tmp_path: Path) -> None:
    """The comparison itself, on two logs of the same failure from two trees."""
    from codegen_ci.gate.command_baseline import command_end, new_failure

    base, now = tmp_path / "base.log", tmp_path / "now.log"
    base.write_text("error: /tmp/a/base/checks/check.py: missing (took 0.31s)\n")
    now.write_text("error: /tmp/b/run-7/checks/check.py: missing (took 1.02s)\n")
    other = tmp_path / "other.log"
    other.write_text("error: /tmp/b/run-7/checks/check.py: the config is invalid\n")

    assert new_failure(command_end(1, False, base), command_end(1, False, now)) is False
    assert new_failure(command_end(1, False, base), command_end(2, False, now)) is None
    assert new_failure(command_end(1, False, base), command_end(1, False, other)) is None
    assert new_failure(command_end(0, False, other), command_end(1, False, other)) is True
    assert new_failure(command_end(1, True, base), command_end(1, False, base)) is None
    assert new_failure(None, command_end(1, False, base)) is None


# --- lint whose output has no `path:line: message` to compare ---------------------------------

# A repository's own lint script: on the base commit it fails on a missing docs page; it
# also rejects print() calls in the code. Neither line has the `path:line:` form.
LINT = """\
import sys
from pathlib import Path

problems = [] if Path("docs/index.md").exists() else ["lint: docs/index.md is missing"]
problems += [f"lint: a print() call in {p}" for p in sorted(Path("src").rglob("*.py"))
             if "print(" in p.read_text()]
print("\\n".join(problems))
sys.exit(1 if problems else 0)
"""
DEBUGGING_FIX = FIXED_LINE_NEW.replace("return", "print('bumping')\n        return")
DEBUG_FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=DEBUGGING_FIX)
DROP_PRINT = call("edit_file", path=VERSION_FILE, old_text=DEBUGGING_FIX, new_text=FIXED_LINE_NEW)


def test_lint_failing_on_the_base_commit_for_another_reason_still_fails_the_round(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    """The base commit's lint failure (the docs page) is pre-existing; the print() the change
    adds makes the same command fail for another reason as well: the round fails on it."""
    sample_repo.commit({"checks/lint.py": LINT}, "a lint script")
    model_env.add(
        Reply(tool_calls=[DEBUG_FIX]),
        Reply("Fixed."),
        Reply(tool_calls=[DROP_PRINT]),
        Reply("Removed the print."),
    )
    spec = sample_repo.write_spec(
        validation={"lint": [f"{sys.executable} checks/lint.py"], "test": [PYTEST], "timeout": 120}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 0, output
    assert report["iterations"] == 2  # round 1 failed on the print() it added
    [lint] = report["rounds"][0]["failures"]
    assert lint["kind"] == "command" and "print() call" in lint["message"]
    assert report["rounds"][1]["passed"]  # only the base's failure left: the tests decided
    [pre] = report["preexisting_lint"]
    assert pre["command"].endswith("checks/lint.py")
