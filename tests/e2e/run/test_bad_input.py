"""Bad input anywhere ends with a clear message naming the file, field or
key, exit 2, and nothing left behind; never a traceback. Each hostile input is paired with a
control: the same step without codegen-ci (or the intact input) shows what it would do."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from action_env import ActionWorld, open_world
from click.testing import CliRunner
from sample_repo import FIX, QUICK_GATE, SampleRepo

from codegen_ci.cli import cli
from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer, call

DEEP = '{"path": "a.txt", "content": ' + "[" * 5_000 + "]" * 5_000 + "}"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def cli_process(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The installed entry point as a process, so a hang or a blow-up cannot hide."""
    proc = subprocess.run(
        [sys.executable, "-m", "codegen_ci", *args],
        cwd=cwd,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def leftovers(repo: SampleRepo) -> tuple[str, list[str]]:
    """The branches, and what is under .git/codegen/worktrees."""
    trees = repo.path / ".git" / "codegen" / "worktrees"
    return repo.git("branch", "--list"), sorted(p.name for p in trees.glob("*"))


# --- tool calls ------------------------------------------------------------------------------


def test_deeply_nested_tool_arguments_are_a_tool_error(
    sample_repo: SampleRepo, model_env: ScriptedModelServer
) -> None:
    # control: what a plain json.loads does with them, in an interpreter of its own (mypy,
    # run in-process by another test of this worker, raises the worker's recursion limit)
    plain = subprocess.run(
        [sys.executable, "-c", "import json, sys; json.loads(sys.stdin.read())"],
        input=DEEP,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "RecursionError" in plain.stderr, plain.stderr
    model_env.add(Reply(tool_calls=[("write_file", DEEP)]), Reply(tool_calls=[FIX]), Reply("ok"))
    out = sample_repo.tmp / "out"
    code, output = invoke(
        "run",
        str(sample_repo.write_spec(validation=QUICK_GATE)),  # the gate is not the subject
        "--repo",
        str(sample_repo.path),
        "--output-dir",
        str(out),
    )

    assert code == 0, output
    results = [m["content"] for m in model_env.requests[1]["messages"] if m["role"] == "tool"]
    assert results == ["Error: malformed JSON arguments for write_file: nested too deeply."]
    assert json.loads((out / "report.json").read_text())["status"] == "success"


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_output_dir_that_cannot_be_a_directory_leaves_nothing_behind(
    sample_repo: SampleRepo, where: str
) -> None:
    blocker = sample_repo.tmp / "a-file"
    blocker.write_text("not a directory\n")
    target = blocker if where == "file" else blocker / "out"
    spec = sample_repo.write_spec(validation={"test": ["true"]})
    before = leftovers(sample_repo)

    code, output = invoke(
        "run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(target), "--dry-run"
    )

    assert code == 2, output
    assert str(blocker) in output and "directory" in output
    assert leftovers(sample_repo) == before
    # control: a directory there works
    good = sample_repo.tmp / "out"
    assert (
        invoke(
            "run",
            str(spec),
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(good),
            "--dry-run",
        )[0]
        == 0
    )
    assert (good / "report.json").is_file()


def test_a_spec_on_dev_zero_or_a_pipe_is_read_bounded(tmp_path: Path) -> None:
    proc = cli_process("validate", "/dev/zero", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "/dev/zero" in proc.stderr + proc.stdout and "larger than" in proc.stderr + proc.stdout
    pipe = tmp_path / "spec.yaml"
    os.mkfifo(pipe)  # opening it for reading would wait for a writer forever
    proc = cli_process("run", str(pipe), "--dry-run", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "is a pipe or socket" in proc.stderr, proc.stderr


def alias_bomb(levels: int = 9) -> str:
    lines = [
        "version: 1",
        "task: explode",
        'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    lines.append(f"constraints: *l{levels - 1}")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_in_a_spec_is_refused_before_it_expands(tmp_path: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(alias_bomb())
    # control: the same file through a plain YAML load and a walk of the result does not end
    # within a second of CPU time and 1 GB
    assert_a_plain_load_does_not_finish(spec)

    for command in (["validate", str(spec)], ["run", str(spec), "--dry-run"]):
        proc = cli_process(*command, cwd=tmp_path, timeout=30)
        assert proc.returncode == 2, proc.stderr
        assert f"{spec}" in proc.stderr and "expands to more than" in proc.stderr


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def limit_memory_and_cpu() -> None:
    """1 GB and one second of CPU time (SIGXCPU, then SIGKILL a second later): a limit of
    CPU, not of wall-clock time, so a loaded machine neither makes a quick load look endless
    nor lets an endless one burn the ten seconds of CPU a wall-clock limit allowed on an idle
    one."""
    limit_memory()
    resource.setrlimit(resource.RLIMIT_CPU, (1, 2))


def assert_a_plain_load_does_not_finish(path: Path) -> None:
    """The control of an alias bomb: a plain YAML load of `path` and a walk of the result (as
    `json.dumps`) does not end within a second of CPU time and 1 GB: it fails (a
    MemoryError) or is stopped (SIGXCPU); it never prints the expanded size."""
    script = "import json, sys, yaml; print(len(json.dumps(yaml.safe_load(open(sys.argv[1])))))"
    try:
        control = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            timeout=120,  # a safety net only: the CPU limit stops it first
            preexec_fn=limit_memory_and_cpu,
        )
    except subprocess.TimeoutExpired:
        return
    assert control.returncode != 0 and not control.stdout, "the plain load expanded the bomb"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("model.request_timeout", 1e30),
        ("limits.timeout_minutes", 1e30),
        ("validation.timeout", 10**30),
        ("limits.max_steps", 10**30),
    ],
)
def test_absurd_numbers_are_schema_errors_naming_the_key(
    tmp_path: Path, key: str, value: float
) -> None:
    section, name = key.split(".")
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({"version": 1, "task": "x", section: {name: value}}))
    code, output = invoke("validate", str(spec))
    assert code == 2, output
    assert key in output and "less than or equal" in output
    spec.write_text(json.dumps({"version": 1, "task": "x", section: {name: 30}}))  # control
    assert invoke("validate", str(spec))[0] == 0


# --- resume ----------------------------------------------------------------------------------


@pytest.fixture
def failed_run(sample_repo: SampleRepo, model_env: ScriptedModelServer) -> Path:
    model_env.add(Reply("Nothing to do."))
    out = sample_repo.tmp / "failed-run"
    # what the gate finds is not the subject: a gate of exit codes
    spec = sample_repo.write_spec(validation=QUICK_GATE, limits={"max_iterations": 1})
    code, output = invoke(
        "run", str(spec), "--repo", str(sample_repo.path), "--output-dir", str(out)
    )
    assert code == 1, output
    return out


CORRUPTIONS: dict[str, tuple[str, str]] = {
    "not json": ("run.json", "{not json"),
    "not an object": ("run.json", "[1, 2]"),
    "missing keys": ("run.json", '{"spec": {}}'),
    "bad spec": ("run.json", None),  # filled in below: a spec without its task
    "bad report": ("report.json", '{"status": 5}'),
    "bad transcript": ("transcript.jsonl", "{\n"),
    "nested": ("run.json", "[" * 100_000 + "]" * 100_000),
}


def test_a_corrupt_run_directory_is_bad_input(
    failed_run: Path, model_env: ScriptedModelServer
) -> None:
    """Each corruption in a copy of one failed run's directory (one run for every case, each
    case resumed and judged on its own, a failure naming it); then the control."""
    wrong: dict[str, str] = {}
    for case, (name, text) in CORRUPTIONS.items():
        broken = failed_run.parent / f"broken-{uuid.uuid4().hex[:6]}"
        shutil.copytree(failed_run, broken)
        if text is None:
            state = json.loads((broken / "run.json").read_text())
            del state["spec"]["task"]
            text = json.dumps(state)
        (broken / name).write_text(text)

        code, output = invoke("resume", str(broken))

        if code != 2 or f"{broken / name}" not in output:
            wrong[case] = f"exit {code}: {output}"
    assert wrong == {}
    # control: the intact directory resumes (and fails again: the model does nothing), after
    # every broken copy's resume was refused
    model_env.add(Reply("Still nothing."))
    assert invoke("resume", str(failed_run))[0] == 1


# --- event payloads, through `codegen-ci action` ---------------------------------------------


@pytest.fixture
def world(sample_repo: SampleRepo) -> Iterator[ActionWorld]:
    """What the gate finds is no test's subject here (the malformed events stop before any
    command, the control only has to run): `QUICK_GATE`'s check of the fixed line, decided by
    its exit code (`quick`), no pytest starts."""
    with open_world(sample_repo, reruns=0, quick=True) as world:
        world.github.add_issue(
            "Reset patch in bump_minor", "bump_minor must reset the patch", "alice"
        )
        yield world


def _set(payload: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    target = payload
    for key in parents:
        target = target[key]
    target[last] = value
    return payload


@pytest.mark.parametrize(
    ("event", "field", "value"),
    [
        ("issues", "issue.number", "abc"),
        ("issue_comment", "comment.body", 5),
        ("issue_comment", "comment.id", "zz"),
        ("issue_comment", "issue.number", None),
        ("workflow_dispatch", "inputs", "task=do it"),
    ],
)
def test_malformed_event_fields_are_bad_input_with_outputs(
    world: ActionWorld, event: str, field: str, value: Any
) -> None:
    payload = {
        "issues": lambda: world.issue_labeled(1),
        "issue_comment": lambda: world.comment(1, "/codegen fix it"),
        "workflow_dispatch": lambda: world.dispatch("fix it"),
    }[event]()
    refs = world.origin_refs()
    result = world.run(event, _set(payload, field, value))

    assert result.code == 2, result.log
    assert "Traceback" not in result.stderr
    assert "::error title=codegen-ci::event payload" in result.stdout
    assert field in result.stdout
    assert result.outputs["status"] == "error" and result.outputs["pr-url"] == ""
    assert world.model.requests == [] and world.origin_refs() == refs
    assert "codegen" not in world.sample.git("branch", "--list")


def test_bad_input_after_the_status_comment_finalises_it(world: ActionWorld) -> None:
    world.sample.commit({".codegen.yml": "version: 1\nlimits: {max_iterations: lots}\n"})
    world.sample.git("push", "-q", "origin", "main")

    result = world.run("issues", world.issue_labeled(1))

    assert result.code == 2, result.log
    assert result.outputs["status"] == "error"
    (status,) = [c.body for c in world.github.comments.values() if "codegen-ci:status" in c.body]
    assert "stopped with an error" in status and "limits.max_iterations" in status
    assert world.model.requests == []


def test_control_well_formed_events_run(world: ActionWorld) -> None:
    world.model.add(Reply(tool_calls=[call("read_file", path="README.md")]), Reply("Done."))
    result = world.run("issues", world.issue_labeled(1), **{"max-iterations": "1"})
    assert result.code in (0, 1) and result.outputs["status"] in ("success", "failed"), result.log
