"""A pytest command whose options pytest does not know on the untouched code (`--cov` with
pytest-cov not installed for the command's interpreter: hukkin/tomli-w's CI command in a venv
without it) is a configuration error before any model call, not three rounds of the model
being shown pytest's usage error (runners/pytest.py `SIGNATURES`, gate/preflight.py)."""

from __future__ import annotations

from gate_repos import run_cli
from sample_repo import PYTEST, SampleRepo

from codegen_ci.testing.scripted_model import ScriptedModelServer


def test_options_pytest_refuses_are_a_configuration_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    spec = sample_repo.write_spec(
        validation={"test": [f"{PYTEST} --no-such-plugin-option=100"], "timeout": 120}
    )

    code, output, _, report = run_cli(sample_repo, spec)

    assert code == 2, output
    assert (report["status"], report["reason"]) == ("error", "config")
    assert "refused options of its command line" in report["error"], report["error"]
    assert "unrecognized arguments: --no-such-plugin-option=100" in report["error"]
    assert model_env.requests == []
