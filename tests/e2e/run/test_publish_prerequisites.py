"""`run --push` / `run --pr` check what publishing needs (a remote, a token, the GitHub
repository) before the first model call: a missing one is bad input (exit 2) that costs no
tokens and leaves no branch behind."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sample_repo import QUICK_GATE, SampleRepo, fixing_script

from codegen_ci.cli import cli
from codegen_ci.testing.github_double import GitHubDouble
from codegen_ci.testing.scripted_model import ScriptedModelServer

TOKEN = "ghs_" + "prereq0123456789abcdefABCDEF0123456789"


def run(repo: SampleRepo, *flags: str) -> tuple[int, str]:
    # what the gate finds is not the subject: a gate of exit codes (no pytest start)
    spec = repo.write_spec(validation=QUICK_GATE)
    out = repo.tmp / "out"
    args = ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *flags]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output


def branches(repo: SampleRepo) -> list[str]:
    return repo.git("branch", "--format=%(refname:short)").split()


def test_pr_without_a_token_is_bad_input_before_any_model_call(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/hello")
    model_env.add(*fixing_script())

    code, output = run(sample_repo, "--pr")

    assert code == 2, output
    assert "--pr needs GITHUB_TOKEN" in output
    assert model_env.requests == [] and branches(sample_repo) == ["main"]


def test_push_without_an_origin_remote_is_bad_input_before_any_model_call(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    sample_repo.git("remote", "remove", "origin")
    model_env.add(*fixing_script())

    code, output = run(sample_repo, "--push")

    assert code == 2, output
    assert "--push needs a git remote named origin" in output
    assert model_env.requests == [] and branches(sample_repo) == ["main"]


def test_pr_to_a_remote_that_is_not_on_github_needs_the_repository_named(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # origin is a local bare repository
    model_env.add(*fixing_script())

    code, output = run(sample_repo, "--pr")

    assert code == 2, output
    assert "GITHUB_REPOSITORY=owner/name" in output
    assert model_env.requests == []


def test_pr_with_everything_in_place_opens_the_pull_request(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the same run, with token and repository, works and opens the PR."""
    model_env.add(*fixing_script())
    with GitHubDouble("octo-org/hello", token=TOKEN) as gh:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/hello")
        monkeypatch.setenv("GITHUB_API_URL", gh.url)

        code, output = run(sample_repo, "--pr")

        assert code == 0, output
        assert len(gh.pulls()) == 1
    assert model_env.requests


def test_a_dry_run_in_actions_needs_no_token_but_an_explicit_pr_is_still_checked(
    sample_repo: SampleRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run publishes nothing: under Actions, where --push/--pr are the defaults, it runs
    without GITHUB_TOKEN (the maintainer's pre-flight, a nightly check). Asked for explicitly,
    `--dry-run --pr` still checks what the real run would need."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/hello")

    code, output = run(sample_repo, "--dry-run")
    explicit, explicit_output = run(sample_repo, "--dry-run", "--pr")

    assert code == 0, output
    assert (sample_repo.tmp / "out" / "report.json").is_file()
    assert explicit == 2 and "--pr needs GITHUB_TOKEN" in explicit_output
    assert branches(sample_repo) == ["main"]
