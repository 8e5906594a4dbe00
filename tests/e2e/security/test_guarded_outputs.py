"""An output directory with a planted link: `run` stops with exit 2 before anything
runs, and nothing is written where the link points. Control: the same folder without the
link is used."""

from __future__ import annotations

from click.testing import CliRunner
from sample_repo import QUICK_GATE, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import ScriptedModelServer


def test_run_refuses_an_output_directory_holding_a_link(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    out, outside = sample_repo.tmp / "out", sample_repo.tmp / "outside"
    (out / "candidates").mkdir(parents=True)
    outside.mkdir()
    (out / "report.json").symlink_to(outside / "report.json")
    # the output directory is the subject: the control's dry run greps the fixed line (no pytest)
    spec = sample_repo.write_spec(validation=QUICK_GATE)
    branches = sample_repo.git("branch", "--list")

    args = ["run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)]
    result = CliRunner().invoke(cli, [*args, "--dry-run"])

    assert result.exit_code == 2, result.output
    assert "holds a symlink (report.json)" in result.output
    assert list(outside.iterdir()) == []
    assert sample_repo.git("branch", "--list") == branches  # nothing started
    assert model_env.requests == []

    (out / "report.json").unlink()
    control = CliRunner().invoke(cli, [*args, "--dry-run"])
    assert control.exit_code == 0, control.output
    assert (out / "report.json").is_file()
