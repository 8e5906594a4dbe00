"""What the model installs with its own command does not carry into a round (only the change
is judged), so a change that edits a dependency manifest has `setup` run again, on the change,
in every round: a dependency the change adds is there for its tests."""

from __future__ import annotations

import json
import sys

from click.testing import CliRunner
from sample_repo import FIXED_LINE_NEW, FIXED_LINE_OLD, PYTEST, VERSION_FILE, VERSION_PY, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

# A stand-in for `pip install -r requirements.txt` that needs no network: each listed name
# becomes a module in the git-ignored `deps/`.
INSTALL_PY = """\
import pathlib

deps = pathlib.Path("deps")
deps.mkdir(exist_ok=True)
for name in pathlib.Path("requirements.txt").read_text().split():
    (deps / f"{name}.py").write_text("def zero():\\n    return 0\\n")
"""
USES_THE_DEPENDENCY = "from patchlib import zero\n" + VERSION_PY.replace(
    FIXED_LINE_OLD, FIXED_LINE_NEW.replace(", 0)", ", zero())")
)


def test_a_dependency_the_change_adds_is_installed_by_setup_in_the_round(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.commit(
        {
            "install.py": INSTALL_PY,
            "requirements.txt": "",
            ".gitignore": "__pycache__/\ndeps/\n",
            "pytest.ini": "[pytest]\npythonpath = src deps\n",
        }
    )
    model_env.add(
        Reply(tool_calls=[call("write_file", path="requirements.txt", content="patchlib\n")]),
        Reply(tool_calls=[call("write_file", path=VERSION_FILE, content=USES_THE_DEPENDENCY)]),
        Reply(tool_calls=[call("run_command", command=f"{sys.executable} install.py")]),
        Reply("done"),
    )
    setup = f"{sys.executable} install.py"
    spec = sample_repo.write_spec(
        validation={"setup": [setup], "test": [PYTEST]}, limits={"max_iterations": 1}
    )
    out = sample_repo.tmp / "out"
    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]

    result = CliRunner().invoke(cli, args)

    report = json.loads((out / "report.json").read_text())
    assert (result.exit_code, report["status"]) == (0, "success"), result.output
    [only] = report["rounds"]
    assert [c["kind"] for c in only["commands"]] == ["setup", "test"]
    # what the model's own command installed was cleared; setup made it again
    assert "deps/patchlib.py" in (out / "logs" / "round-1-cleared.txt").read_text()
    assert sorted(report["files_changed"]) == ["requirements.txt", VERSION_FILE]
