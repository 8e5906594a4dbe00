"""A test command that sets PYTHONPATH itself (`PYTHONPATH=src python -m pytest`, as init
writes it for a src layout) keeps the tool's own folders importable: the pre-flight's
collection lists the base commit's tests through the `codegen_first` plugin, a later round
runs the failing tests first through it, and the coverage run measures the changed lines
(runners/base.py `keep_tool_paths`). Before, each plugin run failed ("Error importing plugin
codegen_first"), was repeated without it, and the changed lines went unmeasured."""

from __future__ import annotations

from pathlib import Path

from gate_repos import run_cli
from sample_repo import FIX, FIXED_LINE_OLD, PYTEST, VERSION_FILE, SampleRepo

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

WRONG = call(
    "edit_file",
    path=VERSION_FILE,
    old_text=FIXED_LINE_OLD,
    new_text="return Version(self.major, self.minor + 1, 1)",
)
UNDO_WRONG = call(
    "edit_file",
    path=VERSION_FILE,
    old_text="return Version(self.major, self.minor + 1, 1)",
    new_text=FIXED_LINE_OLD,
)


def test_a_command_setting_pythonpath_keeps_the_tools_plugins(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(
        validation={
            "test": [f"PYTHONPATH=src {PYTEST}"],
            "timeout": 120,
            "proof": {"tests": "preferred"},
        }
    )
    model_env.add(
        Reply(tool_calls=[WRONG]),
        Reply("Done."),
        Reply(tool_calls=[UNDO_WRONG, FIX]),
        Reply("Fixed."),
    )
    code, output, out, report = run_cli(sample_repo, spec)
    assert code == 0, output
    refused = [
        str(p.relative_to(out))
        for p in out.rglob("*.log")
        if "Error importing plugin" in p.read_text(errors="replace")
    ]
    assert refused == [], refused
    assert report["rounds"][1]["tests"]["failed"] == 0
    assert report["proof"]["status"] == "proven", report["proof"]
    assert report["proof"]["changed_lines"]["measured"] is True, report["proof"]
    assert "coverage" in {p.name for p in Path(out).iterdir()}
