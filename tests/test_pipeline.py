"""`pipeline.execute()` in-process: the deterministic model drives the agent loop, pre-flight,
validation, baseline, reflection and finalize on a temporary git repository whose own pytest
suite is the gate. No process of ours is started (the e2e tests start the CLI)."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.report import Reason, Status
from codegen_ci.testing.deterministic_model import call, step
from tests.helpers.in_process import run_in_process, sample_spec
from tests.helpers.sample_repo import (
    FIXED_LINE_NEW,
    FIXED_LINE_OLD,
    VERSION_FILE,
    make_sample_repo,
)

FIX = call("edit_file", path=VERSION_FILE, old_text=FIXED_LINE_OLD, new_text=FIXED_LINE_NEW)


def test_success_in_one_round_commits_the_fix(tmp_path: Path) -> None:
    sample = make_sample_repo(tmp_path)
    run = run_in_process(
        sample,
        sample_spec(),
        [step(None, call("read_file", path=VERSION_FILE)), step(None, FIX), step("Fixed.")],
    )
    report = run.report
    assert (report.status, report.reason) == (Status.SUCCESS, None), run.log
    assert report.iterations == 1 and len(report.rounds) == 1
    assert report.preflight is not None  # pre-flight ran before the model
    assert run.model.calls == 3
    # finalize: one commit on the run's branch holding exactly the fix
    assert report.commit and report.files_changed == [VERSION_FILE]
    shown = sample.git("show", "--format=%B", report.commit)
    assert f"+        {FIXED_LINE_NEW}" in shown and f"-        {FIXED_LINE_OLD}" in shown
    assert sample.git("rev-parse", report.branch or "").strip() == report.commit
    assert sample.git("rev-parse", f"{report.commit}^").strip() == sample.head()
    assert (run.output_dir / "report.json").is_file()
    assert (run.output_dir / "diff.patch").read_text().count(FIXED_LINE_NEW) == 1
