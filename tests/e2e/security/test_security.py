"""Hostile models, hostile issues and hostile files do no harm.

Each test is an attack run through the public surface (`codegen-ci run` with a scripted model
over HTTP, real git, real pytest), paired with a positive control showing that the same setup
does see the thing when it is allowed: the canary IS visible when nothing hides it, the write
DOES succeed inside the repository, the planted hook WOULD run if it stayed. Canary values are
unique per test because the redactor is process-wide.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_repo import FIX, QUICK_GATE, SampleRepo
from sandbox_attacks import ANCESTORS_ENVIRON, BACKENDS, ONE_BACKEND, proof_spec

from codegen_ci.cli import cli
from codegen_ci.testing.github_double import GitHubDouble
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

VERSION = "src/semver/version.py"


def canary(label: str) -> str:
    """A secret value no token pattern recognises: only registration can hide it."""
    return f"canary{label}{uuid.uuid4().hex}"


def leaked_forms(secret: str) -> list[str]:
    """The secret as it could leak: plain, base64, and inside git's basic-auth header."""
    return [
        secret,
        base64.b64encode(secret.encode()).decode(),
        base64.b64encode(f"x-access-token:{secret}".encode()).decode(),
    ]


def assert_no_leak(text: str, where: str, *secrets: str) -> None:
    leaks = [form for secret in secrets for form in leaked_forms(secret) if form in text]
    assert not leaks, f"leaked to the {where}: {leaks}"


