"""The reports in tests/fixtures/generated (written by real runners, see its README.md), and
the same runs repeated live with today's toolchain.

A committed report names the absolute paths of the directory it was generated in
(`/tmp/codegen-fixtures/<part>`); a test copies the project to its own temporary directory
and reads the report as if it had been written there, so locations resolve against real
sources."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

GENERATED = Path(__file__).resolve().parents[1] / "fixtures" / "generated"
GENERATED_AT = "/tmp/codegen-fixtures"
GO_TEST = "gotestsum --junitfile reports/go.xml ./..."


def copy_project(part: str, dest: Path) -> Path:
    """The project of `part` ("go" or "node") copied to `dest`."""
    source = GENERATED / part / ("module" if part == "go" else "project")
    shutil.copytree(source, dest)
    return dest


def committed_report(part: str, name: str, project: Path, out_dir: Path) -> Path:
    """The committed report `name`, its generation directory replaced by `project`."""
    text = (GENERATED / part / name).read_text(encoding="utf-8")
    report = out_dir / f"committed-{name}"
    report.write_text(text.replace(f"{GENERATED_AT}/{part}", str(project)), encoding="utf-8")
    return report


def live_gotestsum(module: Path) -> Path:
    """Run gotestsum in `module` as regenerate.sh does; the JUnit file it wrote."""
    subprocess.run(GO_TEST, shell=True, cwd=module, capture_output=True, timeout=300)
    return module / "reports" / "go.xml"


def live_node_test(project: Path) -> Path:
    """node's built-in runner with its junit reporter, as regenerate.sh runs it."""
    report = project / "reports" / "node.xml"
    report.parent.mkdir(exist_ok=True)
    subprocess.run(
        [
            "node",
            "--test",
            "--test-reporter=junit",
            f"--test-reporter-destination={report}",
            "test/mean.test.mjs",
        ],
        cwd=project,
        capture_output=True,
        timeout=300,
    )
    return report
