"""Tool errors go back to the model as the tool's result and never end the run. What the gate
finds is not the subject: a gate of exit codes (QUICK_GATE, no pytest start)."""

from __future__ import annotations

import json
from typing import Any

from sample_repo import FIX, FIXED_LINE_OLD, QUICK_GATE, SampleRepo
from tests.e2e.run.test_run_e2e import VERSION, run_cli

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_tool_errors_are_fed_back_and_the_run_goes_on(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(
        Reply(tool_calls=[call("read_file", path="../outside.txt")]),
        Reply(tool_calls=[("no_such_tool", {"x": 1})]),
        Reply(tool_calls=[("read_file", '{"path": "src/semver/version.py"')]),  # truncated JSON
        Reply(tool_calls=[call("read_file", pathh=VERSION)]),  # wrong argument name
        Reply(
            tool_calls=[
                call(
                    "edit_file",
                    path=VERSION,
                    old_text="return Version(self.major, self.minor + 2, self.patch)",
                    new_text="x",
                )
            ]
        ),
        Reply(tool_calls=[call("read_file", path="/etc/passwd")]),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )
    code, output, out = run_cli(sample_repo, str(sample_repo.write_spec(validation=QUICK_GATE)))
    assert code == 0, output
    results = tool_results(model_env.tool_requests[-1])
    assert "Error: refused '../outside.txt': path resolves outside the repository." in results[0]
    assert results[1].startswith("Error: unknown tool 'no_such_tool'. Available tools: list_files")
    assert results[2].startswith("Error: malformed JSON arguments for read_file")
    assert "invalid arguments for read_file" in results[3] and "pathh" in results[3]
    assert results[4].startswith("Error: old_text not found in src/semver/version.py")
    assert "Closest lines" in results[4] and FIXED_LINE_OLD in results[4]
    assert "absolute paths are not allowed" in results[5]
    assert results[6] == f"Edited {VERSION}."
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "success"
    assert {r["path"] for r in report["refusals"]} == {"../outside.txt", "/etc/passwd"}


def test_tools_work_together(sample_repo: SampleRepo, model_env: ScriptedModelServer) -> None:
    model_env.add(
        Reply(tool_calls=[call("list_files"), call("search_files", pattern=r"def bump_\w+")]),
        Reply(tool_calls=[call("read_file", path=VERSION, start_line=18, end_line=19)]),
        Reply(tool_calls=[call("write_file", path="src/semver/extra.py", content="X = 1\n")]),
        Reply(tool_calls=[call("run_command", command="echo hello; exit 3")]),
        Reply(
            tool_calls=[
                call("edit_file", path=VERSION, old_text="self.minor", new_text="self.minor")
            ]
        ),
        Reply(tool_calls=[FIX]),
        Reply("done"),
    )
    code, output, out = run_cli(sample_repo, str(sample_repo.write_spec(validation=QUICK_GATE)))
    assert code == 0, output
    results = tool_results(model_env.tool_requests[-1])
    assert "src/semver/version.py" in results[0] and "tests/test_version.py" in results[0]
    assert "src/semver/version.py:17:     def bump_major" in results[1]
    assert results[2].startswith("18\t") and "[lines 18-19 of" in results[2]
    assert results[3] == "Created src/semver/extra.py (1 lines)."
    assert results[4].startswith("[exit code 3]") and "hello" in results[4]
    assert "occurs 3 times" in results[5] or "occurs" in results[5]
    report = json.loads((out / "report.json").read_text())
    assert sorted(report["files_changed"]) == ["src/semver/extra.py", VERSION]