def run_cli(repo: SampleRepo, spec: Path, *args: str) -> tuple[int, str, Path]:
    out = repo.tmp / "out"
    result = CliRunner().invoke(
        cli, ["run", str(spec), "--repo", str(repo.path), "--output-dir", str(out), *args]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output, out


def model_traffic(server: ScriptedModelServer) -> str:
    return "\n".join(json.dumps(body, ensure_ascii=False) for body in server.requests)


def tool_results(server: ScriptedModelServer, *, last_step: bool = False) -> list[str]:
    """The tool results in the last request (all of them, or those of its last step)."""
    messages = server.requests[-1]["messages"]
    if last_step:
        start = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
        messages = messages[start:]
    return [m["content"] for m in messages if m["role"] == "tool"]


def output_files(out: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", errors="replace")
        for p in sorted(out.rglob("*"))
        if p.is_file()
    )


def refusals(out: Path) -> list[dict[str, Any]]:
    return list(json.loads((out / "report.json").read_text())["refusals"])


def common_hooks(repo: SampleRepo) -> set[str]:
    return {p.name for p in (repo.path / ".git" / "hooks").iterdir()}


# --- 1. secrets never reach the model, the logs, the output directory or GitHub -------------


def test_secrets_in_env_and_git_config_never_leave(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """A model dumps the environment, its ancestors' environments (codegen-ci's among them)
    and the git config (with the basic-auth header actions/checkout leaves behind). Run as a
    real process, so those `/proc/<pid>/environ` are codegen-ci's real ones."""
    openai_key, gh_token, service = canary("openai"), canary("github"), canary("service")
    passed, stray = canary("passed"), canary("stray")  # stray: registered nowhere
    plain = f"visible-{uuid.uuid4().hex}"
    for host, token in (("github.com", gh_token), ("example.com", stray)):
        header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        sample_repo.git(
            "config", f"http.https://{host}/.extraheader", f"AUTHORIZATION: basic {header}"
        )
    spec = proof_spec(  # the proof's logs are in the output directory too
        sample_repo,
        task=f"Reset the patch number in bump_minor. (Pasted by mistake: {service})",
        env_passthrough=["PASSED_SERVICE_TOKEN"],
        limits={"max_iterations": 1},
    )
    dump = [
        "env",
        "printenv",
        "cat .git",
        'cat "$(git rev-parse --git-common-dir)/config"',
        "git config --list --show-origin",
        "git config --get-regexp extraheader | awk '{print $4}' | while read -r b; do "
        'echo "$b"; echo "$b" | base64 -d; echo; done',
        ANCESTORS_ENVIRON,  # codegen-ci's own environment among them
        f"({ANCESTORS_ENVIRON}) | grep -q PLAIN_CANARY && echo PROC-ENV-READABLE",
        'printf %s "$PASSED_SERVICE_TOKEN" | sha256sum',
        '[ -z "$GITHUB_TOKEN$OPENAI_API_KEY$MY_SERVICE_TOKEN" ] && echo CREDENTIALS-ABSENT',
    ]
    model_server.add(
        Reply(tool_calls=[call("run_command", command=c) for c in dump]),
        Reply(tool_calls=[FIX]),
        Reply(f"Done. For the record: {gh_token}"),  # a model repeating a secret it knows
    )
    with GitHubDouble("octo-org/hello", token=gh_token) as gh:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": model_server.base_url,
            "OPENAI_API_KEY": openai_key,
            "GITHUB_TOKEN": gh_token,
            "MY_SERVICE_TOKEN": service,
            "PASSED_SERVICE_TOKEN": passed,
            "PLAIN_CANARY": plain,
            "GITHUB_API_URL": gh.url,
            "GITHUB_REPOSITORY": "octo-org/hello",
            "CODEGEN_SANDBOX": "off",  # the layer below the sandbox (test_sandbox.py)
        }
        out = tmp_path / "out"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "codegen_ci",
                "run",
                str(spec),
                "--repo",
                str(sample_repo.path),
                "--output-dir",
                str(out),
                "--pr",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        github = "\n".join(json.dumps(r.body) for r in gh.requests)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert len(gh.pulls()) == 1  # control: the publisher did send a PR body

    results = "\n".join(tool_results(model_server))
    # controls: the dumps reached the model, the command saw what passthrough allows, and
    # the parent's environment was readable (it holds no secret: see test_secret_env.py)
    assert f"PLAIN_CANARY={plain}" in results
    assert hashlib.sha256(passed.encode()).hexdigest() in results  # passthrough: seen
    assert "PROC-ENV-READABLE" in results
    assert "CREDENTIALS-ABSENT" in results
    assert "AUTHORIZATION: basic ***" in results
    logs = proc.stdout + proc.stderr
    for where, text in [("model", model_traffic(model_server)), ("GitHub", github), ("logs", logs)]:
        assert_no_leak(text, where, openai_key, gh_token, service, passed, stray)
    assert_no_leak(output_files(out), "output dir", openai_key, gh_token, passed, stray)


def test_a_test_that_prints_secrets_is_redacted_or_sees_none(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered, unregistered, deploy = canary("key"), canary("file"), canary("deploy")
    secret_file = sample_repo.tmp / "outside-secret.txt"  # outside the repository
    secret_file.write_text(f"{registered} {unregistered}\n")
    monkeypatch.setenv("OPENAI_API_KEY", registered)  # registered, and removed from commands
    monkeypatch.setenv("DEPLOY_TOKEN", deploy)
    monkeypatch.setenv("CANARY_FILE", str(secret_file))
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the layer below the sandbox (test_sandbox.py)
    _add_leaky_test(sample_repo)
    model_env.add(Reply("I will not change anything."))
    sample_repo.proof = False  # what reaches the model: NO_RERUN's
    spec = sample_repo.write_spec(limits={"max_iterations": 2}, validation={"test": [LEAKY]})

    code, output, _ = run_cli(sample_repo, spec)

    assert code == 1, output
    traffic = model_traffic(model_env)
    # control: what the test printed reached the model (the reflection after round 1)
    assert unregistered in traffic, "the test output never reached the model"
    assert "token=None" in traffic  # a secret-looking variable is not in the command's env
    assert_no_leak(traffic, "model", registered, deploy)


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_passthrough_lets_a_test_see_a_secret_that_stays_redacted(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    sandbox: str,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    deploy = canary("deploy")
    monkeypatch.setenv("DEPLOY_TOKEN", deploy)
    monkeypatch.setenv("CANARY_FILE", "/dev/null")
    _add_leaky_test(sample_repo)
    model_env.add(Reply("I will not change anything."))
    sample_repo.proof = False  # what reaches the model: NO_RERUN's
    spec = sample_repo.write_spec(
        limits={"max_iterations": 2}, env_passthrough=["DEPLOY_TOKEN"], validation={"test": [LEAKY]}
    )

    code, output, _ = run_cli(sample_repo, spec)

    assert code == 1, output
    traffic = model_traffic(model_env)
    assert hashlib.sha256(deploy.encode()).hexdigest()[:16] in traffic  # the test saw it
    assert_no_leak(traffic, "model", deploy)


@pytest.mark.bwrap
def test_secrets_printed_by_tests_stay_out_of_output_dir_and_cli_output(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered = canary("key")
    secret_file = sample_repo.tmp / "outside-secret.txt"
    secret_file.write_text(f"{registered}\n")
    monkeypatch.setenv("OPENAI_API_KEY", registered)
    monkeypatch.setenv("CANARY_FILE", str(secret_file))
    _add_leaky_test(sample_repo)
    model_env.add(Reply("No change."))
    pasted = canary("pasted")
    monkeypatch.setenv("PASTED_TOKEN", pasted)  # registered; pasted into the task by mistake
    spec = sample_repo.write_spec(limits={"max_iterations": 1}, task=f"Fix it. token: {pasted}")

    code, output, out = run_cli(sample_repo, spec)

    assert code == 1
    assert_no_leak(output, "CLI output", registered)
    assert_no_leak(output_files(out), "output dir", registered, pasted)


# The repository's own check that prints what it finds: as a pytest test (JUnit, report
# failures) and run directly as a script (faster: the output is what reflection shows).
LEAKY = f"{sys.executable} tests/test_leaky.py"
# NO_RERUN: where what reaches the model is the subject, no flaky re-run of the failed check
# after each round (`sample_repo.proof = False`: `validation.proof.reruns: 0`): a re-run's
# output never reaches the model (gate/flaky.py: the reflection never names a re-run), and the
# runs fail, so no proof runs either. The output directory's test keeps them (its logs are there).


def _add_leaky_test(repo: SampleRepo) -> None:
    (repo.path / "tests" / "test_leaky.py").write_text(
        "import hashlib, os, pathlib\n\n\n"
        "def test_prints_secrets():\n"
        "    token = os.environ.get('DEPLOY_TOKEN')\n"
        "    digest = hashlib.sha256(token.encode()).hexdigest()[:16] if token else 'absent'\n"
        "    from_file = pathlib.Path(os.environ['CANARY_FILE']).read_text().strip()\n"
        "    print('token:', token, 'file:', from_file)\n"
        "    assert False, f'token={token} digest={digest} file={from_file}'\n\n\n"
        "if __name__ == '__main__':\n"
        "    test_prints_secrets()\n"
    )
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "a test that prints secrets")


# --- 2. the file tools stay inside the repository; git internals are off limits ------------


def test_file_tools_cannot_escape_the_repository(
    sample_repo: SampleRepo, model_env: ScriptedModelServer, tmp_path: Path
) -> None:
    outside = tmp_path / f"outside-{uuid.uuid4().hex}"
    outside.mkdir()
    absolute = outside / "absolute.txt"
    escapes = [
        "../escape.txt",
        "../../../../escape.txt",
        str(absolute),
        "link/via-link.txt",
        ".git/hooks/pre-commit",
        ".git/config",
        "sub/../../escape.txt",
    ]
    # A link out of the repository in the base commit (one a command makes is removed at once)
    (sample_repo.path / "link").symlink_to(outside)
    sample_repo.commit({}, "a link out of the repository")
    model_env.add(
        Reply(
            tool_calls=[
                *(call("write_file", path=p, content="#!/bin/sh\necho pwned\n") for p in escapes),
                call("edit_file", path="link/x", old_text="a", new_text="b"),
                call("read_file", path=str(Path("/etc/passwd"))),
                call("list_files", path=".."),
                call("write_file", path="docs/inside.txt", content="inside\n"),
                FIX,
            ]
        ),
        Reply("Done."),
    )
    spec = proof_spec(sample_repo)  # the proof's worktree of the base has the link too

    code, output, out = run_cli(sample_repo, spec)

    assert code == 0, output
    results = tool_results(model_env, last_step=True)
    assert all(r.startswith("Error: refused") for r in results[: len(escapes) + 3]), results
    assert results[-2].startswith("Created docs/inside.txt")  # control: inside is fine
    assert list(outside.iterdir()) == []
    assert not list(sample_repo.tmp.rglob("escape.txt"))
    refused = {r["path"] for r in refusals(out)}
    assert set(escapes) | {"link/x", "/etc/passwd", ".."} <= refused
    report = json.loads((out / "report.json").read_text())
    assert "docs/inside.txt" in report["files_changed"]
    assert sample_repo.git("show", f"{report['branch']}:docs/inside.txt") == "inside\n"
    assert "pre-commit" not in common_hooks(sample_repo)


# the confined command writes inside its worktree alike under either backend; the subject is
# what our own code lets into the commit (sandbox_attacks.ONE_BACKEND), which the proof after
# it does not change
@pytest.mark.parametrize("sandbox", ONE_BACKEND)
def test_workflow_files_never_reach_the_commit(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    sample_repo.proof = False
    model_env.add(
        Reply(
            tool_calls=[
                call("write_file", path=".github/workflows/evil.yml", content="on: push\n"),
                call(
                    "run_command",
                    command="mkdir -p .github/workflows && "
                    "echo 'on: push' > .github/workflows/shell-evil.yml && "
                    "echo 'KEY=1' > .env.production && echo ok > notes.txt",
                ),
                FIX,
            ]
        ),
        Reply("Done."),
    )
    spec = sample_repo.write_spec(validation=QUICK_GATE)  # the gate is not the subject

    code, output, out = run_cli(sample_repo, spec)

    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    changed = sample_repo.git("diff", "--name-only", sample_repo.head(), report["branch"]).split()
    assert sorted(changed) == ["notes.txt", VERSION]  # control: the shell's other file is in
    refused = {(r["path"], r["tool"]) for r in refusals(out)}
    assert (".github/workflows/evil.yml", "write_file") in refused
    assert (".github/workflows/shell-evil.yml", "run_command") in refused
    assert (".env.production", "run_command") in refused


# --- 3. nothing a command plants in git makes our own git run code -------------------------


def _plant(marker: Path, *, where: str) -> str:
    """Shell that makes git run `touch marker` through config, hooks and a `.git` redirect."""
    touch = f"touch {marker}"
    return " && ".join(
        [
            f"git config filter.pwn.clean '{touch}; cat'",
            f"git config filter.pwn.smudge '{touch}; cat'",
            f"git config diff.external '{touch}; true'",
            f"git config --global filter.gpwn.clean '{touch}; cat'",
            "printf '* filter=pwn\\n*.py filter=gpwn diff=pwn\\n' > .gitattributes",
            f"git config diff.pwn.textconv '{touch}; cat'",
            f"printf '#!/bin/sh\\n{touch}\\n' "
            f'> "$(git rev-parse --git-common-dir)/hooks/{where}"',
            f'chmod +x "$(git rev-parse --git-common-dir)/hooks/{where}"',
        ]
    )


def test_config_and_hooks_planted_by_the_agent_are_undone(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODEGEN_SANDBOX", "off")  # the layer below the sandbox (test_sandbox.py)
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    config_before = (sample_repo.path / ".git" / "config").read_bytes()
    hooks_before = common_hooks(sample_repo)
    redirect = (
        "git init -q --bare evil.git && git config --file evil.git/config "
        f"filter.pwn.clean '{marker}' && printf 'gitdir: evil.git\\n' > .git"
    )
    model_env.add(
        Reply(tool_calls=[call("run_command", command=_plant(marker, where="post-commit"))]),
        Reply(tool_calls=[call("run_command", command=redirect), FIX]),
        Reply("Done."),
    )
    # no proof: what the commands plant is undone when each ends, before any git of ours; the
    # proof's git meets what is left after the round's, as the commit's does
    sample_repo.proof = False
    spec = sample_repo.write_spec(validation=QUICK_GATE)  # nor is the gate's verdict

    code, output, out = run_cli(sample_repo, spec)

    assert code == 0, output
    assert not marker.exists(), "our own git ran a command the agent planted"
    assert (sample_repo.path / ".git" / "config").read_bytes() == config_before
    assert common_hooks(sample_repo) == hooks_before
    refused = {Path(r["path"]).name for r in refusals(out) if r["tool"] == "run_command"}
    assert {"config", "post-commit", ".git", ".gitconfig"} <= refused
    _control_planted_config_would_run(sample_repo, marker)


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_config_and_hooks_planted_by_model_written_tests_are_undone(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    tmp_path: Path,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The repository's test command runs code the model wrote (a conftest.py): it plants
    the same things while validation runs; our commit and diff must still run nothing."""
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    hooks_before = common_hooks(sample_repo)
    conftest = (
        f"import subprocess\nsubprocess.run({_plant(marker, where='pre-push')!r}, shell=True)\n"
    )
    model_env.add(Reply(tool_calls=[call("write_file", path="conftest.py", content=conftest), FIX]))
    spec = proof_spec(sample_repo)  # the proof's git, and the test code run again there

    code, output, out = run_cli(sample_repo, spec)

    assert code == 0, output
    assert not marker.exists(), "our own git ran a command a test planted"
    assert common_hooks(sample_repo) == hooks_before
    assert "filter.pwn" not in sample_repo.git("config", "--list")
    report = json.loads((out / "report.json").read_text())
    assert report["commit"] and "conftest.py" in report["files_changed"]
    _control_planted_config_would_run(sample_repo, marker)


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_a_worktree_git_file_a_command_redirects_is_put_back(
    sample_repo: SampleRepo,
    model_env: ScriptedModelServer,
    tmp_path: Path,
    sandbox: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under Landlock the worktree's `.git` file is writable (SECURITY.md, guarantee 13's
    table, row "git"): a confined command can point it at a git directory of its own, whose
    config names a filter. The git guard puts it back before our git runs, and lists it; under
    bubblewrap the file is read-only and the write fails."""
    monkeypatch.setenv("CODEGEN_SANDBOX", sandbox)
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    redirect = (
        f"git init -q evil && git config --file evil/.git/config filter.pwn.clean "
        f"'touch {marker}; cat' && printf '* filter=pwn\\n' > .gitattributes && "
        "printf 'gitdir: evil/.git\\n' > .git && echo REDIRECTED"
    )
    model_env.add(Reply(tool_calls=[call("run_command", command=redirect), FIX]), Reply("Done."))

    # no proof: the guard puts the `.git` file back when the command ends, before any git of
    # ours; the proof's git meets what is left after the round's, as the commit's does; nor is
    # the gate's verdict the subject: a grep of the fixed line
    sample_repo.proof = False
    code, output, out = run_cli(sample_repo, sample_repo.write_spec(validation=QUICK_GATE))

    assert code == 0, output
    shown = tool_results(model_env, last_step=True)[0]
    redirected = {Path(r["path"]).name for r in refusals(out) if r["tool"] == "run_command"}
    if sandbox == "landlock":  # the gap: the write went through, and was undone
        assert "REDIRECTED" in shown and ".git" in redirected, (shown, redirected)
    else:
        assert "REDIRECTED" not in shown and ".git" not in redirected, (shown, redirected)
    assert not marker.exists(), "our own git ran a filter of the redirected git directory"
    report = json.loads((out / "report.json").read_text())
    assert report["commit"] and VERSION in report["files_changed"]
    # control: in a plain worktree the same command does redirect git, and its filter runs
    plain = tmp_path / "plain"
    sample_repo.git("worktree", "add", "-q", str(plain))
    subprocess.run(["/bin/sh", "-c", redirect], cwd=plain, check=True, capture_output=True)
    (plain / "README.md").write_text("changed\n")
    subprocess.run(["git", "add", "README.md"], cwd=plain, check=True, capture_output=True)
    assert marker.exists()


def _control_planted_config_would_run(repo: SampleRepo, marker: Path) -> None:
    """The same planted filter, left in place, does run on `git add`: the attack is real."""
    repo.git("config", "filter.pwn.clean", f"touch {marker}; cat")
    (repo.path / ".gitattributes").write_text("* filter=pwn\n")
    repo.git("add", ".gitattributes")
    assert marker.exists()
