"""`codegen-ci batch`: many specs, concurrently, against a scripted model over HTTP and real git.
What a batch's runs do is tested in-process (tests/commands/test_batch.py); these are the CLI's
own: the matrix and bad input on stdout/stderr with exit code 2, an interrupt by signal, and
an HTTP error from the model service giving exit code 3.

With `--concurrency 2` the runs share one scripted server and take its steps in no fixed order,
so the script is one callable that reads which spec a request belongs to from the task text.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from sample_repo import SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import (
    Hang,
    HttpError,
    Reply,
    ScriptedModelServer,
    call,
    error_body,
)

TASK = re.compile(r"Create the file (\w+\.txt)")


def create_file_step(request: dict[str, Any]) -> Reply:
    """Write the file the task names, then finish once the tool result is back."""
    messages = request["messages"]
    if messages[-1]["role"] == "tool":
        return Reply("Created the file.")
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    name = TASK.search(first_user)
    assert name, first_user
    return Reply(tool_calls=[call("write_file", path=name[1], content=f"{name[1]}\n")])


def write_specs(repo: SampleRepo, names: list[str], **overrides: Any) -> Path:
    """One spec per name under <tmp>/specs/; all share a title, so their branch names collide."""
    (repo.tmp / "specs").mkdir(exist_ok=True)
    for name in names:
        fields: dict[str, Any] = {
            "title": "Add a file",
            "task": f"Create the file {name}.txt with its own name as content.",
            "context": [],
            "validation": {"test": [f"test -f {name}.txt"], "timeout": 60},
            "limits": {"max_iterations": 2},
        }
        repo.write_spec(f"specs/{name}.yaml", **{**fields, **overrides.get(name, {})})
    return repo.tmp / "specs"


def batch(repo: SampleRepo, *args: str) -> Result:
    return CliRunner().invoke(cli, ["batch", *args, "--repo", str(repo.path)])


def branches(repo: SampleRepo) -> list[str]:
    return repo.git("branch", "--list", "codegen/*", "--format=%(refname:short)").split()


def test_matrix_lists_the_specs_as_compact_json_and_runs_nothing(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    specs_dir = sample_repo.path / "specs"
    specs_dir.mkdir()
    for name in ("b-second", "a-first"):
        (specs_dir / f"{name}.yml").write_text(f"version: 1\ntitle: Do {name}\ntask: {name}\n")
    (specs_dir / "c-third.yaml").write_text("version: 1\ntask: Third task\n")
    (specs_dir / ".codegen.yml").write_text("version: 1\n")

    result = CliRunner().invoke(
        cli, ["batch", str(specs_dir), "--matrix", "--repo", str(sample_repo.path)]
    )

    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) == 1
    matrix = json.loads(result.stdout)
    assert matrix == {
        "include": [
            {"spec": "specs/a-first.yml", "title": "Do a-first", "slug": "do-a-first"},
            {"spec": "specs/b-second.yml", "title": "Do b-second", "slug": "do-b-second"},
            {"spec": "specs/c-third.yaml", "title": "third-task", "slug": "third-task"},
        ]
    }
    assert model_env.requests == []
    assert branches(sample_repo) == []


def test_every_invalid_spec_is_reported_and_nothing_runs(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    specs = write_specs(sample_repo, ["alpha"])
    (specs / "typo.yaml").write_text("version: 1\ntask: x\nlimits:\n  max_iterashuns: 2\n")
    (specs / "empty.yaml").write_text("version: 1\ntitle: no task\n")

    result = batch(sample_repo, str(specs))

    assert result.exit_code == 2, result.output
    assert "typo.yaml:4: limits.max_iterashuns: unknown key" in result.output
    assert "did you mean 'max_iterations'" in result.output
    assert "empty.yaml" in result.output and "task" in result.output
    assert model_env.requests == []
    assert branches(sample_repo) == []


def test_an_argument_that_matches_nothing_is_named(sample_repo: SampleRepo) -> None:
    specs = write_specs(sample_repo, ["alpha"])

    result = batch(sample_repo, str(specs), str(sample_repo.tmp / "nothing-*.yaml"), "--matrix")

    assert result.exit_code == 2
    assert "nothing-*.yaml" in result.output
    assert result.stdout == ""


def test_an_interrupt_stops_the_running_spec_and_skips_the_rest(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    model_env.add(Hang(1.0, Reply("Thinking done.")))
    specs = write_specs(sample_repo, ["alpha", "beta"])
    out = sample_repo.tmp / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codegen_ci",
            "batch",
            str(specs),
            "--concurrency",
            "1",
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not model_env.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)

    assert proc.returncode == 3, output
    alpha = json.loads((out / "alpha" / "report.json").read_text())
    assert (alpha["status"], alpha["reason"]) == ("error", "interrupted")
    assert Path(alpha["worktree"]).is_dir()  # kept for `codegen-ci resume`
    assert not (out / "beta").exists()
    assert re.search(r"^beta\s+error: not started", output, re.M)
    assert len(model_env.requests) == 1


def test_an_infrastructure_error_exits_3_unless_a_spec_failed(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    def step(request: dict[str, Any]) -> Reply | HttpError:
        first_user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if "beta.txt" in first_user:
            return HttpError(401, error_body("invalid api key", kind="authentication_error"))
        return create_file_step(request)

    model_env.add(*[step] * 20)
    failing = {"validation": {"test": ["false"]}, "limits": {"max_iterations": 1}}
    specs = write_specs(sample_repo, ["alpha", "beta", "gamma"], gamma=failing)
    out = sample_repo.tmp / "out"

    infra_only = batch(
        sample_repo, str(specs / "alpha.yaml"), str(specs / "beta.yaml"), "--output-dir", str(out)
    )
    assert infra_only.exit_code == 3, infra_only.output
    beta = json.loads((out / "beta" / "report.json").read_text())
    assert (beta["status"], beta["reason"]) == ("error", "error")
    assert "invalid api key" in beta["error"]
    assert re.search(r"^alpha\s+success", infra_only.stdout, re.M)

    # the same infrastructure error beside a spec that failed (alpha's success is the first
    # batch's: a run it need not make again)
    with_a_failure = batch(
        sample_repo,
        str(specs / "beta.yaml"),
        str(specs / "gamma.yaml"),
        "--output-dir",
        str(sample_repo.tmp / "o2"),
    )
    assert with_a_failure.exit_code == 1, with_a_failure.output
